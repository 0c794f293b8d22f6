/**
 * `svc receiver`: the sidecar from the command line. Every flag has an environment twin
 * declared in shared/config.ts; a flag wins over its variable.
 */
import cluster from 'node:cluster';
import { Option, type Command } from 'commander';
import { brandProfile, isBrand } from '../../shared/brand.js';
import { loadConfigOrExit } from '../../shared/config.js';
import { createLogger } from '../../shared/infra/logger.js';
import { createPool, LOCAL_DATABASE_URL } from '../../shared/infra/pg.js';
import { checkForwardUrl } from '../publish/forward.js';
import { QUEUE_NAME } from '../publish/queue.js';
import { loadTrustFile } from '../trust/trust-file.js';
import { verifierDependencies } from './dependencies.js';
import { Sidecar, type SidecarTarget } from './server.js';
import type { TrustedKeyResolver } from '../keys/trusted-key-resolver.js';

interface Flags {
  listen?: string;
  trust?: string;
  brand?: string;
  protocolVersion?: string;
  forward?: string;
  queue?: string;
  scheme?: string;
  workers?: string;
  consoleListen?: string;
  consoleToken?: string;
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
    .option(
      '--console-listen <host:port>',
      'serve the operator console here (token: receiver_console in <data dir>/demo-credentials.json)',
    )
    .option(
      '--console-token <token>',
      'operator console token (16+ characters) instead of the file',
    )
    .addHelpText(
      'after',
      '\nExactly one of --forward or --queue. DATABASE_URL holds the idempotency store, replay\n' +
        'cache and queue; SVC_RECEIVER_QUEUE_TOKEN enables the queue pull API (/_queue/claim,\n' +
        '/_queue/ack). /healthz and /metrics are served on the same address.',
    )
    .action(async (flags: Flags) => {
      try {
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

export async function runReceiver(flags: Flags): Promise<Sidecar | null> {
  const config = loadConfigOrExit();
  const listen = parseListen(flags.listen ?? config.SVC_RECEIVER_LISTEN);
  const trustPath = flags.trust ?? config.SVC_RECEIVER_TRUST;
  if (!trustPath) throw new UsageError('--trust <file> (or SVC_RECEIVER_TRUST) is required');
  const brand = flags.brand ?? config.SVC_BRAND;
  if (!isBrand(brand)) throw new UsageError(`--brand must be svc or adcp`);
  const version = flags.protocolVersion ?? config.SVC_PROTOCOL_VERSION;
  if (version !== '3.1' && version !== '3.2')
    throw new UsageError('--protocol-version: 3.1 or 3.2');
  const forward = flags.forward ?? config.SVC_RECEIVER_FORWARD;
  const queue = flags.queue ?? config.SVC_RECEIVER_QUEUE;
  if ((forward === undefined) === (queue === undefined)) {
    throw new UsageError('exactly one of --forward <app-url> or --queue <name> is required');
  }
  let target: SidecarTarget;
  if (forward !== undefined) {
    try {
      checkForwardUrl(forward);
    } catch (err) {
      throw new UsageError(`--forward: ${(err as Error).message}`);
    }
    target = { forward };
  } else {
    if (!QUEUE_NAME.test(queue as string))
      throw new UsageError(`--queue: must match ${QUEUE_NAME.source}`);
    target = { queue: queue as string };
  }
  const scheme = flags.scheme ?? config.SVC_RECEIVER_SCHEME;
  const workers = flags.workers === undefined ? config.SVC_RECEIVER_WORKERS : Number(flags.workers);
  if (!Number.isInteger(workers) || workers < 1 || workers > 64) {
    throw new UsageError('--workers: an integer 1-64');
  }
  const consoleAt = flags.consoleListen ? parseListen(flags.consoleListen) : null;
  if (flags.consoleToken !== undefined && flags.consoleToken.length < 16) {
    throw new UsageError('--console-token: at least 16 characters');
  }
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'receiver' });
  const trust = await loadTrustFile(trustPath);
  if (workers > 1 && cluster.isPrimary) {
    // Every check above ran once here; the workers repeat them and serve.
    runPrimary(workers, logger);
    return null;
  }
  if (!config.DATABASE_URL) {
    logger.warn({ event: 'database_default', url: LOCAL_DATABASE_URL }, 'DATABASE_URL unset');
  }
  const pool = createPool({
    connectionString: config.DATABASE_URL ?? LOCAL_DATABASE_URL,
    max: 20,
    applicationName: 'receiver',
  });
  const profile = brandProfile(brand);
  const schema = config.SVC_RECEIVER_SCHEMA;
  const deps = await verifierDependencies({
    trust,
    profile: brandProfile(brand),
    pool,
    logger,
    schema,
    redisUrl: config.REDIS_URL,
    admission: {
      thresholds: {
        shortRatio: config.SVC_RECEIVER_ADMISSION_SHORT_RATIO,
        mediumRatio: config.SVC_RECEIVER_ADMISSION_MEDIUM_RATIO,
        longRatio: config.SVC_RECEIVER_ADMISSION_LONG_RATIO,
        ceilingMin: config.SVC_RECEIVER_ADMISSION_CEILING_MIN,
        ceilingFraction: config.SVC_RECEIVER_ADMISSION_CEILING_FRACTION,
      },
      minNew: config.SVC_RECEIVER_ADMISSION_MIN_NEW,
      evaluateEveryMs: config.SVC_RECEIVER_ADMISSION_EVALUATE_SECONDS * 1000,
    },
  });
  // The operator console's event log exists before the sidecar: its record is the hook.
  const { createEventLog, startReceiverConsole } = await import('../console/index.js');
  const eventLog = consoleAt ? await createEventLog({ pool, schema, logger }) : null;
  const sidecar = await Sidecar.start({
    ...(eventLog ? { observe: eventLog.record } : {}),
    host: listen.host,
    port: listen.port,
    trust,
    profile,
    protocolVersion: version,
    target,
    pool,
    schema,
    keys: deps.keys,
    revocation: deps.revocation,
    replay: deps.replay,
    admission: deps.admission,
    advertisedHorizonSeconds: deps.advertisedHorizonSeconds,
    queueToken: config.SVC_RECEIVER_QUEUE_TOKEN,
    scheme: scheme as 'http' | 'https' | undefined,
    logger,
  });
  deps.admission.attachMetrics(sidecar.metrics.registry);
  process.stdout.write(`receiver listening on ${sidecar.url}\n`);
  const operatorConsole =
    consoleAt && eventLog
      ? await startReceiverConsole({
          pool,
          schema,
          eventLog,
          metrics: sidecar.metrics,
          queue: sidecar.queue,
          target: 'forward' in target ? `forwarded to ${target.forward}` : `queue ${target.queue}`,
          keys: 'status' in deps.keys ? (deps.keys as TrustedKeyResolver) : null,
          dataDir: config.SVC_DATA_DIR,
          ...(flags.consoleToken ? { token: flags.consoleToken } : {}),
          host: consoleAt.host,
          port: consoleAt.port,
          logger,
        })
      : null;
  if (operatorConsole) {
    process.stdout.write(
      `receiver console on ${operatorConsole.url}${operatorConsole.credentialsFile ? ` (token: receiver_console in ${operatorConsole.credentialsFile})` : ''}\n`,
    );
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ event: 'shutdown', signal }, 'finishing in-flight requests');
    sidecar
      .close()
      .then(() => operatorConsole?.close())
      .then(() => eventLog?.close())
      .then(() => deps.close())
      .then(() => pool.end())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  return sidecar;
}

/**
 * `--workers n`: n processes share the listening socket (node:cluster), so verification
 * uses every core. All state is in PostgreSQL, so workers need no coordination. A worker
 * that dies is replaced; SIGTERM/SIGINT are passed on, and the primary exits when every
 * worker has finished its in-flight requests.
 */
function runPrimary(n: number, logger: ReturnType<typeof createLogger>): void {
  let stopping = false;
  for (let i = 0; i < n; i++) cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (!stopping) {
      logger.warn({ event: 'worker_replaced', pid: worker.process.pid, code, signal });
      cluster.fork();
      return;
    }
    if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
  });
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill(signal);
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}
