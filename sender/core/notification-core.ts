/**
 * NotificationCore: what task agents call when something happened. It decides what the
 * spec decides (whether a webhook fires, in which shape, to which targets), gives every
 * event a fresh CSPRNG key, and hands the envelopes to the outbox, which freezes their
 * bytes and dispatches them.
 */
import { ACCOUNT_NOTIFICATION_TYPES } from '../../shared/envelope/notification-types.js';
import type { BrandProfile } from '../../shared/brand.js';
import { buildA2aStatusUpdate, buildA2aTask, type A2aVersion } from '../../shared/envelope/a2a.js';
import { buildMcpEnvelope } from '../../shared/envelope/mcp.js';
import {
  isTerminalStatus,
  type PROTOCOL_DOMAINS,
  type TaskStatus,
  type WebhookTaskType,
} from '../../shared/envelope/task-status.js';
import { DuplicateKeyInputError } from '../../shared/errors/task-errors.js';
import type { Logger } from '../../shared/infra/logger.js';
import { silentLogger } from '../../shared/infra/logger.js';
import type { Pool, PoolClient } from '../../shared/infra/pg.js';
import { JsonParseError, parseStrictJson } from '../../shared/json/strict-parse.js';
import type { DeliveryQueue } from '../delivery/queue.js';
import { keyPrefix, newIdempotencyKey } from '../outbox/keys.js';
import { Outbox } from '../outbox/outbox.js';
import type { EventSink, OutboundEvent } from '../outbox/types.js';
import type {
  DeliveryReportDue,
  ImpairmentObserved,
  MediaBuyChannelsApi,
  MediaBuyChannelsConfig,
  MediaBuyTerminal,
} from './channels-api.js';
import { inSpan, traceCarrier, type TraceCarrier } from '../../shared/telemetry/trace-context.js';
import {
  parseA2aPushConfig,
  parsePushNotificationConfig,
  parseSubscriberConfig,
  RegistrationError,
  type TargetRules,
} from './registration.js';
import { SvcError } from '../../shared/errors/base.js';

/** Raw JSON text from a caller that did not parse it; refused when it repeats a key. */
export type JsonObjectInput = Record<string, unknown> | string;

/** Raw JSON input that repeats a key: `duplicate_key_input` (400), naming the field. */
export class DuplicateKeyInError extends DuplicateKeyInputError {
  static override readonly code = 'ERR_DUPLICATE_KEY_IN';

  readonly field: string;
  constructor(field: string, duplicateKeys: string[]) {
    super(duplicateKeys);
    this.field = field;
  }
}

/** Raw JSON input that is not a JSON object: `invalid_json_input` (400). */
export class NotificationInputError extends SvcError {
  static override readonly code = 'ERR_NOTIFICATION_INPUT';

  declare readonly code: 'invalid_json_input';
  /** @deprecated use `code` (the same value). */
  get id(): 'invalid_json_input' {
    return this.code;
  }
  readonly status = 400;
  readonly field: string;
  constructor(field: string) {
    super(`${field} is not a JSON object`, { code: 'invalid_json_input' });
    this.name = 'NotificationInputError';
    this.field = field;
  }
}

export class ChannelsNotConfiguredError extends SvcError {
  static override readonly code = 'ERR_CHANNELS_NOT_CONFIGURED';

  constructor(method: string) {
    super(`NotificationCore.${method}: no media-buy channels were given (options.channels)`);
    this.name = 'ChannelsNotConfiguredError';
  }
}

/** Account-surface notification types (supplement §6.7); anything else is refused there. */
export { ACCOUNT_NOTIFICATION_TYPES };
export type AccountNotificationType = (typeof ACCOUNT_NOTIFICATION_TYPES)[number];

/**
 * NotificationCore as a task runtime calls it, types only: the agents' runtime and its
 * stand-ins (dry runs, recording tests) implement this, so the signatures live once, here.
 */
export type NotificationApi = Pick<
  NotificationCore,
  | 'taskStatusChanged'
  | 'mediaBuyChannelsConfigured'
  | 'impairmentObserved'
  | 'mediaBuyTerminal'
  | 'agentEvent'
  | 'accountNotification'
> &
  Partial<Pick<NotificationCore, 'validateRegistration'>>;

export interface NotificationCoreOptions extends TargetRules {
  pool: Pool;
  queue: DeliveryQueue;
  profile: BrandProfile;
  protocolVersion: '3.1' | '3.2';
  schema?: string;
  logger?: Logger;
  channels?: MediaBuyChannelsApi;
  /** Advertised `delivery_retry_horizon_seconds`; default 24 h. */
  horizonSeconds?: number;
  /** The sink events go to; default an Outbox over `pool`, `schema` and `queue`. */
  sink?: EventSink;
  /** Clock for `timestamp`/`fired_at` (tests). */
  now?: () => Date;
}

