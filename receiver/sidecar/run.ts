/**
 * `svc receiver` once its flags are read: check them against the environment, load the trust
 * file, find the database (DATABASE_URL, or an embedded one of its own: dependencies.ts),
 * warn when nothing answers at the forward target, start the sidecar (or, with --workers n,
 * a cluster of them) and stop it on a signal.
 */
import cluster from 'node:cluster';
import { brandProfile } from '../../shared/brand.js';
import { loadConfigOrExit, type Config } from '../../shared/config.js';
import { createLogger } from '../../shared/infra/logger.js';
import { createPool, type Pool } from '../../shared/infra/pg.js';
import { flagsToEnv } from '../../shared/cli-options.js';
import { probeForwardTarget } from '../publish/forward.js';
import { STDOUT_TARGET } from '../publish/stdout.js';
import type { Publisher } from '../publish/types.js';
import { loadTrustFile } from '../trust/trust-file.js';
import { shutdownTracing, startTracing } from '../../shared/telemetry/tracing.js';
import { PortInUseError, type Flags } from './flags.js';
import { receiverSettings, type ReceiverSettings } from './settings.js';
import { consoleTokenSources, resolveConsoleToken } from './console-token.js';
import { receiverDatabase, verifierDependencies, type ReceiverDatabase } from './dependencies.js';
import { describeTarget, Sidecar, type SidecarTarget } from './server.js';
import type { TrustedKeyResolver } from '../keys/trusted-key-resolver.js';
import type { PolledRevocationCheck } from '../revocation/revocation-check.js';

export async function runReceiver(flags: Flags): Promise<Sidecar | null> {
  flagsToEnv(flags as Record<string, unknown>, {
    allowHttpLoopback: 'SVC_RECEIVER_ALLOW_HTTP_LOOPBACK',
    wait: 'SVC_SERVICE_WAIT_SECONDS',
  });
  const config = loadConfigOrExit();
  const settings = receiverSettings(flags, config);
  const consoleToken = await resolveConsoleToken(consoleTokenSources(flags, config));
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'receiver' });
  const trust = await loadTrustFile(settings.trustPath);
  const database = (): Promise<ReceiverDatabase> =>
    receiverDatabase({
      databaseUrl: config.DATABASE_URL,
      dataDir: config.SVC_DATA_DIR,
      waitSeconds: config.SVC_SERVICE_WAIT_SECONDS,
      logger,
    });
  if (settings.workers > 1 && cluster.isPrimary) {
    // Every check above ran once here; the workers repeat them and serve, on the database
    // found here (an embedded one is the primary's, so its URL is handed down).
    const db = await database();
    process.env.DATABASE_URL = db.url;
    if (db.embeddedDir) process.stdout.write(storeLine(db));
    await warnIfForwardDown(settings.target, logger);
    runPrimary(settings.workers, logger, db);
    return null;
  }
  // OTLP export when OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set (each serving process its
  // own exporter); nothing otherwise. A malformed endpoint stops the command here.
  startTracing('svc-receiver');
  const allowLoopback = config.SVC_RECEIVER_ALLOW_HTTP_LOOPBACK === '1';
  warnAtStart(logger, consoleToken, allowLoopback);
  // DATABASE_URL, waited for (with back-off, logged) up to SVC_SERVICE_WAIT_SECONDS; unset:
  // the sidecar's own embedded PostgreSQL (never a seller's: a buyer has none).
  const db = await database();
  if (cluster.isPrimary) await warnIfForwardDown(settings.target, logger);
  const pool = createPool({ connectionString: db.url, max: 20, applicationName: 'receiver' });
  const schema = config.SVC_RECEIVER_SCHEMA;
  const deps = await verifierDependencies({
    trust,
    profile: brandProfile(settings.brand),
    pool,
    logger,
    schema,
    allowLoopback,
    synchronousCommit: settings.synchronousCommit,
    admission: admissionOptions(config),
  });
  const serving = { config, settings, trust, pool, schema, deps, logger };
  const { sidecar, eventLog, published } = await startSidecar(serving);
  const operatorConsole = await startConsole(
    serving,
    sidecar,
    { eventLog, published },
    consoleToken,
  );
  // One block, one write, once everything is up: the JSON log lines of the start-up come
  // before it, never between its lines.
  process.stdout.write(
    (db.embeddedDir ? storeLine(db) : '') +
      startupLines(sidecar.url, settings.target, operatorConsole).join('\n') +
      '\n',
  );
  stopOnSignal(logger, [
    () => sidecar.close(),
    () => operatorConsole?.close(),
    () => eventLog?.close(),
    () => published?.close(),
    () => deps.close(),
    () => pool.end(),
    () => db.stop(),
    () => shutdownTracing(),
  ]);
  return sidecar;
}

type Logger = ReturnType<typeof createLogger>;

