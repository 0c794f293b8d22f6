/**
 * The agents' subcommands: `start` (the whole seller side), `call` (run a task against
 * any agent), `mcp` (the `call_<brand>_agent` tool over stdio) and `approve` (operator
 * approval or rejection of a pending media buy).
 */
import { InvalidArgumentError, type Command } from 'commander';
import { brandProfile } from '../../shared/brand.js';
import { loadConfigOrExit, type Config } from '../../shared/config.js';
import { createLogger } from '../../shared/infra/logger.js';
import { ServiceUnavailableError } from '../../shared/infra/services.js';
import { AGENT_KINDS } from '../auth/principal.js';
import { formatDemoCredentials } from '../seed.js';

function parseJsonObject(value: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new InvalidArgumentError('not valid JSON');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new InvalidArgumentError('a JSON object is expected');
  }
  return parsed as Record<string, unknown>;
}

async function runStart(config: Config): Promise<void> {
  const logger = createLogger({ name: `${config.SVC_BRAND}-agents`, level: config.LOG_LEVEL });
  const { startAgentsService } = await import('./service.js');
  let service;
  try {
    service = await startAgentsService({ config, logger });
  } catch (err) {
    if (
      err instanceof ServiceUnavailableError ||
      (err as NodeJS.ErrnoException).code === 'EADDRINUSE'
    ) {
      process.stderr.write(`${config.SVC_BRAND} start: ${(err as Error).message}\n`);
      process.exitCode = 1;
      return;
    }
    throw err;
  }
  const out: string[] = [`${service.profile.brand} agents are up`, ''];
  for (const agent of AGENT_KINDS) {
    const u = service.urls[agent];
    out.push(
      `${agent.padEnd(8)} ${u}  (MCP ${u}/mcp, A2A ${u}/a2a, card ${u}/.well-known/agent-card.json)`,
    );
  }
  out.push(
    '',
    `keys     ${service.urls.sales}/.well-known/jwks.json, ${service.urls.sales}/.well-known/brand.json`,
  );
  if (service.console)
    out.push(
      `console  ${service.console.url}  (token: console.token in ${service.console.credentialsFile})`,
    );
  if (service.oauth)
    out.push(`oauth    ${service.oauth.issuer('sales')}/register (and on every agent origin)`);
  out.push('', 'demo credentials:', formatDemoCredentials(service.credentials), '');
  out.push('bearer tokens of demo-buyer (30 days):');
  for (const c of service.credentials.filter((x) => x.principal_id === 'demo-buyer')) {
    out.push(
      `${c.agent.padEnd(8)} ${c.principal_id.padEnd(13)} Authorization: Bearer ${c.bearer_token}`,
    );
  }
  process.stdout.write(`${out.join('\n')}\n`);
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, 'stopping');
      resolve();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  await service.stop();
  process.stdout.write('stopped\n');
}

export function registerAgentCommands(program: Command): void {
  program
    .command('start')
    .description('Start the sales, creative and signal agents with the sender (embedded defaults)')
    .action(async () => {
      await runStart(loadConfigOrExit());
    });

  program
    .command('call')
    .description('Run a task against an agent over MCP (default) or A2A and print the answer')
    .argument('<agent-url>', 'the agent origin, or its /mcp or /a2a endpoint')
    .argument('<task>', 'the task name, e.g. get_products')
    .argument('[json]', 'the task parameters as a JSON object', parseJsonObject, {})
    .option('--a2a', 'use A2A JSON-RPC instead of MCP')
    .option('--a2a-version <v>', 'A2A protocol version: 1.0 or 0.3', '1.0')
    .option('--api-key <key>', 'X-API-Key credential')
    .option('--token <jwt>', 'bearer token credential')
    .option('--dry-run', 'send X-Dry-Run: true')
    .action(
      async (
        agentUrl: string,
        task: string,
        params: Record<string, unknown>,
        opts: {
          a2a?: boolean;
          a2aVersion: string;
          apiKey?: string;
          token?: string;
          dryRun?: boolean;
        },
      ) => {
        if (opts.a2aVersion !== '1.0' && opts.a2aVersion !== '0.3') {
          process.stderr.write('--a2a-version must be 1.0 or 0.3\n');
          process.exitCode = 2;
          return;
        }
        try {
          new URL(agentUrl);
        } catch {
          process.stderr.write(`not a URL: ${agentUrl}\n`);
          process.exitCode = 2;
          return;
        }
        const { callAgent } = await import('../client/agent-client.js');
        try {
          const r = await callAgent({
            agentUrl,
            task,
            params,
            transport: opts.a2a ? 'a2a' : 'mcp',
            a2aVersion: opts.a2aVersion,
            ...(opts.apiKey ? { apiKey: opts.apiKey } : {}),
            ...(opts.token ? { token: opts.token } : {}),
            ...(opts.dryRun ? { dryRun: true } : {}),
          });
          process.stdout.write(`${JSON.stringify(r.body, null, 2)}\n`);
          if (!r.ok) process.exitCode = 1;
        } catch (err) {
          process.stderr.write(`call failed: ${(err as Error).message}\n`);
          process.exitCode = 1;
        }
      },
    );

  program
    .command('mcp')
    .description(`Serve the call_<brand>_agent tool over MCP stdio (for MCP hosts)`)
    .action(async () => {
      const config = loadConfigOrExit();
      const { serveCallAgentStdio } = await import('../client/stdio-server.js');
      await serveCallAgentStdio(brandProfile(config.SVC_BRAND));
    });

  program
    .command('approve')
    .description('Approve (or with --reject, reject) a pending media buy as the seller operator')
    .argument('<media-buy-id>')
    .option('--reject [reason]', 'reject instead of approving')
    .action(async (mediaBuyId: string, opts: { reject?: string | boolean }) => {
      const config = loadConfigOrExit();
      const { operatorAction } = await import('./operator.js');
      try {
        const r = await operatorAction(config, mediaBuyId, opts.reject);
        process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
      } catch (err) {
        const e = err as { code?: string; message?: string };
        process.stderr.write(`${e.code ? `${e.code}: ` : ''}${e.message}\n`);
        process.exitCode = 1;
      }
    });
}
