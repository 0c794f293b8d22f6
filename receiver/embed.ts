/**
 * `createReceiver`: the library's one-call setup, what the sidecar does minus the HTTP
 * server. From a trust file (or its parsed form), a PostgreSQL pool and a publisher it builds
 * the key resolver, revocation polling, durable replay cache and admission tracking, creates
 * the receiver's tables, starts the retention purge, and gives back the receiver to mount
 * with `nodeListener` or `webhookMiddleware`. Every piece stays available on its own (see
 * index.ts) for an app that wires them differently.
 */
import { brandProfile, type Brand } from '../shared/brand.js';
import { silentLogger, type Logger } from '../shared/infra/logger.js';
import type { Pool } from '../shared/infra/pg.js';
import type { ProtocolVersion } from './store/index.js';
import { describePublicOrigins, parsePublicOrigins } from './pipeline/public-origins.js';
import { WebhookReceiver, type WebhookReceiverOptions } from './pipeline/receiver.js';
import type { Publisher } from './publish/types.js';
import { verifierDependencies } from './sidecar/dependencies.js';
import { loadTrustFile, routeRegistration, type TrustConfig } from './trust/trust-file.js';

export interface CreateReceiverOptions {
  /** The trust file's path, or its content already parsed by `parseTrust`. */
  trust: string | TrustConfig;
  /** Holds the idempotency store, replay cache and ordering state (schema `schema`). */
  pool: Pool;
  /** Where each verified, deduplicated event goes: `HandlerPublisher`, `ForwardPublisher`, `DurableQueue`. */
  publisher: Publisher;
  /** Brand word of every branded identifier; default `svc`. */
  brand?: Brand;
  /** Duplicate and retry semantics; default `3.2`. */
  protocolVersion?: ProtocolVersion;
  /** PostgreSQL schema of the receiver's tables; default `receiver`. */
  schema?: string;
  /** A pino logger; default silent. */
  logger?: Logger;
  /** Let key and revocation documents be fetched over plain http from loopback (local tests only). */
  allowLoopback?: boolean;
  /**
   * This receiver's own public origins (`https://buyer.example`): a delivery addressed to
   * any other is refused with `webhook_target_uri_malformed` before any other work. Unset:
   * any Host is accepted (logged at start). A malformed value throws `PublicOriginError`.
   */
  publicOrigins?: readonly string[];
  /** Any other `WebhookReceiver` option (body cap, lease, clock...). */
  receiver?: Partial<
    Omit<WebhookReceiverOptions, 'pool' | 'profile' | 'keys' | 'replay' | 'publisher'>
  >;
}

export interface EmbeddedReceiver {
  receiver: WebhookReceiver;
  trust: TrustConfig;
  /** Stops purging and polling and closes the publisher; the pool stays the caller's. */
  close(): Promise<void>;
}

export async function createReceiver(o: CreateReceiverOptions): Promise<EmbeddedReceiver> {
  const trust = typeof o.trust === 'string' ? await loadTrustFile(o.trust) : o.trust;
  const profile = brandProfile(o.brand ?? 'svc');
  const logger = o.logger ?? silentLogger;
  const publicOrigins = o.publicOrigins ?? o.receiver?.publicOrigins;
  // Checked before anything is started, so a bad list leaves nothing to close.
  const said = describePublicOrigins(
    publicOrigins ? parsePublicOrigins(publicOrigins, 'publicOrigins') : null,
  );
  logger[said.level](said.fields, said.message);
  const schema = o.schema ?? 'receiver';
  const deps = await verifierDependencies({
    trust,
    profile,
    pool: o.pool,
    logger,
    schema,
    ...(o.allowLoopback ? { allowLoopback: true } : {}),
  });
  let receiver: WebhookReceiver;
  try {
    receiver = new WebhookReceiver({
      route: (path) => routeRegistration(trust, path),
      // The sender's own trust value, else what it advertises, else the trust file default.
      retryHorizonSeconds: (sender) =>
        trust.senders.find((s) => s.id === sender)?.delivery_retry_horizon_seconds ??
        deps.advertisedHorizonSeconds(sender) ??
        trust.delivery_retry_horizon_seconds,
      admission: deps.admission,
      logger,
      ...o.receiver,
      ...(publicOrigins ? { publicOrigins } : {}),
      pool: o.pool,
      schema,
      profile,
      protocolVersion: o.protocolVersion ?? '3.2',
      keys: deps.keys,
      revocation: deps.revocation,
      replay: deps.replay,
      publisher: o.publisher,
    });
    await receiver.migrate();
  } catch (err) {
    await deps.close();
    throw err;
  }
  receiver.startPurging();
  return {
    receiver,
    trust,
    close: async () => {
      await receiver.close();
      await deps.close();
    },
  };
}
