/**
 * Impairment validation and coalescence classes (supplement §4.6, §6.4).
 *
 * The reason-code enum names no "fraud" or "brand safety" code, so the latency-sensitive
 * class is a mapping of ours: the codes where serving on would put the buyer's money or
 * brand next to bad traffic or content.
 * - brand safety: `policy_violation`, `content_rejected`, `property_depublished`
 * - fraud / identity compromise: `identity_authorization_revoked`, `pii_audit_failed`
 * An impairment may also say so itself with the extra member `category: "fraud"` or
 * `category: "brand_safety"`. Everything else is general (≤ 5 min window).
 */
import { z } from 'zod';
import { channelError } from './errors.js';
import { IMPAIRMENT_REASON_CODES, type Impairment } from './types.js';

export type ImpairmentKind = 'general' | 'latency_sensitive';

export const DEFAULT_LATENCY_SENSITIVE_REASON_CODES: readonly string[] = [
  'policy_violation',
  'content_rejected',
  'property_depublished',
  'identity_authorization_revoked',
  'pii_audit_failed',
];

/** Defaults are also the ceilings: a seller may declare shorter, never longer (§4.6). */
export const GENERAL_WINDOW_MAX_SECONDS = 300;
/** "Sub-minute or none": the ceiling is 59 s, the default none. */
export const LATENCY_SENSITIVE_WINDOW_MAX_SECONDS = 59;

export interface CoalescenceWindows {
  generalSeconds: number;
  latencySensitiveSeconds: number;
  latencySensitiveReasonCodes: readonly string[];
}

export interface CoalescenceOptions {
  generalSeconds?: number;
  latencySensitiveSeconds?: number;
  latencySensitiveReasonCodes?: readonly string[];
}

export function coalescenceWindows(options: CoalescenceOptions = {}): CoalescenceWindows {
  const general = options.generalSeconds ?? GENERAL_WINDOW_MAX_SECONDS;
  const sensitive = options.latencySensitiveSeconds ?? 0;
  if (!Number.isFinite(general) || general < 0 || general > GENERAL_WINDOW_MAX_SECONDS) {
    throw new RangeError(`coalescence.generalSeconds must be 0-${GENERAL_WINDOW_MAX_SECONDS}`);
  }
  if (
    !Number.isFinite(sensitive) ||
    sensitive < 0 ||
    sensitive > LATENCY_SENSITIVE_WINDOW_MAX_SECONDS
  ) {
    throw new RangeError(
      `coalescence.latencySensitiveSeconds must be 0-${LATENCY_SENSITIVE_WINDOW_MAX_SECONDS}`,
    );
  }
  return {
    generalSeconds: general,
    latencySensitiveSeconds: sensitive,
    latencySensitiveReasonCodes:
      options.latencySensitiveReasonCodes ?? DEFAULT_LATENCY_SENSITIVE_REASON_CODES,
  };
}

export function impairmentKind(
  impairment: Impairment,
  windows: CoalescenceWindows,
): ImpairmentKind {
  const category = impairment.category;
  if (category === 'fraud' || category === 'brand_safety') return 'latency_sensitive';
  return windows.latencySensitiveReasonCodes.includes(impairment.reason_code)
    ? 'latency_sensitive'
    : 'general';
}

export function windowSeconds(kind: ImpairmentKind, windows: CoalescenceWindows): number {
  return kind === 'general' ? windows.generalSeconds : windows.latencySensitiveSeconds;
}

const dateTime = z.iso.datetime({ offset: true });

const impairmentSchema = z.looseObject({
  impairment_id: z.string().regex(/^[A-Za-z0-9_.:-]{1,255}$/),
  resource_type: z.enum(['audience', 'creative', 'catalog_item', 'event_source', 'property']),
  resource_id: z.string().min(1),
  package_ids: z.array(z.string().min(1)).min(1),
  transition: z.looseObject({
    from: z
      .string()
      .regex(/^[a-z][a-z0-9_]*$/)
      .optional(),
    to: z.enum(['suspended', 'rejected', 'withdrawn', 'insufficient', 'depublished']),
  }),
  reason_code: z.enum(IMPAIRMENT_REASON_CODES),
  observed_at: dateTime,
  reason: z.string().max(500).optional(),
  remediation: z.string().max(500).optional(),
  resolved_at: dateTime.optional(),
});

/** Checks an impairment against `core/impairment.json`; the error names the first bad field. */
export function validateImpairment(input: unknown): Impairment {
  const parsed = impairmentSchema.safeParse(input);
  if (parsed.success) return parsed.data as Impairment;
  const issue = parsed.error.issues[0];
  const path = ['impairment', ...(issue?.path ?? []).map(String)].join('.');
  throw channelError('VALIDATION_ERROR', `${path}: ${issue?.message ?? 'invalid'}`, path);
}
