/**
 * Webhook registrations buyers send: `push_notification_config` (supplement §6.6) and
 * `reporting_webhook` (§6.5). A present `authentication` block selects the legacy
 * HMAC/Bearer mode for that channel; its absence selects RFC 9421.
 */
import { z } from 'zod';

export const AUTH_SCHEMES = ['Bearer', 'HMAC-SHA256'] as const;
export type AuthScheme = (typeof AUTH_SCHEMES)[number];

/** Deprecated legacy block: exactly one scheme and a credential of 32+ characters. */
export const LegacyAuthenticationSchema = z.strictObject({
  schemes: z.array(z.enum(AUTH_SCHEMES)).length(1),
  credentials: z.string().min(32),
});
export type LegacyAuthentication = z.infer<typeof LegacyAuthenticationSchema>;

export const OPERATION_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,255}$/;

export const PushNotificationConfigSchema = z.looseObject({
  url: z.url(),
  /**
   * Optional in the schema, yet a seller must refuse an AdCP registration without it
   * (`INVALID_REQUEST`); that check belongs to the seller, not to this shape.
   */
  operation_id: z.string().regex(OPERATION_ID_PATTERN).optional(),
  token: z.string().min(16).max(4096).optional(),
  authentication: LegacyAuthenticationSchema.optional(),
});
export type PushNotificationConfig = z.infer<typeof PushNotificationConfigSchema>;

export const REPORTING_FREQUENCIES = ['hourly', 'daily', 'monthly'] as const;

export const ReportingWebhookSchema = z.looseObject({
  url: z.url(),
  token: z.string().min(16).optional(),
  /**
   * Required by the 3.x JSON schema, but requiring it would force every reporting channel
   * into the deprecated legacy mode while RFC 9421 is the baseline ([conflict/gap] in
   * §6.5). We accept its absence (9421 mode) and validate it when present.
   */
  authentication: LegacyAuthenticationSchema.optional(),
  reporting_frequency: z.enum(REPORTING_FREQUENCIES),
  /** Unique; `impressions` and `spend` are always reported. Omitted = all metrics. */
  requested_metrics: z
    .array(z.string().min(1))
    .refine((m) => new Set(m).size === m.length, { message: 'metrics must be unique' })
    .optional(),
});
export type ReportingWebhook = z.infer<typeof ReportingWebhookSchema>;
