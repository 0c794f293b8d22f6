/**
 * What create_media_buy, update_media_buy and get_media_buys accept: the published
 * request (3.1/3.2) and the spec's older forms (`buyer_ref`, `brand_manifest`, `updates{}`,
 * `start_time` as an object), mapped onto one internal model here so the handlers see
 * one shape.
 */
import { z } from 'zod';
import {
  BrandManifestSchema,
  DateSchema,
  DateTimeSchema,
  requireIdempotencyKey,
} from '../../runtime/validation.js';
import { PaginationRequestSchema } from '../cursor.js';
import { MeasurementTermsSchema } from './terms.js';

export const positive = (what: string) =>
  z.number({ error: `${what} must be a number` }).refine((n) => n > 0 && Number.isFinite(n), {
    message: `${what} must be greater than 0`,
  });

const CreativeAssignmentsSchema = z
  .array(z.looseObject({ creative_id: z.string().min(1).max(255) }))
  .max(100);

const PackageSchema = z.looseObject({
  /** The spec's older form; the published package has none. */
  buyer_ref: z.string().min(1).max(255).optional(),
  product_id: z.string().min(1).max(255),
  pricing_option_id: z.string().min(1).max(255),
  budget: positive('budget'),
  bid_price: positive('bid_price').optional(),
  paused: z.boolean().optional(),
  targeting_overlay: z.record(z.string(), z.unknown()).optional(),
  creative_ids: z.array(z.string().min(1).max(255)).max(100).optional(),
  creatives: CreativeAssignmentsSchema.optional(),
  creative_assignments: CreativeAssignmentsSchema.optional(),
  measurement_terms: MeasurementTermsSchema.optional(),
});
export type PackageRequest = z.output<typeof PackageSchema>;

/** Every creative a package request names, in any of the three forms. */
export function packageCreativeIds(pkg: {
  creative_ids?: string[] | undefined;
  creatives?: Array<{ creative_id: string }> | undefined;
  creative_assignments?: Array<{ creative_id: string }> | undefined;
}): string[] {
  return [
    ...new Set([
      ...(pkg.creative_ids ?? []),
      ...(pkg.creatives ?? []).map((c) => c.creative_id),
      ...(pkg.creative_assignments ?? []).map((c) => c.creative_id),
    ]),
  ];
}

/** Published: `"asap"` or a date-time; older: `{type: asap|scheduled|date}`, or a date. */
export const StartTimeSchema = z.union(
  [
    z.literal('asap'),
    DateTimeSchema,
    DateSchema,
    z.looseObject({ type: z.literal('asap') }),
    z.looseObject({ type: z.literal('scheduled'), datetime: DateTimeSchema }),
    z.looseObject({ type: z.literal('date'), date: DateSchema }),
  ],
  { error: 'start_time must be "asap" or an ISO 8601 date-time' },
);

/**
 * The published request requires `idempotency_key` on create/update_media_buy; the spec's
 * older forms had none and stay accepted without it. A request is in the older form when it
 * uses an older-only member (create: `buyer_ref`, `brand_manifest`, `start_time` as an
 * object; update: `updates{}`).
 */
/** A whole-request rule checked even when members failed (every field named at once). */
const ALWAYS = { when: () => true } as const;

