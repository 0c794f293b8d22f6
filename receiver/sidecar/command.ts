/**
 * `svc receiver`: the sidecar from the command line. Every flag has an environment twin
 * declared in shared/config.ts; a flag wins over its variable. The sidecar itself (run.ts)
 * loads only when the command runs, so `svc --help` stays fast.
 */
import type { Command } from 'commander';
import { envOption, plainOption } from '../../shared/cli-options.js';
import { ServiceUnavailableError } from '../../shared/infra/service-errors.js';

import { PortInUseError, UsageError, type Flags } from './flags.js';

export { intFlag, parseListen, PortInUseError, UsageError, type Flags } from './flags.js';

export function registerReceiverCommand(program: Command): void {
  const command = program
    .command('receiver')
    .description(
      'Run the webhook receiver sidecar: verify, deduplicate, order, then forward each event to the app or enqueue it',
    );
  targetOptions(command);
  limitOptions(command);
  consoleOptions(command);
  command
    .addHelpText(
      'after',
      '\nExactly one of --forward, --queue or --publish; --forward stdout prints each event as a\n' +
        'JSON line; --publish takes nats://, amqp(s):// or redis(s):// (receiver/README.md).\n' +
        'DATABASE_URL holds the idempotency store, replay cache and queue (unset: an embedded\n' +
        'PostgreSQL of its own under <SVC_DATA_DIR>/receiver, named at start-up);\n' +
        'SVC_RECEIVER_QUEUE_TOKEN enables the queue pull API (/_queue/claim,\n' +
        '/_queue/ack). /healthz and /metrics are served on the same address (metric names:\n' +
        'receiver/README.md).\n' +
        '\nTracing: with OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set,\n' +
        "each delivery continues the sender's traceparent (spans gate, verify, claim, publish)\n" +
        'and is exported over OTLP/HTTP (OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf by default\n' +
        'or http/json); the app gets traceparent/tracestate with the event\n' +
        '(forward request header, broker message header). Unset, nothing is traced and an\n' +
        'incoming well-formed traceparent is handed on unchanged.',
    )
    .action(runCommand);
}

/** Runs the sidecar; a bad setting exits 2, an unavailable service or taken port 1. */
async function runCommand(flags: Flags): Promise<void> {
  try {
    const { runReceiver } = await import('./run.js');
    await runReceiver(flags);
  } catch (err) {
    const name = (err as Error).name;
    if (err instanceof UsageError || name === 'TrustFileError' || name === 'TracingConfigError') {
      process.stderr.write(`svc receiver: ${(err as Error).message}\n`);
      process.exitCode = 2;
      return;
    }
    if (err instanceof ServiceUnavailableError || err instanceof PortInUseError) {
      process.stderr.write(`svc receiver: ${err.message}\n`);
      process.exitCode = 1;
      return;
    }
    throw err;
  }
}

/** Where it listens, whom it trusts, where events go, and how keys are fetched. */
function targetOptions(command: Command): void {
  command
    .addOption(envOption('--listen <host:port>', 'address to listen on', 'SVC_RECEIVER_LISTEN'))
    .addOption(envOption('--trust <file>', 'trust file naming the senders', 'SVC_RECEIVER_TRUST'))
    .addOption(
      envOption('--brand <brand>', 'protocol brand word', 'SVC_BRAND').choices(['svc', 'adcp']),
    )
    .addOption(
      envOption(
        '--protocol-version <version>',
        'duplicate semantics',
        'SVC_PROTOCOL_VERSION',
      ).choices(['3.1', '3.2']),
    )
    .addOption(
      envOption(
        '--forward <app-url|stdout>',
        "POST each event to the app's URL (stdout: print each as a JSON line)",
        'SVC_RECEIVER_FORWARD',
      ),
    )
    .addOption(
      envOption('--queue <name>', 'enqueue each event in a durable queue', 'SVC_RECEIVER_QUEUE'),
    )
    .addOption(
      envOption(
        '--publish <broker-url>',
        "publish each event to the buyer's broker: nats://, amqp(s):// or redis(s):// (receiver/README.md)",
        'SVC_RECEIVER_PUBLISH',
      ),
    )
    .addOption(
      envOption(
        '--scheme <scheme>',
        'scheme senders sign, https behind a TLS proxy',
        'SVC_RECEIVER_SCHEME',
      ).choices(['http', 'https']),
    )
    .addOption(
      envOption('--workers <n>', 'worker processes sharing the port', 'SVC_RECEIVER_WORKERS'),
    )
    .addOption(
      envOption(
        '--allow-http-loopback',
        'fetch brand.json, JWKS and capabilities over plain http from loopback hosts (local testing only; logged)',
        'SVC_RECEIVER_ALLOW_HTTP_LOOPBACK',
      ),
    )
    .addOption(envOption('--wait <seconds>', 'wait for PostgreSQL', 'SVC_SERVICE_WAIT_SECONDS'));
}

