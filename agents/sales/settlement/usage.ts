/**
 * report_usage at the sales agent (published account/report-usage, 3.1+): the buyer (or the
 * billing vendor) reports what was consumed on a media buy, for reconciliation. Each record
 * stands alone (partial acceptance): one the seller can verify and store counts in
 * `accepted`, one it cannot is an `errors[]` entry naming its field. For a revenue-share
 * package (3.2) the seller checks the formula: commissionable_value is required,
 * vendor_cost must equal round_currency(commissionable_value x commission_rate), in the
 * buy's currency, and the package's accepted commission stays within its budget
 * (revenue_share_pricing.yaml:302-342). A malformed request is one VALIDATION_ERROR.
 */
import { z } from 'zod';
import type { TaskRegistry } from '../../runtime/registry.js';
import type { TaskContext } from '../../runtime/types.js';
import { DateTimeSchema, RequiredIdempotencyKeySchema } from '../../runtime/validation.js';
import { AccountRefSchema, ownAccountId } from '../accounts/accounts.js';
import { isContingent, normalizePricingOption } from '../catalog/pricing.js';

const amount = z.number().nonnegative();

const UsageRecordSchema = z.looseObject({
  account: AccountRefSchema,
  media_buy_id: z.string().min(1).max(255).optional(),
  pricing_option_id: z.string().min(1).max(255).optional(),
  vendor_cost: amount,
  currency: z.string().regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code'),
  impressions: z.number().int().nonnegative().optional(),
  media_spend: amount.optional(),
  conversions: amount.optional(),
  conversion_value: amount.optional(),
  commissionable_value: amount.optional(),
  final: z.boolean().optional(),
  finalized_at: DateTimeSchema.optional(),
  measurement_window: z.string().min(1).max(50).optional(),
});

const ReportUsageSchema = z.looseObject({
  idempotency_key: RequiredIdempotencyKeySchema,
  reporting_period: z
    .looseObject({ start: DateTimeSchema, end: DateTimeSchema })
    .refine((r) => Date.parse(r.start) < Date.parse(r.end), {
      message: 'start must be before end',
      path: ['end'],
    }),
  usage: z.array(UsageRecordSchema).min(1).max(1000),
});

type UsageRecord = z.output<typeof UsageRecordSchema>;
type RecordError = { code: string; message: string; field: string };

/** The buy's package a record bills, with its option's terms and what was billed before. */
interface Billed {
  package_id: string;
  budget: number;
  currency: string;
  option: ReturnType<typeof normalizePricingOption> | null;
  billed: number;
}

async function billedPackage(
  ctx: TaskContext,
  r: UsageRecord,
  at: string,
): Promise<Billed | RecordError | null> {
  if (r.media_buy_id === undefined) return null;
  const { rows } = await ctx.db.query<{
    package_id: string;
    pricing_option_id: string | null;
    budget: number;
    currency: string;
    options: Array<Record<string, unknown>> | null;
  }>(
    `SELECT k.package_id, k.pricing_option_id, k.budget::float8 AS budget, b.currency,
            p.pricing_options AS options
       FROM ${ctx.schema}.media_buys b
       JOIN ${ctx.schema}.packages k ON k.media_buy_id = b.media_buy_id
       LEFT JOIN ${ctx.schema}.products p ON p.product_id = k.product_id
      WHERE b.media_buy_id = $1 AND b.principal_id = $2 ORDER BY k.position FOR UPDATE OF k`,
    [r.media_buy_id, ctx.principal!.principal_id],
  );
  if (rows.length === 0) {
    return {
      code: 'MEDIA_BUY_NOT_FOUND',
      message: `no media buy ${r.media_buy_id.slice(0, 80)} of yours`,
      field: `${at}.media_buy_id`,
    };
  }
  const pkg =
    r.pricing_option_id === undefined
      ? rows[0]!
      : rows.find((k) => k.pricing_option_id === r.pricing_option_id);
  if (!pkg) {
    return {
      code: 'INVALID_PRICING_OPTION',
      message: `pricing option ${r.pricing_option_id!.slice(0, 80)} is on no package of ${r.media_buy_id.slice(0, 80)}`,
      field: `${at}.pricing_option_id`,
    };
  }
  const raw = (pkg.options ?? []).find((o) => o.pricing_option_id === pkg.pricing_option_id);
  const { rows: sum } = await ctx.db.query<{ billed: number }>(
    `SELECT coalesce(sum(vendor_cost), 0)::float8 AS billed FROM ${ctx.schema}.usage_records
      WHERE package_id = $1`,
    [pkg.package_id],
  );
  return {
    package_id: pkg.package_id,
    budget: pkg.budget,
    currency: pkg.currency,
    option: raw ? normalizePricingOption(raw) : null,
    billed: sum[0]!.billed,
  };
}