export interface A2aRegistration {
  version: A2aVersion;
  /** The transport-level push config as received. */
  config: unknown;
  /** The A2A contextId of the task; defaults to the task id. */
  contextId?: string;
}

export interface TaskStatusChange {
  taskId: string;
  taskType: WebhookTaskType;
  status: TaskStatus;
  /** The status the task's first response carried. */
  initialStatus: TaskStatus;
  /** The request's `push_notification_config`, as received. */
  pushNotificationConfig?: unknown;
  a2aConfig?: A2aRegistration;
  /** The request's top-level `context`, echoed verbatim. */
  context?: JsonObjectInput;
  result?: JsonObjectInput | null;
  message?: string;
  /** Overrides `push_notification_config.operation_id` (never derived from the URL). */
  operationId?: string;
  notificationId?: string;
  protocol?: (typeof PROTOCOL_DOMAINS)[number];
  mediaBuyId?: string;
  principalId?: string;
  client?: PoolClient;
}

export interface AgentEvent {
  /** Agent-level subscriber configs (`url`, `subscriber_id`, optional `authentication`). */
  configs: unknown[];
  agentUrl: string;
  capabilitiesVersion: string;
  reason: string;
  changedPaths?: string[];
  changedAt?: string;
  client?: PoolClient;
}

export interface AccountNotification {
  configs: unknown[];
  notificationType: AccountNotificationType;
  /** Stable across re-emissions of the same state (e.g. per transition). */
  notificationId: string;
  /** The event's own members (account_id, transition...), without the common ones. */
  fields: JsonObjectInput;
  mediaBuyId?: string;
  principalId?: string;
  client?: PoolClient;
}

const NOTIFICATION_ID = /^[A-Za-z0-9_.:-]{1,255}$/;

function objectInput(value: JsonObjectInput, field: string): Record<string, unknown> {
  if (typeof value !== 'string') return value;
  let parsed: unknown;
  try {
    parsed = parseStrictJson(value);
  } catch (err) {
    if (err instanceof JsonParseError && err.code === 'duplicate_key') {
      throw new DuplicateKeyInError(field, err.duplicateKeys);
    }
    throw new NotificationInputError(field);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new NotificationInputError(field);
  }
  return parsed as Record<string, unknown>;
}

export class NotificationCore {
  readonly sink: EventSink;
  readonly profile: BrandProfile;
  readonly protocolVersion: '3.1' | '3.2';
  private readonly options: NotificationCoreOptions;
  private readonly logger: Logger;
  private readonly now: () => Date;

  constructor(options: NotificationCoreOptions) {
    this.options = options;
    this.profile = options.profile;
    this.protocolVersion = options.protocolVersion;
    this.logger = options.logger ?? silentLogger;
    this.now = options.now ?? (() => new Date());
    this.sink =
      options.sink ??
      new Outbox({
        pool: options.pool,
        queue: options.queue,
        ...(options.schema ? { schema: options.schema } : {}),
        ...(options.horizonSeconds ? { horizonSeconds: options.horizonSeconds } : {}),
      });
  }

  /**
   * Request-time check of a task's webhook registration: throws RegistrationError
   * (`INVALID_REQUEST`) for a missing operation_id, a bad URL or a weak legacy credential.
   */
  validateRegistration(input: {
    pushNotificationConfig?: unknown;
    a2aConfig?: A2aRegistration;
    subscriberConfigs?: { configs: unknown[]; channel: 'account' | 'agent'; field: string };
  }) {
    const subs = input.subscriberConfigs;
    if (subs !== undefined) {
      subs.configs.forEach((c, i) =>
        parseSubscriberConfig(c, subs.channel, this.options, `${subs.field}[${i}]`),
      );
    }
    if (input.pushNotificationConfig !== undefined) {
      parsePushNotificationConfig(input.pushNotificationConfig, this.options);
    }
    if (input.a2aConfig !== undefined) {
      if (input.a2aConfig.version !== '0.3' && input.a2aConfig.version !== '1.0') {
        throw new RegistrationError('configuration', 'A2A version must be 0.3 or 1.0');
      }
      parseA2aPushConfig(input.a2aConfig.config, this.options);
    }
  }

