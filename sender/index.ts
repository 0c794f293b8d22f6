/**
 * The seller's notification core, the package entry point `svc-webhooks/sender`: task
 * handlers call `NotificationCore`; it writes each webhook to the PostgreSQL outbox
 * (`Outbox`, `migrateSender` creates its tables) and dispatches it through BullMQ
 * (`DeliveryQueue`); `DeliveryWorker` processes, in this process or others, sign with the
 * `KeySet` and deliver; `startSender` brings all of them up from a configuration. See
 * README.md.
 */
export {
  NotificationCore,
  NotificationInputError,
  DuplicateKeyInError,
  ChannelsNotConfiguredError,
  ACCOUNT_NOTIFICATION_TYPES,
  type AccountNotification,
  type AccountNotificationType,
  type A2aRegistration,
  type AgentEvent,
  type JsonObjectInput,
  type NotificationApi,
  type NotificationCoreOptions,
  type TaskStatusChange,
} from './core/notification-core.js';
export { RegistrationError, checkTargetUrl, type TargetRules } from './core/registration.js';
export type {
  DeliveryReportDue,
  ImpairmentObserved,
  MediaBuyChannelsApi,
  MediaBuyChannelsConfig,
  MediaBuyTerminal,
} from './core/channels-api.js';
export {
  Outbox,
  OutboxError,
  createStatePool,
  DEFAULT_RETRY_HORIZON_SECONDS,
  type OutboxOptions,
  type OutboxState,
  type RecoveryRow,
} from './outbox/outbox.js';
export {
  DEFAULT_RETENTION_SECONDS,
  maintainPartitions,
  type MaintainOptions,
  type MaintainResult,
} from './outbox/partitions.js';
export type {
  DeliveryAuth,
  EventSink,
  OutboundEvent,
  WebhookChannel,
  WebhookTarget,
} from './outbox/types.js';
export { newIdempotencyKey } from './outbox/keys.js';
export {
  DeliveryQueue,
  DELIVERY_QUEUE_NAME,
  DEFAULT_QUEUE_PREFIX,
  type DeliveryQueueOptions,
} from './delivery/queue.js';
export { deploymentQueuePrefix } from './delivery/queue-prefix.js';
export {
  DeliveryWorker,
  type AttemptReport,
  type DeliveryWorkerOptions,
} from './delivery/worker.js';
export type { Signer } from './delivery/authenticate.js';
export { KeySet, KeySetError, writeNewKey, type KeySetOptions } from './keys/key-set.js';
export { keysRouter, brandJson, type BrandAgent, type KeysRouter } from './keys/router.js';
export {
  ActivityLog,
  type ActivityLogOptions,
  type WebhookActivityRecord,
} from './activity/activity-log.js';
export { SenderMetrics } from './metrics.js';
export { migrateSender, DEFAULT_SENDER_SCHEMA } from './schema.js';
export {
  MediaBuyChannels,
  acceleratedClock,
  wallClock,
  type MediaBuyChannelsOptions,
  type ReportingClock,
  channelOptionsFromConfig,
} from './channels/index.js';
// The whole sender of a seller process from a configuration (svc start, svc approve).
export {
  startSender,
  type SenderConsoleOptions,
  type SenderRuntime,
  type StartSenderOptions,
} from './runtime/start-sender.js';
export {
  senderNotifications,
  type ReportSource,
  type SenderNotifications,
  type SenderNotificationsOptions,
} from './runtime/notifications.js';
// Types only: the console itself loads on demand (SenderRuntime.startConsole).
export type { OAuthClientAdmin, RunningConsole } from './console/handle.js';
export {
  TASK_STATUSES,
  WEBHOOK_TASK_TYPES,
  type TaskStatus,
  type WebhookTaskType,
} from '../shared/envelope/task-status.js';
// What a seller's process needs beside the core itself.
export { brandProfile, BRANDS, type Brand, type BrandProfile } from '../shared/brand.js';
export { createLogger, type Logger } from '../shared/infra/logger.js';
export { createPool, type Pool, type PoolClient } from '../shared/infra/pg.js';
export { createRedis, hashTaggedPrefix } from '../shared/infra/redis.js';
export {
  generateSigningKey,
  publishedJwk,
  type JWK,
  type SigningKey,
} from '../shared/signing/keys.js';
export { TaskError, type TaskErrorCode } from '../shared/errors/task-errors.js';

/** The error base every error here extends, and the codes to switch on (README "Errors"). */
export { SvcError, type SvcErrorOptions } from '../shared/errors/base.js';
export { SVC_ERROR_CODES, type SvcErrorCode } from '../shared/errors/codes.js';
