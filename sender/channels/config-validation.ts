/**
 * Validation of the two per-buy channel configs a buyer registers (supplement §6.5, §6.6).
 * Every refusal is `INVALID_REQUEST` (HTTP 400), as for task registrations in
 * `sender/core/registration.ts` whose URL and credential rules are reused here, and names
 * the member at fault in `field`.
 */
import { checkLegacyCredential, checkTargetUrl, RegistrationError } from '../core/registration.js';
import type { DeliveryAuth } from '../outbox/types.js';
import { channelError } from './errors.js';
import {
  REPORTING_FREQUENCIES,
  type LegacyAuthentication,
  type PushNotificationConfig,
  type ReportingFrequency,
  type ReportingWebhook,
} from './types.js';

export interface UrlPolicy {
  /**
   * Hosts exempt from the https-only and reserved-address rules (local testing), as in
   * the delivery worker's allow-list.
   */
  allowHosts?: string[];
}

const OPERATION_ID = /^[A-Za-z0-9_.:-]{1,255}$/;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(field: string, message: string) {
  return channelError('INVALID_REQUEST', message, field);
}

/** The shared registration rules, refusing with this part's error type. */
function registrationRule<T>(check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof RegistrationError) throw invalid(err.field, err.message);
    throw err;
  }
}

function checkUrl(value: unknown, field: string, policy: UrlPolicy): string {
  if (value === undefined || value === null) throw invalid(field, `${field} is required`);
  return registrationRule(() =>
    checkTargetUrl(value, field, { allowHosts: policy.allowHosts ?? [] }),
  );
}

function checkToken(value: unknown, field: string, max: number): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length < 16 || value.length > max) {
    throw invalid(field, `${field} must be a string of 16 to ${max} characters`);
  }
  return value;
}

/** A legacy credential: at least 32 characters and not trivially weak. */
function checkCredentials(value: unknown, field: string): string {
  if (typeof value !== 'string') throw invalid(field, `${field} is required`);
  return registrationRule(() => checkLegacyCredential(value, field));
}

function checkAuthentication(value: unknown, prefix: string): LegacyAuthentication | undefined {
  const field = `${prefix}.authentication`;
  if (value === undefined) return undefined;
  if (!isObject(value)) throw invalid(field, `${field} must be an object`);
  const extra = Object.keys(value).filter((k) => k !== 'schemes' && k !== 'credentials');
  if (extra.length > 0) throw invalid(`${field}.${extra[0]}`, `${field} has unknown members`);
  const schemes = value.schemes;
  if (
    !Array.isArray(schemes) ||
    schemes.length !== 1 ||
    (schemes[0] !== 'Bearer' && schemes[0] !== 'HMAC-SHA256')
  ) {
    throw invalid(
      `${field}.schemes`,
      `${field}.schemes must be exactly one of Bearer, HMAC-SHA256`,
    );
  }
  const credentials = checkCredentials(value.credentials, `${field}.credentials`);
  return { schemes: [schemes[0]], credentials };
}

/** `push_notification_config` on a media buy (impairment channel). */
export function validatePushNotificationConfig(
  input: unknown,
  policy: UrlPolicy = {},
  prefix = 'push_notification_config',
): PushNotificationConfig {
  if (!isObject(input)) throw invalid(prefix, `${prefix} must be an object`);
  const url = checkUrl(input.url, `${prefix}.url`, policy);
  if (input.operation_id === undefined || input.operation_id === null) {
    throw invalid(
      `${prefix}.operation_id`,
      `${prefix}.operation_id is required for a webhook registration`,
    );
  }
  if (typeof input.operation_id !== 'string' || !OPERATION_ID.test(input.operation_id)) {
    throw invalid(`${prefix}.operation_id`, `${prefix}.operation_id must match ${OPERATION_ID}`);
  }
  const token = checkToken(input.token, `${prefix}.token`, 4096);
  const authentication = checkAuthentication(input.authentication, prefix);
  const out: PushNotificationConfig = { ...input, url, operation_id: input.operation_id };
  if (token === undefined) delete out.token;
  if (authentication) out.authentication = authentication;
  return out;
}

/** `reporting_webhook` on a media buy (delivery-report channel). */
export function validateReportingWebhook(
  input: unknown,
  policy: UrlPolicy = {},
  prefix = 'reporting_webhook',
): ReportingWebhook {
  if (!isObject(input)) throw invalid(prefix, `${prefix} must be an object`);
  const url = checkUrl(input.url, `${prefix}.url`, policy);
  const frequency = input.reporting_frequency;
  if (frequency === undefined) {
    throw invalid(`${prefix}.reporting_frequency`, `${prefix}.reporting_frequency is required`);
  }
  if (!(REPORTING_FREQUENCIES as readonly unknown[]).includes(frequency)) {
    throw invalid(
      `${prefix}.reporting_frequency`,
      `${prefix}.reporting_frequency must be one of ${REPORTING_FREQUENCIES.join(', ')}`,
    );
  }
  const token = checkToken(input.token, `${prefix}.token`, 4096);
  const authentication = checkAuthentication(input.authentication, prefix);
  const metrics = input.requested_metrics;
  if (
    metrics !== undefined &&
    (!Array.isArray(metrics) ||
      metrics.some((m) => typeof m !== 'string' || m.length === 0) ||
      new Set(metrics).size !== metrics.length)
  ) {
    throw invalid(
      `${prefix}.requested_metrics`,
      `${prefix}.requested_metrics must be unique metric names`,
    );
  }
  const out: ReportingWebhook = {
    ...input,
    url,
    reporting_frequency: frequency as ReportingFrequency,
  };
  if (token === undefined) delete out.token;
  if (authentication) out.authentication = authentication;
  return out;
}

/** Presence of `authentication` selects the legacy mode; otherwise RFC 9421. */
export function deliveryAuthFor(config: { authentication?: LegacyAuthentication }): DeliveryAuth {
  const auth = config.authentication;
  if (!auth) return { mode: 'rfc9421' };
  return auth.schemes[0] === 'HMAC-SHA256'
    ? { mode: 'hmac', secret: auth.credentials }
    : { mode: 'bearer', token: auth.credentials };
}