  /**
   * A task's status changed. Nothing fires when the initial response was terminal (the
   * result went inline); otherwise one event per registration: the MCP envelope for
   * `push_notification_config`, the A2A shape of the registered version for an A2A
   * transport config, both when both were given. Resolves to the outbox ids.
   */
  taskStatusChanged(change: TaskStatusChange): Promise<string[]> {
    // The root of a delivery's trace (or a child of the caller's span): outbox, dispatch,
    // each attempt and the settle follow it, across the queue (shared/telemetry).
    return inSpan(
      'webhook.emit',
      {
        attributes: {
          'webhook.task_id': change.taskId,
          'webhook.task_status': change.status,
          'webhook.task_type': change.taskType,
        },
      },
      async (span, ctx) => {
        const ids = await this.emitTaskStatus(change, traceCarrier(ctx));
        span.setAttribute('webhook.events', ids.length);
        return ids;
      },
    );
  }

  private async emitTaskStatus(
    change: TaskStatusChange,
    trace: TraceCarrier | undefined,
  ): Promise<string[]> {
    if (isTerminalStatus(change.initialStatus)) return [];
    if (change.pushNotificationConfig === undefined && change.a2aConfig === undefined) return [];
    const context =
      change.context === undefined ? undefined : objectInput(change.context, 'context');
    const result =
      change.result === undefined || change.result === null
        ? change.result
        : objectInput(change.result, 'result');
    const timestamp = this.now().toISOString();
    const events: OutboundEvent[] = [];
    const common = {
      notificationType: change.status,
      taskId: change.taskId,
      taskType: change.taskType,
      ...(change.notificationId ? { notificationId: change.notificationId } : {}),
      ...(change.mediaBuyId ? { mediaBuyId: change.mediaBuyId } : {}),
      ...(change.principalId ? { principalId: change.principalId } : {}),
      // The emit's span: the outbox's span is its child (whatever context manager runs).
      ...(trace ? { trace } : {}),
    };

    if (change.pushNotificationConfig !== undefined) {
      const reg = parsePushNotificationConfig(change.pushNotificationConfig, this.options);
      const key = newIdempotencyKey();
      const payload = buildMcpEnvelope({
        idempotencyKey: key,
        operationId: change.operationId ?? reg.operationId,
        taskId: change.taskId,
        taskType: change.taskType,
        status: change.status,
        timestamp,
        ...(result !== undefined ? { result } : {}),
        ...(change.message !== undefined ? { message: change.message } : {}),
        ...(change.notificationId ? { notificationId: change.notificationId } : {}),
        ...(change.protocol ? { protocol: change.protocol } : {}),
        ...(reg.token ? { token: reg.token } : {}),
        ...(context !== undefined ? { context } : {}),
      });
      events.push({ target: reg.target, payload, idempotencyKey: key, ...common });
    }

    if (change.a2aConfig !== undefined) {
      const target = parseA2aPushConfig(change.a2aConfig.config, this.options);
      const key = newIdempotencyKey();
      const build = isTerminalStatus(change.status) ? buildA2aTask : buildA2aStatusUpdate;
      const payload = build({
        version: change.a2aConfig.version,
        taskId: change.taskId,
        contextId: change.a2aConfig.contextId ?? change.taskId,
        status: change.status,
        timestamp,
        ...(result ? { data: result } : {}),
        ...(change.message !== undefined ? { text: change.message } : {}),
      });
      events.push({ target, payload: withA2aKey(payload, key), idempotencyKey: key, ...common });
    }

    const ids = await this.sink.enqueue(events, change.client);
    this.logger.debug(
      {
        taskId: change.taskId,
        status: change.status,
        keys: events.map((e) => keyPrefix(e.idempotencyKey)),
      },
      'task status events enqueued',
    );
    return ids;
  }

  /** `capabilities.changed` to every agent-level subscriber (publish the snapshot first). */
  async agentEvent(event: AgentEvent): Promise<string[]> {
    const firedAt = this.now().toISOString();
    const notificationId =
      `capabilities.${event.capabilitiesVersion.replace(/[^A-Za-z0-9_.:-]/g, '_')}`.slice(0, 255);
    const events = this.eachSubscriber(
      event.configs,
      'agent',
      'capabilities.changed',
      (target, subscriberId): OutboundEvent => {
        const key = newIdempotencyKey();
        const payload: Record<string, unknown> = {
          idempotency_key: key,
          notification_id: notificationId,
          notification_type: 'capabilities.changed',
          fired_at: firedAt,
          subscriber_id: subscriberId,
          agent_url: event.agentUrl,
          changed_at: event.changedAt ?? firedAt,
          reason: event.reason,
          capabilities_version: event.capabilitiesVersion,
          ...(event.changedPaths ? { changed_paths: event.changedPaths } : {}),
        };
        return {
          target,
          payload,
          idempotencyKey: key,
          notificationType: 'capabilities.changed',
          notificationId,
          subscriberId,
        };
      },
    );
    return this.sink.enqueue(events, event.client);
  }

