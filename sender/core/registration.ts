/**
 * Registration checks at request time (spec "Push notification config", supplement
 * §6.6): a webhook registration the seller cannot honour is refused with the request,
 * never dropped later. Legacy credentials select legacy delivery; none selects RFC 9421.
 */
import { isIP } from 'node:net';
import { TaskError } from '../../shared/errors/task-errors.js';
import { legacyCredentialProblem } from '../../shared/legacy/credential.js';
import { isReservedAddress } from '../../shared/net/ssrf.js';
import type { DeliveryAuth, WebhookChannel, WebhookTarget } from '../outbox/types.js';

export const OPERATION_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,255}$/;
/** The spec's `INVALID_REQUEST` (HTTP 400), naming the field at fault: a TaskError. */
export class RegistrationError extends TaskError {
  static override readonly code = 'ERR_REGISTRATION';

  declare readonly field: string;
  constructor(field: string, message: string) {
    super('INVALID_REQUEST', message, { field });
    this.name = 'RegistrationError';
  }
}

export interface TargetRules {
  /** Hosts exempt from https-only and reserved-address rules (local testing). */
  allowHosts?: string[];
}

function bare(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** A webhook URL the sender will deliver to; DNS is checked again at every connect. */
export function checkTargetUrl(value: unknown, field: string, rules: TargetRules = {}): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 2048) {
    throw new RegistrationError(field, `${field} must be a URL of at most 2048 characters`);
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new RegistrationError(field, `${field} is not a valid URL`);
  }
  const host = bare(url.hostname.toLowerCase());
  const allowed = (rules.allowHosts ?? []).some((h) => bare(h.toLowerCase()) === host);
  if (url.username || url.password) {
    throw new RegistrationError(field, `${field} must not carry credentials`);
  }
  // Local testing only: the refusal names the setting that allows this host (the variable,
  // and the flag of `svc start`, which reads it at start: a restart applies it).
  const allowWith = `(for local testing, allow the host with SVC_SENDER_ALLOW_HOSTS=${url.hostname}: restart \`svc start --allow-hosts ${url.hostname}\`)`;
  if (url.protocol !== 'https:' && !(allowed && url.protocol === 'http:')) {
    throw new RegistrationError(field, `${field} must use https ${allowWith}`);
  }
  if (!allowed && isIP(host) && isReservedAddress(host)) {
    throw new RegistrationError(field, `${field} points at a reserved address ${allowWith}`);
  }
  return value;
}

/** A legacy shared secret or token: at least 32 characters and not trivially weak. */
export function checkLegacyCredential(
  value: unknown,
  field: string,
  scheme?: 'Bearer' | 'HMAC-SHA256',
): string {
  const problem = legacyCredentialProblem(value, scheme ? { scheme } : {});
  if (problem !== null) throw new RegistrationError(field, `${field}: ${problem}`);
  return value as string;
}

/** `authentication` block → delivery auth; absent → RFC 9421. */
export function deliveryAuthOf(value: unknown, field: string): DeliveryAuth {
  if (value === undefined || value === null) return { mode: 'rfc9421' };
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new RegistrationError(field, `${field} must be an object`);
  }
  const { schemes, credentials } = value as { schemes?: unknown; credentials?: unknown };
  if (!Array.isArray(schemes) || schemes.length !== 1) {
    throw new RegistrationError(
      `${field}.schemes`,
      `${field}.schemes must hold exactly one scheme`,
    );
  }
  const scheme = schemes[0];
  if (scheme !== 'HMAC-SHA256' && scheme !== 'Bearer') {
    throw new RegistrationError(
      `${field}.schemes`,
      `${field}.schemes must be HMAC-SHA256 or Bearer`,
    );
  }
  const secret = checkLegacyCredential(credentials, `${field}.credentials`, scheme);
  return scheme === 'HMAC-SHA256' ? { mode: 'hmac', secret } : { mode: 'bearer', token: secret };
}

export interface PushRegistration {
  target: WebhookTarget;
  operationId: string;
  token?: string;
}

/** Validates a task's `push_notification_config`. */
export function parsePushNotificationConfig(
  value: unknown,
  rules: TargetRules = {},
  channel: WebhookChannel = 'task',
  field = 'push_notification_config',
): PushRegistration {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new RegistrationError(field, `${field} must be an object`);
  }
  const c = value as Record<string, unknown>;
  const url = checkTargetUrl(c.url, `${field}.url`, rules);
  if (c.operation_id === undefined) {
    throw new RegistrationError(`${field}.operation_id`, `${field}.operation_id is required`);
  }
  if (typeof c.operation_id !== 'string' || !OPERATION_ID_PATTERN.test(c.operation_id)) {
    throw new RegistrationError(
      `${field}.operation_id`,
      `${field}.operation_id must match ${OPERATION_ID_PATTERN}`,
    );
  }
  if (
    c.token !== undefined &&
    (typeof c.token !== 'string' || c.token.length < 16 || c.token.length > 4096)
  ) {
    throw new RegistrationError(`${field}.token`, `${field}.token must be 16-4096 characters`);
  }
  const auth = deliveryAuthOf(c.authentication, `${field}.authentication`);
  return {
    target: { url, auth, channel },
    operationId: c.operation_id,
    ...(typeof c.token === 'string' ? { token: c.token } : {}),
  };
}

/** An A2A transport-level push config (`pushNotificationConfig` / `taskPushNotificationConfig`). */
export function parseA2aPushConfig(
  value: unknown,
  rules: TargetRules = {},
  field = 'configuration.taskPushNotificationConfig',
): WebhookTarget {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new RegistrationError(field, `${field} must be an object`);
  }
  const c = value as Record<string, unknown>;
  const url = checkTargetUrl(c.url, `${field}.url`, rules);
  return {
    url,
    auth: deliveryAuthOf(c.authentication, `${field}.authentication`),
    channel: 'push',
  };
}

/** An account- or agent-level subscriber config (`notification_configs[]`). */
export interface SubscriberConfig {
  url: string;
  subscriber_id: string;
  authentication?: unknown;
}

export function parseSubscriberConfig(
  value: unknown,
  channel: 'account' | 'agent',
  rules: TargetRules = {},
  field = 'notification_configs[]',
): { target: WebhookTarget; subscriberId: string } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new RegistrationError(field, `${field} must be an object`);
  }
  const c = value as Record<string, unknown>;
  const url = checkTargetUrl(c.url, `${field}.url`, rules);
  if (typeof c.subscriber_id !== 'string' || !OPERATION_ID_PATTERN.test(c.subscriber_id)) {
    throw new RegistrationError(`${field}.subscriber_id`, `${field}.subscriber_id is required`);
  }
  return {
    target: { url, auth: deliveryAuthOf(c.authentication, `${field}.authentication`), channel },
    subscriberId: c.subscriber_id,
  };
}
