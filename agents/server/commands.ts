/**
 * The agents' subcommands: `start` (the whole seller side), `call` (run a task against
 * any agent), `mcp` (the `call_<brand>_agent` tool over stdio) and `approve` (operator
 * approval or rejection of a pending media buy). Each loads its implementation only when it
 * runs, so `svc --help` stays fast.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { envOption, flagsToEnv, plainOption, type VariableName } from '../../shared/cli-options.js';
import { brandProfile } from '../../shared/brand.js';
import { loadConfigOrExit } from '../../shared/config.js';
import { registerOAuthCommands } from './oauth-commands.js';

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

export function registerAgentCommands(program: Command): void {
  registerOAuthCommands(program);
  registerStartCommand(program);
  registerCallCommand(program);
  registerMcpCommand(program);
  registerApproveCommand(program);
}

/** `svc start`: the whole seller side (agents/server/start.ts). */
function registerStartCommand(program: Command): void {
  const startFlags: Record<string, VariableName> = {
    dataDir: 'SVC_DATA_DIR',
    host: 'SVC_HTTP_HOST',
    salesPort: 'SVC_SALES_PORT',
    creativePort: 'SVC_CREATIVE_PORT',
    signalsPort: 'SVC_SIGNALS_PORT',
    allowHosts: 'SVC_SENDER_ALLOW_HOSTS',
    approval: 'SVC_AGENTS_APPROVAL',
    clockSpeed: 'SVC_AGENTS_CLOCK_SPEED',
    queuePrefix: 'SVC_QUEUE_PREFIX',
    wait: 'SVC_SERVICE_WAIT_SECONDS',
    oauthOpenRegistration: 'SVC_OAUTH_OPEN_REGISTRATION',
    oauthDevLogin: 'SVC_OAUTH_DEV_LOGIN',
  };
  program
    .command('start')
    .description(
      'Start the sales, creative and signal agents with the sender; with DATABASE_URL unset, on an embedded PostgreSQL',
    )
    .addOption(
      envOption('--data-dir <dir>', 'keys, embedded PostgreSQL, credentials', 'SVC_DATA_DIR'),
    )
    .addOption(envOption('--host <ip>', 'address the agents listen on', 'SVC_HTTP_HOST'))
    .addOption(envOption('--sales-port <port>', 'sales agent port (0: any)', 'SVC_SALES_PORT'))
    .addOption(envOption('--creative-port <port>', 'creative agent port', 'SVC_CREATIVE_PORT'))
    .addOption(envOption('--signals-port <port>', 'signal agent port', 'SVC_SIGNALS_PORT'))
    .addOption(
      envOption(
        '--allow-hosts <hosts>',
        'hosts webhooks may reach over http (local testing)',
        'SVC_SENDER_ALLOW_HOSTS',
      ),
    )
    .addOption(
      envOption(
        '--approval <policy>',
        'pending buys: manual, never or seconds',
        'SVC_AGENTS_APPROVAL',
      ),
    )
    .addOption(
      envOption('--clock-speed <n>', 'virtual seconds per second', 'SVC_AGENTS_CLOCK_SPEED'),
    )
    .addOption(envOption('--queue-prefix <prefix>', 'BullMQ key prefix', 'SVC_QUEUE_PREFIX'))
    .addOption(
      envOption('--wait <seconds>', 'wait for PostgreSQL and Redis', 'SVC_SERVICE_WAIT_SECONDS'),
    )
    .addOption(
      envOption(
        '--oauth-open-registration',
        'let anyone register OAuth clients without the initial access token (clients still act as nobody until bound)',
        'SVC_OAUTH_OPEN_REGISTRATION',
      ),
    )
    .addOption(
      envOption(
        '--oauth-dev-login',
        "serve the OAuth development sign-in page (loopback only; the principal's API key or a one-time code printed here)",
        'SVC_OAUTH_DEV_LOGIN',
      ),
    )
    .addHelpText(
      'after',
      '\nDATABASE_URL and REDIS_URL choose the backing services (svc --help lists every variable).\n' +
        'Demo credentials go to <data dir>/credentials.json (mode 0600), never to the terminal.',
    )
    .action(async (opts: Record<string, unknown>) => {
      flagsToEnv(opts, startFlags);
      const { runStart } = await import('./start.js');
      await runStart(loadConfigOrExit());
    });
}

