/**
 * A package's `measurement_terms` (published `core/measurement-terms.json`): the buyer's
 * proposed billing measurement and makegood terms. Malformed terms are a validation error
 * of the request; well-formed terms this seller cannot honor are TERMS_REJECTED naming the
 * term and what it accepts (the published code, recovery: adjust and retry, or omit the
 * terms to take the product's defaults). Accepted terms are stored on the package and
 * echoed on it.
 */
import { z } from 'zod';
import { taskError, type AnyTaskErrorCode } from '../../runtime/errors.js';

/** The published code (not among the spec digest's codes); a 400-class refusal. */
const TERMS_REJECTED = 'TERMS_REJECTED' as AnyTaskErrorCode;

export const MAKEGOOD_REMEDIES = ['additional_delivery', 'credit', 'invoice_adjustment'] as const;

export const MeasurementTermsSchema = z.looseObject({
  billing_measurement: z
    .looseObject({
      vendor: z.looseObject({
        domain: z.string().regex(/^[A-Za-z0-9.-]{1,253}$/, 'domain must be a host name'),
      }),
      max_variance_percent: z
        .number()
        .min(0)
        .lt(100, 'max_variance_percent must be below 100')
        .optional(),
      measurement_window: z.string().min(1).max(64).optional(),
      finalization_deadline_hours: z.number().int().min(0).optional(),
    })
    .optional(),
  makegood_policy: z
    .looseObject({
      available_remedies: z
        .array(z.enum(MAKEGOOD_REMEDIES))
        .min(1)
        .refine((l) => new Set(l).size === l.length, 'available_remedies must not repeat'),
    })
    .optional(),
});
export type MeasurementTerms = z.output<typeof MeasurementTermsSchema>;

/**
 * What this seller can honor: reconciling two parties' counts within less than
 * MIN_VARIANCE_PERCENT is beyond any third-party measurement it works with, and its
 * reporting matures through these windows.
 */
export const MIN_VARIANCE_PERCENT = 5;
export const MEASUREMENT_WINDOWS = ['live', 'c3', 'c7', 'final', 'post_ivt', 'post_sivt'] as const;

/**
 * TERMS_REJECTED for the first term of package `index` this seller cannot honor. A window
 * is one of ours or one the product itself declares (`productWindows`: its
 * reporting_capabilities.measurement_windows, e.g. a revenue share's commission lock).
 */
export function checkMeasurementTerms(
  terms: MeasurementTerms,
  index: number,
  productWindows: readonly string[] = [],
): void {
  const billing = terms.billing_measurement;
  const at = `packages[${index}].measurement_terms.billing_measurement`;
  if (billing?.max_variance_percent !== undefined) {
    if (billing.max_variance_percent < MIN_VARIANCE_PERCENT) {
      throw taskError(
        TERMS_REJECTED,
        `max_variance_percent ${billing.max_variance_percent} is tighter than this seller can reconcile; ${MIN_VARIANCE_PERCENT} or more is accepted (or omit measurement_terms for the product's defaults)`,
        {
          status: 400,
          field: `${at}.max_variance_percent`,
          details: {
            rejected_term: 'max_variance_percent',
            acceptable: { min_variance_percent: MIN_VARIANCE_PERCENT },
          },
        },
      );
    }
  }
  const window = billing?.measurement_window;
  const known = [...MEASUREMENT_WINDOWS, ...productWindows];
  if (window !== undefined && !known.includes(window)) {
    throw taskError(
      TERMS_REJECTED,
      `measurement_window ${window.slice(0, 64)} is not one this seller reports; it reports ${known.join(', ')}`,
      {
        status: 400,
        field: `${at}.measurement_window`,
        details: {
          rejected_term: 'measurement_window',
          acceptable: { measurement_windows: known },
        },
      },
    );
  }
}
