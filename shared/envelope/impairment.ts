/**
 * An impairment (`core/impairment.json`, supplement §6.4): an item of
 * `get_media_buys.media_buys[].impairments[]` and, with the buy's `health`, the payload of
 * an impairment webhook. Extra members are allowed.
 */
import { z } from 'zod';

export const IMPAIRMENT_RESOURCE_TYPES = [
  'audience',
  'creative',
  'catalog_item',
  'event_source',
  'property',
] as const;
export const IMPAIRMENT_STATES = [
  'suspended',
  'rejected',
  'withdrawn',
  'insufficient',
  'depublished',
] as const;
export const IMPAIRMENT_REASON_CODES = [
  'policy_violation',
  'consent_expired',
  'ttl_expired',
  'pii_audit_failed',
  'seller_removed',
  'content_rejected',
  'identity_authorization_revoked',
  'identity_authorization_expired',
  'source_private',
  'source_offline',
  'property_depublished',
] as const;
export const MEDIA_BUY_HEALTH = ['ok', 'impaired'] as const;

export const ImpairmentSchema = z.looseObject({
  /** Equals the webhook `notification_id`; stable across re-emissions and the closing fire. */
  impairment_id: z.string().min(1),
  resource_type: z.enum(IMPAIRMENT_RESOURCE_TYPES),
  resource_id: z.string().min(1),
  package_ids: z.array(z.string()).min(1),
  transition: z.looseObject({
    from: z
      .string()
      .regex(/^[a-z][a-z0-9_]*$/)
      .optional(),
    to: z.enum(IMPAIRMENT_STATES),
  }),
  reason_code: z.enum(IMPAIRMENT_REASON_CODES),
  observed_at: z.iso.datetime({ offset: true }),
  reason: z.string().max(500).optional(),
  remediation: z.string().max(500).optional(),
});
export type Impairment = z.infer<typeof ImpairmentSchema>;

/** The webhook result for an impairment: the impairment plus the buy's updated health. */
export const ImpairmentWebhookResultSchema = ImpairmentSchema.extend({
  health: z.enum(MEDIA_BUY_HEALTH),
});
