/**
 * One help format for every option: what it does, then `(env VARIABLE, default VALUE)`, the
 * default read from shared/config.ts so help and behaviour cannot disagree. A flag wins over
 * its variable: `flagsToEnv` writes the given flags into the environment the command's
 * configuration is then read from, so one validation path serves both. It lives in shared/
 * because every part declares its own commands with it: the CLI table (cli/) imports the
 * parts, never the other way round.
 */
import { Option } from 'commander';
import { defaultOf, describeVariables, type Config } from './config.js';

export type VariableName = keyof Config;

export function envOption(flags: string, description: string, variable: VariableName): Option {
  return new Option(flags, `${description} (env ${variable}, default ${defaultOf(variable)})`);
}

/** An option with no variable: its default still shown the same way. */
export function plainOption(flags: string, description: string, shownDefault: string): Option {
  return new Option(flags, `${description} (default ${shownDefault})`);
}

export function flagsToEnv(
  opts: Record<string, unknown>,
  map: Record<string, VariableName>,
  env: NodeJS.ProcessEnv = process.env,
): void {
  for (const [key, variable] of Object.entries(map)) {
    const v = opts[key];
    if (v !== undefined && v !== false) env[variable] = v === true ? '1' : String(v);
  }
}

const KNOWN = new Set<string>(describeVariables().map((v) => v.name));

/**
 * The help text of any option in the one format, whatever form its author used ("(env X)",
 * "(default: X)", commander's own default): `what it does (env X, default Y)`. Installed
 * for every command by `svc`'s configureHelp, so a new option cannot drift.
 */
export function uniformOptionDescription(opt: Option): string {
  if (opt.long === '--help' || opt.long === '--version') return opt.description;
  let text = opt.description;
  let variable: string | undefined = opt.envVar;
  let shown: string | undefined;
  const tail = /\s*\((?:env ([A-Z][A-Z0-9_]+))?(?:,\s*)?(?:default:? ([^)]*))?\)\s*$/.exec(text);
  if (tail && (tail[1] || tail[2])) {
    variable ??= tail[1];
    shown = tail[2]?.trim();
    text = text.slice(0, tail.index);
  }
  const inline = /\s*\((?:env|default: )?\s*([A-Z][A-Z0-9_]{3,})(?:[^)]*)\)/.exec(text);
  if (!variable && inline && KNOWN.has(inline[1]!)) {
    variable = inline[1];
    text = text.replace(inline[0], '');
  }
  if (shown === undefined && opt.defaultValue !== undefined) {
    shown = opt.defaultValueDescription ?? String(opt.defaultValue);
  }
  if (shown === undefined && variable && KNOWN.has(variable))
    shown = defaultOf(variable as VariableName);
  if (shown === undefined) shown = opt.required || opt.optional ? 'none' : 'off';
  const choices = opt.argChoices ? `; one of ${opt.argChoices.join(', ')}` : '';
  return `${text.trim()}${choices} (${variable ? `env ${variable}, ` : ''}default ${shown})`;
}