/** Amounts to the currency's minor unit (the seller trades in two-decimal currencies). */
const roundCurrency = (v: number) => Math.round(v * 100) / 100;

/** The first reason a revenue-share record fails the formula, or null when it holds. */
function commissionError(r: UsageRecord, b: Billed, at: string): RecordError | null {
  const rate = b.option?.commission_rate ?? 0;
  if (r.commissionable_value === undefined) {
    return {
      code: 'INVALID_USAGE_DATA',
      message: 'commissionable_value is required for a revenue_share pricing option',
      field: `${at}.commissionable_value`,
    };
  }
  const expected = roundCurrency(r.commissionable_value * rate);
  if (Math.abs(expected - r.vendor_cost) >= 0.005) {
    return {
      code: 'INVALID_USAGE_DATA',
      message: `vendor_cost must be ${expected} (commissionable_value ${r.commissionable_value} x commission_rate ${rate})`,
      field: `${at}.vendor_cost`,
    };
  }
  if (b.billed + r.vendor_cost > b.budget + 0.005) {
    return {
      code: 'BUDGET_EXCEEDED',
      message: `the package's commission would reach ${roundCurrency(b.billed + r.vendor_cost)}, over its budget ${b.budget}`,
      field: `${at}.vendor_cost`,
    };
  }
  return null;
}

async function checkRecord(
  ctx: TaskContext,
  r: UsageRecord,
  i: number,
): Promise<{ accountId: string; billed: Billed | null } | RecordError> {
  const at = `usage[${i}]`;
  const accountId = await ownAccountId(ctx, r.account);
  if (!accountId) {
    return {
      code: 'ACCOUNT_NOT_FOUND',
      message: 'no such account of yours',
      field: `${at}.account`,
    };
  }
  if (r.final === false && r.finalized_at !== undefined) {
    return {
      code: 'INVALID_USAGE_DATA',
      message: 'finalized_at is only for a final record',
      field: `${at}.finalized_at`,
    };
  }
  const billed = await billedPackage(ctx, r, at);
  if (billed && 'code' in billed) return billed;
  if (billed && r.currency !== billed.currency) {
    return {
      code: 'INVALID_USAGE_DATA',
      message: `currency must be the buy's ${billed.currency}`,
      field: `${at}.currency`,
    };
  }
  if (billed?.option && isContingent(billed.option)) {
    const e = commissionError(r, billed, at);
    if (e) return e;
  }
  return { accountId, billed };
}

async function reportUsage(params: z.output<typeof ReportUsageSchema>, ctx: TaskContext) {
  const errors: RecordError[] = [];
  let accepted = 0;
  for (const [i, r] of params.usage.entries()) {
    const checked = await checkRecord(ctx, r, i);
    if ('code' in checked) {
      errors.push(checked);
      continue;
    }
    await ctx.db.query(
      `INSERT INTO ${ctx.schema}.usage_records (principal_id, account_id, media_buy_id,
         package_id, pricing_option_id, vendor_cost, currency, record)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        ctx.principal!.principal_id,
        checked.accountId,
        r.media_buy_id ?? null,
        checked.billed?.package_id ?? null,
        r.pricing_option_id ?? null,
        r.vendor_cost,
        r.currency,
        { ...r, reporting_period: params.reporting_period },
      ],
    );
    accepted += 1;
  }
  return {
    accepted,
    ...(errors.length > 0 ? { errors } : {}),
  };
}

export function registerUsageTasks(registry: TaskRegistry): void {
  registry.add({
    name: 'report_usage',
    description: 'Report consumption on your media buys for billing reconciliation.',
    agent: 'sales',
    schema: ReportUsageSchema,
    auth: { tier: 'authenticated' },
    expectedDuration: '1s',
    mode: 'sync',
    mutating: true,
    errorShape: 'single',
    handle: async (params, ctx) => ({ status: 'completed', body: await reportUsage(params, ctx) }),
  });
}
