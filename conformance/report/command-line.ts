/**
 * What both conformance commands need from a terminal: usage errors, flag checks and the
 * interactive IO (output, errors, and a pause while the tester installs keys).
 */
import { createInterface } from 'node:readline/promises';
import { brandProfile, DEFAULT_BRAND, isBrand, type BrandProfile } from '../../shared/brand.js';
import { UsageError } from '../../shared/errors/usage.js';

/** A mistake in the command line: exit code 2 and the message, no stack. */
export { UsageError };

export interface TerminalIo {
  out: (text: string) => void;
  err: (text: string) => void;
  /** Waits for the tester (interactive runs only). */
  confirm?: (prompt: string) => Promise<void>;
}

export const terminalIo: TerminalIo = {
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
  confirm: process.stdin.isTTY
    ? async (prompt) => {
        const rl = createInterface({ input: process.stdin, output: process.stderr });
        await rl.question(prompt);
        rl.close();
      }
    : undefined,
};

export function checkUrl(value: string, flag: string): string {
  try {
    const u = new URL(value);
    if (u.protocol === 'http:' || u.protocol === 'https:') return value;
  } catch {
    // fall through
  }
  throw new UsageError(`${flag} "${value}" is not an http(s) URL`);
}

/** `--brand`, else SVC_BRAND, else the default. */
export function brandFromFlag(flag: string | undefined): BrandProfile {
  const brand = flag ?? process.env.SVC_BRAND ?? DEFAULT_BRAND;
  if (!isBrand(brand)) throw new UsageError(`--brand must be svc or adcp, not "${brand}"`);
  return brandProfile(brand);
}

/**
 * Runs a command's action and sets the exit code it returns; an error of one of the
 * `usageErrors` classes (bad flags, keys or vectors) prints as `<command>: message` and
 * exits 2, without a stack. Anything else is a bug and propagates.
 */
export async function runCommand(
  command: string,
  usageErrors: ReadonlyArray<abstract new (...args: never[]) => Error>,
  action: () => Promise<number>,
): Promise<void> {
  try {
    process.exitCode = await action();
  } catch (err) {
    if (err instanceof UsageError || usageErrors.some((E) => err instanceof E)) {
      process.stderr.write(`${command}: ${(err as Error).message}\n`);
      process.exitCode = 2;
      return;
    }
    throw err;
  }
}
