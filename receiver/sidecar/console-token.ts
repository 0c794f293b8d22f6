/**
 * Where `svc receiver` takes its operator console token from (issue 21 item 7): the
 * `SVC_RECEIVER_CONSOLE_TOKEN` variable or a token file (`--console-token-file`, or
 * `SVC_RECEIVER_CONSOLE_TOKEN_FILE`), so the token need not sit on the command line, where
 * every local user reads it in `/proc/<pid>/cmdline` (a process's environment is readable by
 * its own user only). `--console-token` still works, with a warning. None given: the console
 * uses `receiver_console` of credentials.json, as before.
 *
 * The file is opened once and checked on that descriptor (no swap between check and read): a
 * regular file, no permission bit for group or others (the token is a password, as for an
 * ssh key), at most 4 KiB, one line of 16+ characters after its trailing newline. Every
 * refusal names the option and never echoes a token.
 */
import { open } from 'node:fs/promises';
import type { Config } from '../../shared/config.js';
import { UsageError, type Flags } from './flags.js';

export const MIN_CONSOLE_TOKEN = 16;
const MAX_FILE_BYTES = 4096;

export interface ConsoleTokenSources {
  /** `--console-token` (visible in the process list). */
  flag?: string;
  /** `SVC_RECEIVER_CONSOLE_TOKEN`. */
  variable?: string;
  /** The token file, and the name it was given by (`--console-token-file` or its variable). */
  file?: { path: string; option: string };
}

export interface ConsoleToken {
  token: string;
  source: 'flag' | 'variable' | 'file';
}

function checked(token: string, option: string): string {
  if (token.length < MIN_CONSOLE_TOKEN) {
    throw new UsageError(`${option}: the token must have at least ${MIN_CONSOLE_TOKEN} characters`);
  }
  // eslint-disable-next-line no-control-regex -- control characters are what it refuses
  if (/[\s\u0000-\u001f\u007f]/.test(token)) {
    throw new UsageError(`${option}: the token must be one word (no spaces or control characters)`);
  }
  return token;
}

async function readTokenFile(path: string, option: string): Promise<string> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new UsageError(`${option}: ${path} cannot be read (${code})`);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new UsageError(`${option}: ${path} is not a regular file`);
    if ((st.mode & 0o077) !== 0) {
      const mode = (st.mode & 0o777).toString(8).padStart(4, '0');
      throw new UsageError(
        `${option}: ${path} is open to group or others (mode ${mode}); ` +
          `only its owner may read it: chmod 600 ${path}`,
      );
    }
    if (st.size > MAX_FILE_BYTES) {
      throw new UsageError(`${option}: ${path} is larger than ${MAX_FILE_BYTES} bytes`);
    }
    const text = (await handle.readFile({ encoding: 'utf8' })).replace(/\r?\n$/, '');
    if (text.length === 0) throw new UsageError(`${option}: ${path} is empty`);
    return checked(text, option);
  } finally {
    await handle.close();
  }
}

/** The console token and where it came from, or null for credentials.json. */
export async function resolveConsoleToken(s: ConsoleTokenSources): Promise<ConsoleToken | null> {
  const given = [
    s.flag !== undefined ? '--console-token' : null,
    s.variable !== undefined ? 'SVC_RECEIVER_CONSOLE_TOKEN' : null,
    s.file ? s.file.option : null,
  ].filter((x): x is string => x !== null);
  if (given.length > 1) {
    throw new UsageError(
      `the console token is given ${given.length} ways (${given.join(', ')}): give one`,
    );
  }
  if (s.flag !== undefined) return { token: checked(s.flag, '--console-token'), source: 'flag' };
  if (s.variable !== undefined) {
    return { token: checked(s.variable, 'SVC_RECEIVER_CONSOLE_TOKEN'), source: 'variable' };
  }
  if (s.file) return { token: await readTokenFile(s.file.path, s.file.option), source: 'file' };
  return null;
}

/** The sources as `svc receiver` was given them (a flag wins over its variable). */
export function consoleTokenSources(
  flags: Pick<Flags, 'consoleToken' | 'consoleTokenFile'>,
  config: Pick<Config, 'SVC_RECEIVER_CONSOLE_TOKEN' | 'SVC_RECEIVER_CONSOLE_TOKEN_FILE'>,
): ConsoleTokenSources {
  const path = flags.consoleTokenFile ?? config.SVC_RECEIVER_CONSOLE_TOKEN_FILE;
  const option =
    flags.consoleTokenFile !== undefined
      ? '--console-token-file'
      : 'SVC_RECEIVER_CONSOLE_TOKEN_FILE';
  return {
    ...(flags.consoleToken !== undefined ? { flag: flags.consoleToken } : {}),
    ...(config.SVC_RECEIVER_CONSOLE_TOKEN !== undefined
      ? { variable: config.SVC_RECEIVER_CONSOLE_TOKEN }
      : {}),
    ...(path !== undefined ? { file: { path, option } } : {}),
  };
}
