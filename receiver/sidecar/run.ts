/**
 * `svc receiver` once its flags are read: check them against the environment, load the trust
 * file, find the database (DATABASE_URL, or an embedded one of its own: dependencies.ts),
 * warn when nothing answers at the forward target, start the sidecar (or, with --workers n,
 * a cluster of them) and stop it on a signal.
 */
import cluster from 'node:cluster';
import { brandProfile, isBrand } from '../../shared/brand.js';
import { loadConfigOrExit } from '../../shared/config.js';
import { createLogger } from '../../shared/infra/logger.js';
import { createPool } from '../../shared/infra/pg.js';
import { flagsToEnv } from '../../shared/cli-options.js';
import { checkForwardUrl, probeForwardTarget } from '../publish/forward.js';
import { STDOUT_TARGET } from '../publish/stdout.js';
import { QUEUE_NAME } from '../publish/queue.js';
import type { Publisher } from '../publish/types.js';
import { parseBrokerTarget } from '../publish/broker-target.js';
import { loadTrustFile } from '../trust/trust-file.js';
import { shutdownTracing, startTracing } from '../../shared/telemetry/tracing.js';
import { intFlag, parseListen, PortInUseError, UsageError, type Flags } from './flags.js';
import { consoleTokenSources, resolveConsoleToken } from './console-token.js';
import { receiverDatabase, verifierDependencies, type ReceiverDatabase } from './dependencies.js';
import { sidecarOrigins } from './origins-flag.js';
import { describeTarget, Sidecar, type SidecarTarget } from './server.js';
import type { TrustedKeyResolver } from '../keys/trusted-key-resolver.js';
import type { PolledRevocationCheck } from '../revocation/revocation-check.js';

