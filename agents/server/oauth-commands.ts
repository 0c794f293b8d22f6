/**
 * `svc oauth clients list|bind|unbind`: the operator binds a dynamically registered OAuth
 * client to the principal it acts as (agents/oauth/clients-command.ts does the work; loaded
 * only when the command runs).
 */
import type { Command } from 'commander';
import { plainOption } from '../../shared/cli-options.js';
import { loadConfigOrExit } from '../../shared/config.js';
import type { ClientsAction } from '../oauth/clients-command.js';

async function run(a: ClientsAction, opts: { schema?: string }): Promise<void> {
  const config = loadConfigOrExit();
  if (opts.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(opts.schema)) {
    process.stderr.write('--schema must be a lower-case SQL identifier ([a-z_][a-z0-9_]*)\n');
    process.exitCode = 2;
    return;
  }
  const { runClientsCommand } = await import('../oauth/clients-command.js');
  process.exitCode = await runClientsCommand(config, a, {
    out: process.stdout,
    err: process.stderr,
    ...(opts.schema ? { schema: opts.schema } : {}),
  });
}

export function registerOAuthCommands(program: Command): void {
  const oauth = program
    .command('oauth')
    .description("The seller's OAuth server: who registered clients act as");
  const clients = oauth
    .command('clients')
    .description(
      'Registered OAuth clients act as nobody until the operator binds each to one principal (audited)',
    );
  const schema = plainOption('--schema <name>', "the agents' database schema", 'agents');
  clients
    .command('list')
    .description('List registered clients, their binding, and when unbound ones expire')
    .addOption(plainOption('--agent <agent>', 'only this agent: sales, creative or signals', 'all'))
    .addOption(plainOption('--json', 'print JSON', 'off'))
    .addOption(schema)
    .action(async (opts: { agent?: string; json?: boolean; schema?: string }) =>
      run(
        { action: 'list', ...(opts.agent ? { agent: opts.agent } : {}), json: !!opts.json },
        opts,
      ),
    );
  clients
    .command('bind')
    .description('Bind a client to a principal of the same agent (its tokens then act as it)')
    .argument('<agent>', 'sales, creative or signals')
    .argument('<client-id>', 'the client_id registration answered')
    .argument('<principal-id>', 'an onboarded principal of that agent')
    .addOption(plainOption('--schema <name>', "the agents' database schema", 'agents'))
    .action(
      async (agent: string, clientId: string, principalId: string, opts: { schema?: string }) =>
        run({ action: 'bind', agent, clientId, principalId }, opts),
    );
  clients
    .command('unbind')
    .description('Unbind a client: its tokens stop working at once')
    .argument('<agent>', 'sales, creative or signals')
    .argument('<client-id>', 'the bound client')
    .addOption(plainOption('--schema <name>', "the agents' database schema", 'agents'))
    .action(async (agent: string, clientId: string, opts: { schema?: string }) =>
      run({ action: 'unbind', agent, clientId }, opts),
    );
}