  /** An account-level event to every subscriber registered for the account. */
  async accountNotification(n: AccountNotification): Promise<string[]> {
    if (!(ACCOUNT_NOTIFICATION_TYPES as readonly string[]).includes(n.notificationType)) {
      throw new RegistrationError(
        'notification_type',
        `${String(n.notificationType)} is not an account-level notification type`,
      );
    }
    if (!NOTIFICATION_ID.test(n.notificationId)) {
      throw new RegistrationError(
        'notification_id',
        `notification_id must match ${NOTIFICATION_ID}`,
      );
    }
    const fields = objectInput(n.fields, 'fields');
    const firedAt = this.now().toISOString();
    const events = this.eachSubscriber(
      n.configs,
      'account',
      n.notificationType,
      (target, subscriberId): OutboundEvent => {
        const key = newIdempotencyKey();
        return {
          target,
          payload: {
            ...fields,
            idempotency_key: key,
            notification_id: n.notificationId,
            notification_type: n.notificationType,
            fired_at: firedAt,
            subscriber_id: subscriberId,
          },
          idempotencyKey: key,
          notificationType: n.notificationType,
          notificationId: n.notificationId,
          subscriberId,
          ...(n.mediaBuyId ? { mediaBuyId: n.mediaBuyId } : {}),
          ...(n.principalId ? { principalId: n.principalId } : {}),
        };
      },
    );
    return this.sink.enqueue(events, n.client);
  }

  /**
   * One event per subscriber of a broadcast. A subscriber whose stored config the sender's
   * rules now refuse (a URL that became disallowed, a config written before the check) is
   * logged and skipped: one bad subscriber never keeps the others from their event
   * (issue 21). Only when every config is refused does the call fail, with the first
   * refusal, so a caller naming one bad subscriber still hears why.
   */
  private eachSubscriber<T>(
    configs: readonly unknown[],
    level: 'agent' | 'account',
    notificationType: string,
    build: (target: ReturnType<typeof parseSubscriberConfig>['target'], subscriberId: string) => T,
  ): T[] {
    const out: T[] = [];
    let first: unknown = null;
    configs.forEach((raw, i) => {
      let parsed: ReturnType<typeof parseSubscriberConfig>;
      try {
        parsed = parseSubscriberConfig(raw, level, this.options, `configs[${i}]`);
      } catch (err) {
        first ??= err;
        this.logger.warn(
          {
            event: 'subscriber_refused',
            notification_type: notificationType,
            config: i,
            reason: (err as Error).message,
          },
          'a subscriber config is refused by the sender rules: skipped, the others are sent',
        );
        return;
      }
      out.push(build(parsed.target, parsed.subscriberId));
    });
    if (out.length === 0 && first !== null) throw first;
    return out;
  }

  private channels(method: string): MediaBuyChannelsApi {
    if (!this.options.channels) throw new ChannelsNotConfiguredError(method);
    return this.options.channels;
  }

  async mediaBuyChannelsConfigured(input: MediaBuyChannelsConfig): Promise<void> {
    return this.channels('mediaBuyChannelsConfigured').mediaBuyChannelsConfigured(input);
  }

  async deliveryReportDue(input: DeliveryReportDue): Promise<string[]> {
    return this.channels('deliveryReportDue').deliveryReportDue(input);
  }

  async impairmentObserved(input: ImpairmentObserved): Promise<string[]> {
    return this.channels('impairmentObserved').impairmentObserved(input);
  }

  async mediaBuyTerminal(input: MediaBuyTerminal): Promise<string[]> {
    return this.channels('mediaBuyTerminal').mediaBuyTerminal(input);
  }
}

/**
 * A2A objects have no envelope member for the delivery key; it rides in the inner
 * object's `metadata` (A2A's extension slot), so receivers can deduplicate.
 */
function withA2aKey(payload: Record<string, unknown>, key: string): Record<string, unknown> {
  const wrapper = payload.task ?? payload.statusUpdate;
  const inner = (wrapper ?? payload) as Record<string, unknown>;
  const metadata = { ...((inner.metadata as Record<string, unknown>) ?? {}), idempotency_key: key };
  const updated = { ...inner, metadata };
  if (payload.task) return { task: updated };
  if (payload.statusUpdate) return { statusUpdate: updated };
  return updated;
}
