/**
 * `svc receiver` once its flags are read: check them against the environment, load the trust
 * file, start the sidecar (or, with --workers n, a cluster of them) and stop it on a signal.
 */
import cluster from 'node:cluster';
import { brandProfile, isBrand } from '../../shared/brand.js';
import { loadConfigOrExit } from '../../shared/config.js';
import { createLogger } from '../../shared/infra/logger.js';
import { commandServices } from '../../shared/infra/command-services.js';
import { createPool } from '../../shared/infra/pg.js';
import { flagsToEnv } from '../../cli/env-option.js';
import { checkForwardUrl } from '../publish/forward.js';
import { QUEUE_NAME } from '../publish/queue.js';
import { loadTrustFile } from '../trust/trust-file.js';
import { intFlag, parseListen, UsageError, type Flags } from './flags.js';
import { verifierDependencies } from './dependencies.js';
import { Sidecar, type SidecarTarget } from './server.js';
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
  const limits = {
    maxConnections: intFlag(
      'max-connections',
      flags.maxConnections,
      config.SVC_RECEIVER_MAX_CONNECTIONS,
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
  const allowLoopback = config.SVC_RECEIVER_ALLOW_HTTP_LOOPBACK === '1';
  if (allowLoopback) {
    logger.warn(
      { event: 'http_loopback_discovery_allowed' },
      'SVC_RECEIVER_ALLOW_HTTP_LOOPBACK: key discovery may use plain http to loopback hosts (local testing only)',
    );
  }
  // Waits (with back-off, logged) up to SVC_SERVICE_WAIT_SECONDS; unset DATABASE_URL: the
  // embedded server of the svc start running on SVC_DATA_DIR.
  const services = await commandServices(config, {
    waitSeconds: config.SVC_SERVICE_WAIT_SECONDS,
    logger,
    redis: 'none',
  });
  const pool = createPool({
    connectionString: services.databaseUrl,
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
  const { createEventLog, startReceiverConsole } = await import('../console/index.js');
  const eventLog = consoleAt ? await createEventLog({ pool, schema, logger }) : null;
  const sidecar = await Sidecar.start({
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
    ...limits,
    synchronousCommit,
    ...(eventLog ? { observe: eventLog.record } : {}),
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
          revocation:
            deps.revocation && 'describe' in deps.revocation
              ? (deps.revocation as PolledRevocationCheck)
              : null,
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
