/** The subcommand table. Each runnable part adds one line here. */
import type { Command } from 'commander';
import { registerAgentCommands } from '../agents/server/commands.js';
import { registerSenderConformanceCommand } from '../conformance/grade-sender/register.js';
import { registerReceiverCommand } from '../receiver/sidecar/command.js';
import { registerSenderCommands } from '../sender/cli/commands.js';
import { registerReceiverConformanceCommand } from '../conformance/grade-receiver/register.js';
import { registerConsoleCommands } from '../sender/console/cli.js';
import { registerReceivedCommands } from '../receiver/console/cli.js';

export function registerCommands(program: Command): void {
  registerReceiverCommand(program);
  registerSenderCommands(program);
  registerConsoleCommands(program);
  registerReceivedCommands(program);
  const conformance = program
    .command('conformance')
    .description("Grade someone else's webhook receiver or sender, check by check");
  registerReceiverConformanceCommand(conformance);
  registerSenderConformanceCommand(conformance);
  registerAgentCommands(program);
}
