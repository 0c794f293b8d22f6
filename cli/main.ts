/**
 * The `svc` command line: one program, a subcommand per runnable part. Each part
 * registers its commands from its own module so this file stays a table of contents.
 */
import { createRequire } from 'node:module';
import { Command, CommanderError } from 'commander';
import { describeVariables } from '../shared/config.js';
import { nearestNames } from '../shared/text/nearest.js';
import { registerCommands } from './commands.js';
import { uniformOptionDescription } from '../shared/cli-options.js';

function environmentHelp(): string {
  const vars = describeVariables();
  const width = Math.max(...vars.map((v) => v.name.length)) + 2;
  return (
    '\nEnvironment (every command reads the same; a flag wins over its variable):\n' +
    vars.map((v) => `  ${v.name.padEnd(width)}${v.accepts} (default ${v.default})`).join('\n')
  );
}

/** package.json's version: beside cli/ in a checkout, two levels up from dist/cli/ when built. */
export function packageVersion(): string {
  const require = createRequire(import.meta.url);
  for (const path of ['../package.json', '../../package.json']) {
    try {
      const manifest = require(path) as { name?: string; version?: string };
      if (manifest.name === 'svc-webhooks' && manifest.version) return manifest.version;
    } catch {
      // not at this level
    }
  }
  return 'unknown';
}

export function buildProgram(): Command {
  const program = new Command('svc')
    .description('Webhook delivery and receiver infrastructure for the advertising-agent protocol')
    .version(packageVersion())
    .showHelpAfterError()
    // One option format everywhere (inherited by every subcommand added below).
    .configureHelp({ optionDescription: (opt) => uniformOptionDescription(opt) })
    .addHelpText('after', environmentHelp());
  registerCommands(program);
  return program;
}

/**
 * An unknown (sub)command is an error naming the nearest ones, also with --help (commander
 * would print the parent's help and exit 0). Returns the message, or null when the path is fine.
 */
export function unknownCommand(program: Command, args: string[]): string | null {
  let cmd = program;
  const path: string[] = [cmd.name()];
  for (const arg of args) {
    if (arg.startsWith('-')) return null;
    if (cmd.commands.length === 0) return null;
    const names = cmd.commands.flatMap((c) => [c.name(), ...c.aliases()]);
    if (arg === 'help') return null;
    const next = cmd.commands.find((c) => c.name() === arg || c.aliases().includes(arg));
    if (!next) {
      const near = nearestNames(arg, names);
      return (
        `${path.join(' ')}: unknown command "${arg}"` +
        (near.length ? `; did you mean ${near.map((n) => `"${n}"`).join(' or ')}?` : '') +
        ` (${path.join(' ')} --help lists them)`
      );
    }
    cmd = next;
    path.push(arg);
  }
  return null;
}

export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  program.exitOverride();
  const unknown = unknownCommand(program, argv.slice(2));
  if (unknown) {
    process.stderr.write(`${unknown}\n`);
    process.exitCode = 2;
    return;
  }
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = err.exitCode;
      return;
    }
    process.stderr.write(`svc: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