export const CreateMediaBuySchema = z
  .looseObject({
    buyer_ref: z.string().min(1).max(255).optional(),
    /** Required unless the published `brand: {domain}` names the brand. */
    brand_manifest: BrandManifestSchema.optional(),
    brand: z
      .looseObject({
        domain: z.string().regex(/^[A-Za-z0-9.-]{1,253}$/, 'domain must be a host name'),
      })
      .optional(),
    /** `{account_id}`, or the natural key `{brand, operator}` (accepted; one account per principal). */
    account: z
      .union([
        z.looseObject({ account_id: z.string().min(1).max(128) }),
        z.looseObject({ brand: z.looseObject({}), operator: z.string().min(1).max(253) }),
      ])
      .optional(),
    total_budget: z
      .looseObject({
        amount: positive('total_budget.amount'),
        currency: z.string().regex(/^[A-Z]{3}$/),
      })
      .optional(),
    /** Published: execute a committed proposal (media-buy-proposal.ts) instead of packages. */
    proposal_id: z.string().min(1).max(255).optional(),
    packages: z.array(PackageSchema).min(1, 'at least one package is required').max(50).optional(),
    start_time: StartTimeSchema,
    end_time: z.union([DateTimeSchema, DateSchema], {
      error: 'end_time must be an ISO 8601 date-time',
    }),
    /** Published: create the buy with delivery held. */
    paused: z.boolean().optional(),
    push_notification_config: z.unknown().optional(),
    reporting_webhook: z.unknown().optional(),
    idempotency_key: z.string().optional(),
    context: z.unknown().optional(),
  })
  .refine(
    ...requireIdempotencyKey(
      (v) =>
        v.buyer_ref !== undefined ||
        v.brand_manifest !== undefined ||
        (typeof v.start_time === 'object' && v.start_time !== null),
    ),
  )
  // Published: packages, or proposal_id with total_budget (mutually exclusive in
  // 3.2.0-beta.5). Checked with the other members (`when`), naming every field at once.
  .refine((v) => v.proposal_id !== undefined || v.packages !== undefined, {
    ...ALWAYS,
    path: ['packages'],
    message: 'packages is required (or a proposal_id with total_budget)',
    params: { keyword: 'required' },
  })
  // Published: brand {domain}; the older form's brand_manifest names it too. Checked here
  // with the other members, so a request missing it is refused in the same round.
  .refine((v) => v.brand !== undefined || v.brand_manifest !== undefined, {
    ...ALWAYS,
    path: ['brand'],
    message: 'brand is required ({domain}; or the older brand_manifest)',
    params: { keyword: 'required' },
  })
  .refine((v) => v.proposal_id === undefined || v.packages === undefined, {
    ...ALWAYS,
    path: ['packages'],
    message: 'give packages or proposal_id, not both',
  })
  .refine((v) => v.proposal_id === undefined || v.total_budget !== undefined, {
    ...ALWAYS,
    path: ['total_budget'],
    message: 'total_budget is required when executing a proposal',
    params: { keyword: 'required' },
  });
/** What the schema accepts: packages, or a proposal_id the handler turns into packages. */
export type CreateMediaBuyInput = z.output<typeof CreateMediaBuySchema>;
/** The request as create works on it: its packages always there. */
export type CreateMediaBuyRequest = CreateMediaBuyInput & { packages: PackageRequest[] };

export function startInstant(start: z.output<typeof StartTimeSchema>, now: Date): Date {
  if (typeof start === 'string') {
    if (start === 'asap') return now;
    return new Date(/^\d{4}-\d{2}-\d{2}$/.test(start) ? `${start}T00:00:00Z` : start);
  }
  if (start.type === 'asap') return now;
  if (start.type === 'scheduled') return new Date(start.datetime as string);
  return new Date(`${start.date as string}T00:00:00Z`);
}

export function endInstant(end: string): Date {
  return new Date(/^\d{4}-\d{2}-\d{2}$/.test(end) ? `${end}T23:59:59Z` : end);
}

const PackageUpdateSchema = z.looseObject({
  package_id: z.string().min(1),
  budget: positive('budget').optional(),
  paused: z.boolean().optional(),
  canceled: z.boolean().optional(),
  creative_ids: z.array(z.string().min(1)).optional(),
  creative_assignments: CreativeAssignmentsSchema.optional(),
  creatives: CreativeAssignmentsSchema.optional(),
  targeting_overlay: z.record(z.string(), z.unknown()).optional(),
});

export const UpdateMediaBuySchema = z
  .looseObject({
    media_buy_id: z.string().min(1).max(255),
    account: z.looseObject({}).optional(),
    /** Published: the revision the buyer last saw; a different one is a conflict. */
    revision: z.number().int().min(1).optional(),
    /** Published top-level members. */
    paused: z.boolean().optional(),
    canceled: z.boolean().optional(),
    cancellation_reason: z.string().max(1000).optional(),
    end_time: DateTimeSchema.optional(),
    packages: z.array(PackageUpdateSchema).max(50).optional(),
    /**
     * Published 3.2: the buy's new aggregate budget, spread over its packages in proportion
     * to their current budgets; never with `packages` (which would set them twice).
     */
    total_budget: z
      .looseObject({
        amount: z.number().positive().max(1e12),
        currency: z.string().regex(/^[A-Z]{3}$/, 'currency must be an ISO 4217 code'),
      })
      .optional(),
    /** The spec's older form. */
    updates: z
      .looseObject({
        budget_change: z
          .number()
          .refine(Number.isFinite, 'budget_change must be a finite number')
          .optional(),
        end_time: DateTimeSchema.optional(),
        status: z.enum(['active', 'paused', 'canceled']).optional(),
        targeting: z.record(z.string(), z.unknown()).optional(),
        packages: z.array(PackageUpdateSchema).optional(),
      })
      .optional(),
    push_notification_config: z.unknown().optional(),
    reporting_webhook: z.unknown().optional(),
    idempotency_key: z.string().optional(),
    context: z.unknown().optional(),
  })
  .refine(...requireIdempotencyKey((v) => v.updates !== undefined))
  .refine((v) => v.total_budget === undefined || v.packages === undefined, {
    path: ['total_budget'],
    message: 'total_budget cannot be combined with packages: send one or the other',
  });