/** What the sidecar and its console are started from. */
interface Serving {
  config: Config;
  settings: ReceiverSettings;
  trust: Awaited<ReturnType<typeof loadTrustFile>>;
  pool: Pool;
  schema: string;
  deps: Awaited<ReturnType<typeof verifierDependencies>>;
  logger: Logger;
}

/** Start-up warnings about settings that weaken the sidecar (logged, not fatal). */
function warnAtStart(
  logger: Logger,
  consoleToken: Awaited<ReturnType<typeof resolveConsoleToken>>,
  allowLoopback: boolean,
): void {
  if (consoleToken?.source === 'flag') {
    logger.warn(
      { event: 'console_token_on_command_line' },
      '--console-token is readable by every local user in the process list; use SVC_RECEIVER_CONSOLE_TOKEN or --console-token-file',
    );
  }
  if (allowLoopback) {
    logger.warn(
      { event: 'http_loopback_discovery_allowed' },
      'SVC_RECEIVER_ALLOW_HTTP_LOOPBACK: key discovery may use plain http to loopback hosts (local testing only)',
    );
  }
}

/** The admission controller's thresholds (SVC_RECEIVER_ADMISSION_*). */
function admissionOptions(config: Config) {
  return {
    thresholds: {
      shortRatio: config.SVC_RECEIVER_ADMISSION_SHORT_RATIO,
      mediumRatio: config.SVC_RECEIVER_ADMISSION_MEDIUM_RATIO,
      longRatio: config.SVC_RECEIVER_ADMISSION_LONG_RATIO,
      ceilingMin: config.SVC_RECEIVER_ADMISSION_CEILING_MIN,
      ceilingFraction: config.SVC_RECEIVER_ADMISSION_CEILING_FRACTION,
    },
    minNew: config.SVC_RECEIVER_ADMISSION_MIN_NEW,
    evaluateEveryMs: config.SVC_RECEIVER_ADMISSION_EVALUATE_SECONDS * 1000,
  };
}

/** The listening sidecar, with the console's event log as its observer when there is one. */
async function startSidecar(w: Serving) {
  const { config, settings, pool, schema, deps, logger } = w;
  // The operator console's event log exists before the sidecar: its record is the hook.
  const { createEventLog, createPublishedLog } = await import('../console/index.js');
  const eventLog = settings.consoleAt ? await createEventLog({ pool, schema, logger }) : null;
  // Publish outcomes and kept bodies, for the console's Re-publish.
  const published = settings.consoleAt ? await createPublishedLog({ pool, schema, logger }) : null;
  const sidecar = await listening(
    settings.listen,
    '--listen <host:port> (SVC_RECEIVER_LISTEN)',
    () =>
      Sidecar.start({
        host: settings.listen.host,
        port: settings.listen.port,
        trust: w.trust,
        profile: brandProfile(settings.brand),
        protocolVersion: settings.version,
        target: settings.target,
        pool,
        schema,
        keys: deps.keys,
        revocation: deps.revocation,
        replay: deps.replay,
        admission: deps.admission,
        advertisedHorizonSeconds: deps.advertisedHorizonSeconds,
        queueToken: config.SVC_RECEIVER_QUEUE_TOKEN,
        scheme: settings.scheme as 'http' | 'https' | undefined,
        ...(settings.publicOrigins ? { publicOrigins: settings.publicOrigins } : {}),
        logger,
        ...settings.limits,
        synchronousCommit: settings.synchronousCommit,
        ...(eventLog ? { observe: eventLog.record } : {}),
        ...(published ? { wrapPublisher: (p: Publisher) => published.wrap(p) } : {}),
      }),
    () => Promise.all([deps.close(), eventLog?.close(), published?.close()]).then(() => pool.end()),
  );
  deps.admission.attachMetrics(sidecar.metrics.registry);
  return { sidecar, eventLog, published };
}

/** The receiver's operator console (--console-listen), or null without one. */
async function startConsole(
  w: Serving,
  sidecar: Sidecar,
  logs: Pick<Awaited<ReturnType<typeof startSidecar>>, 'eventLog' | 'published'>,
  consoleToken: Awaited<ReturnType<typeof resolveConsoleToken>>,
) {
  const { config, settings, pool, schema, deps, logger } = w;
  const consoleAt = settings.consoleAt;
  const { eventLog, published } = logs;
  if (!consoleAt || !eventLog) return null;
  const { startReceiverConsole } = await import('../console/index.js');
  return listening(
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
        target: describeTarget(settings.target),
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
  );
}

/** SIGTERM/SIGINT: finish in-flight requests, then run the steps in order and exit. */
function stopOnSignal(logger: Logger, steps: Array<() => Promise<unknown> | unknown>): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ event: 'shutdown', signal }, 'finishing in-flight requests');
    steps
      .reduce<Promise<unknown>>((p, step) => p.then(() => step()), Promise.resolve())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
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
function runPrimary(n: number, logger: Logger, db: ReceiverDatabase): void {
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
