/**
 * `svc receiver`'s settings: each flag, else its SVC_RECEIVER_* variable, checked; a bad
 * value is a UsageError naming the flag (the sidecar never starts on a half-read setting).
 */
import { isBrand, type Brand } from '../../shared/brand.js';
import type { Config } from '../../shared/config.js';
import { checkForwardUrl } from '../publish/forward.js';
import { STDOUT_TARGET } from '../publish/stdout.js';
import { QUEUE_NAME } from '../publish/queue.js';
import { parseBrokerTarget } from '../publish/broker-target.js';
import { intFlag, parseListen, UsageError, type Flags } from './flags.js';
import { sidecarOrigins } from './origins-flag.js';
import type { SidecarTarget } from './server.js';

export type ReceiverSettings = ReturnType<typeof receiverSettings>;

export function receiverSettings(flags: Flags, config: Config) {
  const listen = parseListen(flags.listen ?? config.SVC_RECEIVER_LISTEN);
  const trustPath = flags.trust ?? config.SVC_RECEIVER_TRUST;
  if (!trustPath) throw new UsageError('--trust <file> (or SVC_RECEIVER_TRUST) is required');
  const brand = flags.brand ?? config.SVC_BRAND;
  if (!isBrand(brand)) throw new UsageError(`--brand must be svc or adcp`);
  const version = flags.protocolVersion ?? config.SVC_PROTOCOL_VERSION;
  if (version !== '3.1' && version !== '3.2')
    throw new UsageError('--protocol-version: 3.1 or 3.2');
  const target = sidecarTarget(flags, config, brand);
  const scheme = flags.scheme ?? config.SVC_RECEIVER_SCHEME;
  const workers = flags.workers === undefined ? config.SVC_RECEIVER_WORKERS : Number(flags.workers);
  if (!Number.isInteger(workers) || workers < 1 || workers > 64) {
    throw new UsageError('--workers: an integer 1-64');
  }
  const limits = connectionLimits(flags, config);
  const synchronousCommit =
    flags.synchronousCommit === true || config.SVC_RECEIVER_SYNCHRONOUS_COMMIT === '1';
  const publicOrigins = sidecarOrigins(flags.publicOrigins, config, scheme);
  const consoleAt = flags.consoleListen ? parseListen(flags.consoleListen) : null;
  return {
    listen,
    trustPath,
    brand,
    version: version as '3.1' | '3.2',
    target,
    scheme,
    workers,
    limits,
    synchronousCommit,
    publicOrigins,
    consoleAt,
  };
}

/** Exactly one of --forward, --queue, --publish: where verified events go. */
function sidecarTarget(flags: Flags, config: Config, brand: Brand): SidecarTarget {
  const forward = flags.forward ?? config.SVC_RECEIVER_FORWARD;
  const queue = flags.queue ?? config.SVC_RECEIVER_QUEUE;
  const publish = flags.publish ?? config.SVC_RECEIVER_PUBLISH;
  if ([forward, queue, publish].filter((v) => v !== undefined).length !== 1) {
    throw new UsageError(
      'exactly one of --forward <app-url>, --queue <name> or --publish <broker-url> is required',
    );
  }
  if (publish !== undefined) {
    try {
      parseBrokerTarget(publish, brand);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    return { publish };
  }
  if (forward !== undefined) {
    try {
      if (forward !== STDOUT_TARGET) checkForwardUrl(forward);
    } catch (err) {
      throw new UsageError(`--forward: ${(err as Error).message} (or --forward stdout)`);
    }
    return { forward };
  }
  if (!QUEUE_NAME.test(queue as string))
    throw new UsageError(`--queue: must match ${QUEUE_NAME.source}`);
  return { queue: queue as string };
}

/** The listener's connection, body and header limits (server-limits.ts). */
function connectionLimits(flags: Flags, config: Config) {
  return {
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
}
