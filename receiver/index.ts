/**
 * The receiver library's public surface, the package entry point `svc-webhooks/receiver`:
 * embed `WebhookReceiver` behind the Koa middleware or the node:http listener, pick a
 * publisher, and give it the trust file's key resolver, revocation check and durable replay
 * cache (`createReceiver` does all of that in one call). See README.md.
 */
export { createReceiver, type CreateReceiverOptions, type EmbeddedReceiver } from './embed.js';
export { WebhookReceiver } from './pipeline/receiver.js';
export { parsePublicOrigins, PublicOriginError } from './pipeline/public-origins.js';
export type {
  ReceiverRequest,
  ReceiverResponse,
  WebhookReceiverOptions,
} from './pipeline/receiver.js';
export { ReceiverMetrics } from './pipeline/metrics.js';
export { webhookMiddleware, type KoaReceiverOptions } from './koa.js';
export type { KoaContextLike, KoaMiddlewareLike } from '../shared/http/koa-like.js';
export {
  nodeListener,
  receiverRequest,
  writeReceiverResponse,
  type AdapterOptions,
} from './http.js';
export {
  limitServer,
  checkingIntervalFor,
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
  type ServerLimits,
} from './server-limits.js';
export type { ConnectionGuard, ShedReason } from './connection-guard.js';
export { HandlerPublisher, type EventHandler } from './publish/handler.js';
export {
  ForwardPublisher,
  ForwardError,
  checkForwardUrl,
  type ForwardPublisherOptions,
} from './publish/forward.js';
export { DurableQueue, type DurableQueueOptions, type QueueItem } from './publish/queue.js';
export type { Publisher, ReceivedEvent } from './publish/types.js';
export { eventHeaders, eventHeaderNames } from './publish/types.js';
export {
  openBrokerPublisher,
  type BrokerPublisherOptions,
  type OpenedBrokerPublisher,
} from './publish/brokers.js';
export {
  parseBrokerTarget,
  PublishTargetError,
  type BrokerKind,
  type BrokerTarget,
} from './publish/broker-target.js';
export {
  IdempotencyStore,
  MemoryDeliveryStore,
  PgDeliveryStore,
  type AcceptInput,
  type AcceptOutcome,
  type Claim,
  type ClaimResult,
  type DeliveryStore,
  type MemoryDeliveryStoreOptions,
  type PgDeliveryStoreOptions,
  type TaskObservation,
} from './store/index.js';
export type { WebhookKind } from './pipeline/envelope.js';
export {
  TaskConvergence,
  terminalRecord,
  type Observation,
  type ObservationSource,
  type OrderingDecision,
} from './store/index.js';
export { Sidecar, type SidecarOptions, type SidecarTarget } from './sidecar/server.js';
export { verifierDependencies, type VerifierDependencies } from './sidecar/dependencies.js';
export { TrustedKeyResolver, type TrustedKeyResolverOptions } from './keys/trusted-key-resolver.js';
export { PgReplayStore, type PgReplayStoreOptions } from './replay/pg-replay-store.js';
export { RedisReplayStore, type RedisReplayStoreOptions } from './replay/redis-replay-store.js';
export {
  PolledRevocationCheck,
  revocationSourcesFromTrust,
  type PolledRevocationOptions,
  type RevocationSource,
} from './revocation/revocation-check.js';
export { AdmissionTracker, type AdmissionOptions, type KeyObserver } from './admission/tracker.js';
export {
  loadTrustFile,
  parseTrust,
  routeRegistration,
  TrustFileError,
  type RouteDecision,
  type SenderTrust,
  type TrustConfig,
} from './trust/trust-file.js';
export type { ProtocolVersion } from './store/index.js';
// Key discovery as the receiver runs it (brand.json to JWKS, bounded fetches, strict JSON):
// also how the conformance kit finds a graded sender's keys.
export { BrandDiscoveryError, discoverJwksUri } from './keys/brand-discovery.js';
export { DocumentFetchError, FETCH_BUDGETS, fetchJson } from './keys/fetch-json.js';
export { parseKeySet, type KeySet } from './keys/key-set.js';
// What an embedding app needs beside the receiver itself.
export { brandProfile, BRANDS, type Brand, type BrandProfile } from '../shared/brand.js';
export { createLogger, type Logger } from '../shared/infra/logger.js';
export { createPool, type Pool } from '../shared/infra/pg.js';
export type {
  KeyResolver,
  ReplayStore,
  ResolvedKey,
  RevocationCheck,
} from '../shared/signing/verify.js';
export {
  WEBHOOK_ERROR_CODES,
  WebhookVerificationError,
  type WebhookErrorCode,
} from '../shared/errors/webhook-codes.js';

/** The error base every error here extends, and the codes to switch on (README "Errors"). */
export { SvcError, type SvcErrorOptions } from '../shared/errors/base.js';
export { SVC_ERROR_CODES, type SvcErrorCode } from '../shared/errors/codes.js';