export type UpdateMediaBuyRequest = z.output<typeof UpdateMediaBuySchema>;

/** One package change, with where it came from in the request (for error fields). */
export interface PackageChange {
  package_id: string;
  budget?: number | undefined;
  paused?: boolean | undefined;
  creative_ids?: string[];
  targeting_overlay?: Record<string, unknown> | undefined;
  field: string;
}

/** An update in the internal model, whichever form the request used. */
export interface UpdateIntent {
  endTime?: { value: string; field: string };
  budgetChange?: number;
  /** Published total_budget: the new aggregate, spread proportionally. */
  totalBudget?: { amount: number; currency: string };
  status?: { value: 'active' | 'paused' | 'canceled'; field: string };
  targeting?: Record<string, unknown>;
  packages: PackageChange[];
}

/** Maps both forms onto one intent (the published members win where both are sent). */
export function updateIntent(p: UpdateMediaBuyRequest): UpdateIntent {
  const u = p.updates ?? {};
  const intent: UpdateIntent = { packages: [] };
  if (p.end_time !== undefined) intent.endTime = { value: p.end_time, field: 'end_time' };
  else if (u.end_time !== undefined) {
    intent.endTime = { value: u.end_time, field: 'updates.end_time' };
  }
  if (u.budget_change !== undefined) intent.budgetChange = u.budget_change;
  if (p.total_budget !== undefined) intent.totalBudget = p.total_budget;
  if (p.canceled === true) intent.status = { value: 'canceled', field: 'canceled' };
  else if (p.paused !== undefined) {
    intent.status = { value: p.paused ? 'paused' : 'active', field: 'paused' };
  } else if (u.status !== undefined) intent.status = { value: u.status, field: 'updates.status' };
  if (u.targeting !== undefined) intent.targeting = u.targeting;
  const add = (list: z.output<typeof PackageUpdateSchema>[] | undefined, prefix: string) => {
    for (const [i, pu] of (list ?? []).entries()) {
      const ids = packageCreativeIds(pu);
      intent.packages.push({
        package_id: pu.package_id,
        budget: pu.budget,
        paused: pu.canceled === true ? true : pu.paused,
        ...(pu.creative_ids || pu.creative_assignments || pu.creatives
          ? { creative_ids: ids }
          : {}),
        targeting_overlay: pu.targeting_overlay,
        field: `${prefix}[${i}]`,
      });
    }
  };
  add(u.packages, 'updates.packages');
  add(p.packages, 'packages');
  return intent;
}

/** Published status values and ours, as the internal statuses they select. */
const STATUS_FILTER: Record<string, string[]> = {
  pending_creatives: ['pending'],
  pending_start: ['pending'],
  active: ['active', 'reporting_delayed'],
};

export function internalStatuses(filter: string | string[] | undefined): string[] | null {
  if (filter === undefined) return null;
  const list = Array.isArray(filter) ? filter : [filter];
  return [...new Set(list.flatMap((s) => STATUS_FILTER[s] ?? [s]))];
}

export const GetMediaBuysSchema = z.looseObject({
  media_buy_ids: z.array(z.string().min(1)).max(100).optional(),
  buyer_refs: z.array(z.string().min(1)).max(100).optional(),
  status_filter: z.union([z.string(), z.array(z.string())]).optional(),
  include_webhook_activity: z.boolean().optional(),
  webhook_activity_limit: z.number().int().min(1).max(200).optional(),
  /** The spec's older page size. */
  limit: z.number().int().min(1).max(500).optional(),
  pagination: PaginationRequestSchema.optional(),
});
export type GetMediaBuysRequest = z.output<typeof GetMediaBuysSchema>;
