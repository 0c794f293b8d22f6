/**
 * The receiver library's public surface: embed `WebhookReceiver` behind the Koa middleware
 * or the node:http listener, pick a publisher, and give it the trust file's key resolver,
 * revocation check and durable replay cache. See README.md.
 */
export { WebhookReceiver } from './pipeline/receiver.js';
export type {
  ReceiverRequest,
  ReceiverResponse,
  WebhookReceiverOptions,
} from './pipeline/receiver.js';
export { ReceiverMetrics } from './pipeline/metrics.js';
export { webhookMiddleware, type KoaReceiverOptions } from './koa.js';
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
  type ServerLimits,
} from './server-limits.js';
export { HandlerPublisher, type EventHandler } from './publish/handler.js';
export { ForwardPublisher, ForwardError, checkForwardUrl } from './publish/forward.js';
export { DurableQueue, type QueueItem } from './publish/queue.js';
export type { Publisher, ReceivedEvent } from './publish/types.js';
export { IdempotencyStore, type Claim, type ClaimResult } from './idempotency/store.js';
export {
  TaskConvergence,
  terminalRecord,
  type Observation,
  type ObservationSource,
  type OrderingDecision,
} from './ordering/convergence.js';
export { Sidecar, type SidecarOptions, type SidecarTarget } from './sidecar/server.js';
export { verifierDependencies } from './sidecar/dependencies.js';
export { TrustedKeyResolver, type TrustedKeyResolverOptions } from './keys/trusted-key-resolver.js';
export { PgReplayStore } from './replay/pg-replay-store.js';
export { AdmissionTracker, type AdmissionOptions, type KeyObserver } from './admission/tracker.js';
export {
  loadTrustFile,
  parseTrust,
  routeRegistration,
  type TrustConfig,
} from './trust/trust-file.js';
