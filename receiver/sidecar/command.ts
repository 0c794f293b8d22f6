/**
 * `svc receiver`: the sidecar from the command line. Every flag has an environment twin
 * declared in shared/config.ts; a flag wins over its variable. The sidecar itself (run.ts)
 * loads only when the command runs, so `svc --help` stays fast.
 */
import { Option, type Command } from 'commander';

export interface Flags {
  listen?: string;
  trust?: string;
  brand?: string;
  protocolVersion?: string;
  forward?: string;
  queue?: string;
  scheme?: string;
  workers?: string;
}

export class UsageError extends Error {}

export function parseListen(value: string): { host: string; port: number } {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s]+):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) throw new UsageError(`--listen "${value}" is not host:port`);
  return { host: (m[1] as string).replace(/^\[|\]$/g, ''), port };
}

export function registerReceiverCommand(program: Command): void {
  program
    .command('receiver')
    .description(
      'Run the webhook receiver sidecar: verify, deduplicate, order, then forward each event to the app or enqueue it',
    )
    .option('--listen <host:port>', 'address to listen on (env SVC_RECEIVER_LISTEN)')
    .option('--trust <file>', 'trust file naming the senders (env SVC_RECEIVER_TRUST)')
    .addOption(
      new Option('--brand <brand>', 'protocol brand word (env SVC_BRAND)').choices(['svc', 'adcp']),
    )
    .addOption(
      new Option(
        '--protocol-version <version>',
        'duplicate semantics (env SVC_PROTOCOL_VERSION)',
      ).choices(['3.1', '3.2']),
    )
    .option('--forward <app-url>', "POST each event to the app's URL (env SVC_RECEIVER_FORWARD)")
    .option('--queue <name>', 'enqueue each event in a durable queue (env SVC_RECEIVER_QUEUE)')
    .addOption(
      new Option(
        '--scheme <scheme>',
        'scheme senders sign, https behind a TLS proxy (env SVC_RECEIVER_SCHEME)',
      ).choices(['http', 'https']),
    )
    .option('--workers <n>', 'worker processes sharing the port (env SVC_RECEIVER_WORKERS)')
    .addHelpText(
      'after',
      '\nExactly one of --forward or --queue. DATABASE_URL holds the idempotency store, replay\n' +
        'cache and queue; SVC_RECEIVER_QUEUE_TOKEN enables the queue pull API (/_queue/claim,\n' +
        '/_queue/ack). /healthz and /metrics are served on the same address.',
    )
    .action(async (flags: Flags) => {
      try {
        const { runReceiver } = await import('./run.js');
        await runReceiver(flags);
      } catch (err) {
        if (err instanceof UsageError || (err as Error).name === 'TrustFileError') {
          process.stderr.write(`svc receiver: ${(err as Error).message}\n`);
          process.exitCode = 2;
          return;
        }
        throw err;
      }
    });
}
