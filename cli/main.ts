/**
 * The `svc` command line: one program, a subcommand per runnable part. Each part
 * registers its commands from its own module so this file stays a table of contents.
 */
import { createRequire } from 'node:module';
import { Command, CommanderError } from 'commander';
import { describeVariables } from '../shared/config.js';
import { registerCommands } from './commands.js';

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
    .addHelpText(
      'after',
      '\nEnvironment:\n' +
        describeVariables()
          .map((v) => `  ${v.name.padEnd(34)} ${v.accepts}`)
          .join('\n'),
    );
  registerCommands(program);
  return program;
}

export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  program.exitOverride();
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