/** `svc call`: one task against any agent, over MCP or A2A. */
function registerCallCommand(program: Command): void {
  program
    .command('call')
    .description(
      'Run a task against an agent over MCP (default) or A2A and print the answer; --list shows its tasks',
    )
    .argument('<agent-url>', 'the agent origin, or its /mcp or /a2a endpoint')
    .argument('[task]', 'the task name, e.g. get_products (--list shows them)')
    .argument('[json]', 'the task parameters as a JSON object', parseJsonObject, {})
    .addOption(plainOption('--list', 'list the tasks and their required fields', 'off'))
    .addOption(plainOption('--a2a', 'use A2A JSON-RPC instead of MCP', 'off'))
    .addOption(plainOption('--a2a-version <v>', 'A2A protocol version: 1.0 or 0.3', '1.0'))
    .addOption(plainOption('--api-key <key>', 'X-API-Key credential', 'none'))
    .addOption(plainOption('--token <jwt>', 'bearer token credential', 'none'))
    .addOption(
      envOption(
        '--as <principal>',
        "use this demo principal's API key from <data dir>/credentials.json, e.g. demo-buyer",
        'SVC_DATA_DIR',
      ),
    )
    .addOption(plainOption('--dry-run', 'send X-Dry-Run: true', 'off'))
    .action(
      async (
        agentUrl: string,
        task: string | undefined,
        params: Record<string, unknown>,
        opts: {
          list?: boolean;
          a2a?: boolean;
          a2aVersion?: string;
          apiKey?: string;
          token?: string;
          as?: string;
          dryRun?: boolean;
        },
      ) => {
        const version = opts.a2aVersion ?? '1.0';
        if (version !== '1.0' && version !== '0.3') {
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
        const config = loadConfigOrExit();
        const { runCall } = await import('../client/call-command.js');
        process.exitCode = await runCall({
          agentUrl,
          params,
          dataDir: config.SVC_DATA_DIR,
          out: process.stdout,
          err: process.stderr,
          ...(task !== undefined ? { task } : {}),
          ...opts,
          a2aVersion: version,
        });
      },
    );
}

/** `svc mcp`: the call_<brand>_agent tool over stdio. */
function registerMcpCommand(program: Command): void {
  program
    .command('mcp')
    .description(`Serve the call_<brand>_agent tool over MCP stdio (for MCP hosts)`)
    .action(async () => {
      const config = loadConfigOrExit();
      const { serveCallAgentStdio } = await import('../client/stdio-server.js');
      await serveCallAgentStdio(brandProfile(config.SVC_BRAND));
    });
}

/** `svc approve`: the operator's decision on a pending buy (agents/server/operator.ts). */
function registerApproveCommand(program: Command): void {
  program
    .command('approve')
    .description('Approve (or with --reject, reject) a pending media buy as the seller operator')
    .argument('<id>', "the media buy's id, or the task_id create_media_buy answered with")
    .option('--reject [reason]', 'reject instead of approving')
    .action(async (id: string, opts: { reject?: string | boolean }) => {
      const config = loadConfigOrExit();
      const { operatorAction } = await import('./operator.js');
      try {
        const r = await operatorAction(config, id, opts.reject);
        process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
      } catch (err) {
        const e = err as { code?: string; message?: string };
        process.stderr.write(`${e.code ? `${e.code}: ` : ''}${e.message}\n`);
        process.exitCode = 1;
      }
    });
}
