/** The subcommand table. Each runnable part adds one line here. */
import type { Command } from 'commander';
import { registerReceiverCommand } from '../receiver/sidecar/command.js';
import { registerSenderCommands } from '../sender/cli/commands.js';

export function registerCommands(program: Command): void {
  registerReceiverCommand(program);
  registerSenderCommands(program);
  program
    .command('start')
    .description('Start the service with embedded defaults')
    .action(() => {
      process.stdout.write('svc start: nothing to start yet\n');
    });
}