export async function runReceiver(flags: Flags): Promise<Sidecar | null> {
  flagsToEnv(flags as Record<string, unknown>, {
    allowHttpLoopback: 'SVC_RECEIVER_ALLOW_HTTP_LOOPBACK',
    wait: 'SVC_SERVICE_WAIT_SECONDS',
  });
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
  const publish = flags.publish ?? config.SVC_RECEIVER_PUBLISH;
  if ([forward, queue, publish].filter((v) => v !== undefined).length !== 1) {
    throw new UsageError(
      'exactly one of --forward <app-url>, --queue <name> or --publish <broker-url> is required',
    );
  }
  let target: SidecarTarget;
  if (publish !== undefined) {
    try {
      parseBrokerTarget(publish, brand);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    target = { publish };
  } else if (forward !== undefined) {
    try {
      if (forward !== STDOUT_TARGET) checkForwardUrl(forward);
    } catch (err) {
      throw new UsageError(`--forward: ${(err as Error).message} (or --forward stdout)`);
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
  const limits = {
    maxConnections: intFlag(
      'max-connections',
      flags.maxConnections,
      config.SVC_RECEIVER_MAX_CONNECTIONS,
      1,
      1_000_000,
    ),
    maxConnectionsPerAddress: intFlag(
      'max-connections-per-address',
      flags.maxConnectionsPerAddress,
      config.SVC_RECEIVER_MAX_CONNECTIONS_PER_ADDRESS,
      1,
      1_000_000,
    ),
    bodyBudgetBytes:
      intFlag(
        'body-budget-mib',
        flags.bodyBudgetMib,
        config.SVC_RECEIVER_BODY_BUDGET_MIB,
        1,
        65_536,
      ) *
      1024 *
      1024,
    headersTimeoutMs: intFlag(
      'headers-timeout-ms',
      flags.headersTimeoutMs,
      config.SVC_RECEIVER_HEADERS_TIMEOUT_MS,
      100,
      600_000,
    ),
    bodyTimeoutMs: intFlag(
      'body-timeout-ms',
      flags.bodyTimeoutMs,
      config.SVC_RECEIVER_BODY_TIMEOUT_MS,
      100,
      600_000,
    ),
    bodyIdleTimeoutMs: intFlag(
      'body-idle-timeout-ms',
      flags.bodyIdleTimeoutMs,
      config.SVC_RECEIVER_BODY_IDLE_TIMEOUT_MS,
      100,
      600_000,
    ),
  };
  const synchronousCommit =
    flags.synchronousCommit === true || config.SVC_RECEIVER_SYNCHRONOUS_COMMIT === '1';
  const publicOrigins = sidecarOrigins(flags.publicOrigins, config, scheme);
  const consoleAt = flags.consoleListen ? parseListen(flags.consoleListen) : null;
  const consoleToken = await resolveConsoleToken(consoleTokenSources(flags, config));
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'receiver' });
  const trust = await loadTrustFile(trustPath);
  const database = (): Promise<ReceiverDatabase> =>
    receiverDatabase({
      databaseUrl: config.DATABASE_URL,
      dataDir: config.SVC_DATA_DIR,
      waitSeconds: config.SVC_SERVICE_WAIT_SECONDS,
      logger,
    });
  if (workers > 1 && cluster.isPrimary) {
    // Every check above ran once here; the workers repeat them and serve, on the database
    // found here (an embedded one is the primary's, so its URL is handed down).
    const db = await database();
    process.env.DATABASE_URL = db.url;
    if (db.embeddedDir) process.stdout.write(storeLine(db));
    await warnIfForwardDown(target, logger);
    runPrimary(workers, logger, db);
    return null;
  }
  // OTLP export when OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set (each serving process its
  // own exporter); nothing otherwise. A malformed endpoint stops the command here.
  startTracing('svc-receiver');
  if (consoleToken?.source === 'flag') {
    logger.warn(
      { event: 'console_token_on_command_line' },
      '--console-token is readable by every local user in the process list; use SVC_RECEIVER_CONSOLE_TOKEN or --console-token-file',
    );
  }
  const allowLoopback = config.SVC_RECEIVER_ALLOW_HTTP_LOOPBACK === '1';
  if (allowLoopback) {
    logger.warn(
      { event: 'http_loopback_discovery_allowed' },
      'SVC_RECEIVER_ALLOW_HTTP_LOOPBACK: key discovery may use plain http to loopback hosts (local testing only)',
    );
  }
  // DATABASE_URL, waited for (with back-off, logged) up to SVC_SERVICE_WAIT_SECONDS; unset:
  // the sidecar's own embedded PostgreSQL (never a seller's: a buyer has none).
  const db = await database();
  if (cluster.isPrimary) await warnIfForwardDown(target, logger);
  const pool = createPool({
    connectionString: db.url,
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
    allowLoopback,
    synchronousCommit,
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
  const { createEventLog, createPublishedLog, startReceiverConsole } =
    await import('../console/index.js');
  const eventLog = consoleAt ? await createEventLog({ pool, schema, logger }) : null;
  // Publish outcomes and kept bodies, for the console's Re-publish.
  const published = consoleAt ? await createPublishedLog({ pool, schema, logger }) : null;
  const sidecar = await listening(
    listen,
    '--listen <host:port> (SVC_RECEIVER_LISTEN)',
    () =>
      Sidecar.start({
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
        ...(publicOrigins ? { publicOrigins } : {}),
        logger,
        ...limits,
        synchronousCommit,
        ...(eventLog ? { observe: eventLog.record } : {}),
        ...(published ? { wrapPublisher: (p: Publisher) => published.wrap(p) } : {}),
      }),
    () => Promise.all([deps.close(), eventLog?.close(), published?.close()]).then(() => pool.end()),
  );
  deps.admission.attachMetrics(sidecar.metrics.registry);
  const operatorConsole =
    consoleAt && eventLog
      ? await listening(
          consoleAt,
          '--console-listen <host:port>',
          () =>
            startReceiverConsole({
              pool,
              schema,
              eventLog,
              published,
              metrics: sidecar.metrics,
              queue: sidecar.queue,
              target: describeTarget(target),
              keys: 'status' in deps.keys ? (deps.keys as TrustedKeyResolver) : null,
              revocation:
                deps.revocation && 'describe' in deps.revocation
                  ? (deps.revocation as PolledRevocationCheck)
                  : null,
              dataDir: config.SVC_DATA_DIR,
              ...(consoleToken ? { token: consoleToken.token } : {}),
              host: consoleAt.host,
              port: consoleAt.port,
              logger,
            }),
          () =>
            sidecar
              .close()
              .then(() => Promise.all([deps.close(), eventLog.close(), published?.close()]))
              .then(() => pool.end()),
        )
      : null;
  // One block, one write, once everything is up: the JSON log lines of the start-up come
  // before it, never between its lines.
  process.stdout.write(
    (db.embeddedDir ? storeLine(db) : '') +
      startupLines(sidecar.url, target, operatorConsole).join('\n') +
      '\n',
  );
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ event: 'shutdown', signal }, 'finishing in-flight requests');
    sidecar
      .close()
      .then(() => operatorConsole?.close())
      .then(() => eventLog?.close())
      .then(() => published?.close())
      .then(() => deps.close())
      .then(() => pool.end())
      .then(() => db.stop())
      .then(() => shutdownTracing())
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
 * What a person reads once the sidecar is up: where it listens, the URL to register as the
 * webhook (any path but /healthz, /metrics and the queue API is verified: the README uses
 * `/webhooks`), where events go, and the console.
 */
export function startupLines(
  url: string,
  target: SidecarTarget,
  operatorConsole: { url: string; credentialsFile?: string | null } | null,
): string[] {
  const lines = [
    `receiver listening on ${url} (webhook URL: ${url}/webhooks; every path but /healthz and /metrics is verified)`,
    `  events ${'queue' in target ? `queued in ${target.queue}` : describeTarget(target)}`,
  ];
  if (operatorConsole) {
    lines.push(
      `receiver console on ${operatorConsole.url}${operatorConsole.credentialsFile ? ` (token: receiver_console in ${operatorConsole.credentialsFile})` : ''}`,
    );
  }
  return lines;
}

/** A listener's start; its port taken is an error naming the setting that moves it. */
async function listening<T>(
  at: { host: string; port: number },
  setting: string,
  start: () => Promise<T>,
  cleanup: () => Promise<unknown>,
): Promise<T> {
  try {
    return await start();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    await cleanup().catch(() => {});
    throw new PortInUseError(
      `${at.host}:${at.port} is already in use: choose another with ${setting}`,
    );
  }
}

/**
 * `--workers n`: n processes share the listening socket (node:cluster), so verification
 * uses every core. All state is in PostgreSQL, so workers need no coordination. A worker
 * that dies is replaced; SIGTERM/SIGINT are passed on, and the primary exits when every
 * worker has finished its in-flight requests.
 */
function runPrimary(
  n: number,
  logger: ReturnType<typeof createLogger>,
  db: ReceiverDatabase,
): void {
  let stopping = false;
  for (let i = 0; i < n; i++) cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (!stopping) {
      logger.warn({ event: 'worker_replaced', pid: worker.process.pid, code, signal });
      cluster.fork();
      return;
    }
    if (Object.keys(cluster.workers ?? {}).length === 0) {
      db.stop().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    }
  });
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill(signal);
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

/** The start-up line of a sidecar on its own embedded PostgreSQL: where its data lives. */
function storeLine(db: ReceiverDatabase): string {
  return `receiver database: embedded PostgreSQL, data in ${db.embeddedDir} (DATABASE_URL unset)\n`;
}

/**
 * A start-up warning when nothing accepts connections at the forward target: every
 * verified event would get 503 publication_failed (naming the target) until something does.
 */
async function warnIfForwardDown(
  target: SidecarTarget,
  logger: ReturnType<typeof createLogger>,
): Promise<void> {
  if (!('forward' in target) || target.forward === STDOUT_TARGET) return;
  const why = await probeForwardTarget(target.forward);
  if (why === null) return;
  logger.warn(
    { event: 'forward_target_unreachable', target: target.forward, cause: why },
    `nothing answers at the forward target ${target.forward} (${why}): each verified event ` +
      'gets 503 publication_failed until the app listens there (for a first try, --forward stdout ' +
      'prints each event instead)',
  );
}
