/**
 * The `svc` command line: one program, a subcommand per runnable part. Each part
 * registers its commands from its own module so this file stays a table of contents.
 */
import { Command, CommanderError } from 'commander';
import { describeVariables } from '../shared/config.js';
import { registerCommands } from './commands.js';

export function buildProgram(): Command {
  const program = new Command('svc')
    .description('Webhook delivery and receiver infrastructure for the advertising-agent protocol')
    .version('0.1.0')
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