/** Connection, body and head bounds (server-limits.ts), the commit mode, own origins. */
function limitOptions(command: Command): void {
  command
    .addOption(
      envOption(
        '--max-connections <n>',
        'open connections per process; near it idle ones make room, past it new ones are closed on arrival',
        'SVC_RECEIVER_MAX_CONNECTIONS',
      ),
    )
    .addOption(
      envOption(
        '--max-connections-per-address <n>',
        'open connections per client address (IPv6: per /64); at the cap its oldest idle one is closed for the new one; near --max-connections, idle connections without a request are closed first; /healthz and /metrics stay reachable',
        'SVC_RECEIVER_MAX_CONNECTIONS_PER_ADDRESS',
      ),
    )
    .addOption(
      envOption(
        '--public-origins <origins>',
        "this receiver's own origins, comma-separated (https://buyer.example): a delivery addressed to another (Host or absolute-form target) is refused with webhook_target_uri_malformed before any other work",
        'SVC_RECEIVER_PUBLIC_ORIGINS',
      ),
    )
    .addOption(
      envOption(
        '--body-budget-mib <n>',
        'MiB of request bodies held at once per process, then 503 + Retry-After',
        'SVC_RECEIVER_BODY_BUDGET_MIB',
      ),
    )
    .addOption(
      envOption(
        '--headers-timeout-ms <ms>',
        'time to receive a request head, then 408',
        'SVC_RECEIVER_HEADERS_TIMEOUT_MS',
      ),
    )
    .addOption(
      envOption(
        '--body-timeout-ms <ms>',
        'time to receive a whole body, then 408',
        'SVC_RECEIVER_BODY_TIMEOUT_MS',
      ),
    )
    .addOption(
      envOption(
        '--body-idle-timeout-ms <ms>',
        'time without a body chunk, then 400',
        'SVC_RECEIVER_BODY_IDLE_TIMEOUT_MS',
      ),
    )
    .addOption(
      envOption(
        '--synchronous-commit',
        'wait for the WAL flush on every claim, nonce and done-mark',
        'SVC_RECEIVER_SYNCHRONOUS_COMMIT',
      ),
    );
}

/** The operator console and its token. */
function consoleOptions(command: Command): void {
  command
    .addOption(
      plainOption(
        '--console-listen <host:port>',
        'serve the operator console here (token: SVC_RECEIVER_CONSOLE_TOKEN, --console-token-file, else receiver_console in <data dir>/credentials.json)',
        'off',
      ),
    )
    .addOption(
      envOption(
        '--console-token-file <file>',
        'read the operator console token (16+ characters) from this file, which only its owner may read (0600/0400); refused otherwise',
        'SVC_RECEIVER_CONSOLE_TOKEN_FILE',
      ),
    )
    .addOption(
      plainOption(
        '--console-token <token>',
        'operator console token (16+ characters); visible to every local user in the process list: prefer SVC_RECEIVER_CONSOLE_TOKEN or --console-token-file',
        'SVC_RECEIVER_CONSOLE_TOKEN, else credentials.json',
      ),
    );
}
