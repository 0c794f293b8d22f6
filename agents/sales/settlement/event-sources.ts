/**
 * sync_event_sources (published media-buy/sync-event-sources, 3.1+): the buyer's conversion
 * event sources on one of its accounts, created or updated by `event_source_id` (and the
 * others removed with `delete_missing`); without `event_sources` the call only lists them.
 * A revenue-share pricing option names the source whose attribution bills
 * (revenue_share_pricing.yaml: the buyer registers it before buying).
 */
import { z } from 'zod';
import { taskError } from '../../runtime/errors.js';
import type { TaskRegistry } from '../../runtime/registry.js';
import type { TaskContext } from '../../runtime/types.js';
import { RequiredIdempotencyKeySchema } from '../../runtime/validation.js';
import { AccountRefSchema, ownAccountId } from '../accounts/accounts.js';
import { EVENT_TYPES } from '../catalog/pricing.js';

const ACTION_SOURCES = [
  'website',
  'app',
  'offline',
  'phone_call',
  'chat',
  'email',
  'in_store',
  'system_generated',
  'other',
] as const;

const unique = (l: string[]) => new Set(l).size === l.length;

const EventSourceSchema = z.looseObject({
  event_source_id: z.string().min(1).max(255),
  name: z.string().min(1).max(255).optional(),
  event_types: z
    .array(z.string().refine((t) => EVENT_TYPES.has(t), 'must be a published event type'))
    .min(1)
    .optional(),
  value_currencies: z
    .array(z.string().regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code'))
    .min(1)
    .refine(unique, 'value_currencies must not repeat')
    .optional(),
  action_source: z.enum(ACTION_SOURCES).optional(),
  allowed_domains: z.array(z.string().min(1).max(253)).max(100).optional(),
});

const SyncEventSourcesSchema = z.looseObject({
  idempotency_key: RequiredIdempotencyKeySchema,
  account: AccountRefSchema,
  event_sources: z
    .array(EventSourceSchema)
    .min(1)
    .max(100)
    .refine((l) => unique(l.map((s) => s.event_source_id)), 'event_source_id must not repeat')
    .optional(),
  delete_missing: z.boolean().optional(),
});

type Source = z.output<typeof EventSourceSchema>;

/** A value with its object keys in order: jsonb does not keep the request's order. */
function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (!v || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.keys(v)
      .sort()
      .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
  );
}
const same = (a: unknown, b: unknown) =>
  JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));

/** A stored source on the wire: the published members, managed by the buyer. */
function wireSource(s: Source, action: string): Record<string, unknown> {
  const { event_source_id, name, event_types, value_currencies, action_source } = s;
  return {
    event_source_id,
    ...(name !== undefined ? { name } : {}),
    ...(event_types !== undefined ? { event_types } : {}),
    ...(value_currencies !== undefined ? { value_currencies } : {}),
    ...(action_source !== undefined ? { action_source } : {}),
    managed_by: 'buyer',
    setup: { snippet_type: 'server_only', instructions: 'Send conversions with log_event.' },
    action,
  };
}

async function syncEventSources(params: z.output<typeof SyncEventSourcesSchema>, ctx: TaskContext) {
  const accountId = await ownAccountId(ctx, params.account);
  if (!accountId) {
    throw taskError('ACCOUNT_NOT_FOUND', 'no such account of yours; sync_accounts first', {
      field: 'account',
    });
  }
  const principalId = ctx.principal!.principal_id;
  const { rows } = await ctx.db.query<{ event_source_id: string; source: Source }>(
    `SELECT event_source_id, source FROM ${ctx.schema}.event_sources
      WHERE principal_id = $1 AND account_id = $2 ORDER BY event_source_id FOR UPDATE`,
    [principalId, accountId],
  );
  const stored = new Map(rows.map((r) => [r.event_source_id, r.source]));
  if (!params.event_sources) {
    return { event_sources: rows.map((r) => wireSource(r.source, 'unchanged')) };
  }
  const out: Array<Record<string, unknown>> = [];
  for (const s of params.event_sources) {
    const before = stored.get(s.event_source_id);
    const action = !before ? 'created' : same(before, s) ? 'unchanged' : 'updated';
    if (action !== 'unchanged') {
      await ctx.db.query(
        `INSERT INTO ${ctx.schema}.event_sources (principal_id, account_id, event_source_id, source)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (principal_id, account_id, event_source_id)
           DO UPDATE SET source = EXCLUDED.source, updated_at = now()`,
        [principalId, accountId, s.event_source_id, s],
      );
    }
    out.push(wireSource(s, action));
  }
  if (params.delete_missing) {
    const kept = new Set(params.event_sources.map((s) => s.event_source_id));
    for (const [id, s] of stored) {
      if (kept.has(id)) continue;
      await ctx.db.query(
        `DELETE FROM ${ctx.schema}.event_sources
          WHERE principal_id = $1 AND account_id = $2 AND event_source_id = $3`,
        [principalId, accountId, id],
      );
      out.push(wireSource(s, 'deleted'));
    }
  }
  return { event_sources: out };
}

export function registerEventSourceTasks(registry: TaskRegistry): void {
  registry.add({
    name: 'sync_event_sources',
    description: 'Register or update the conversion event sources of one of your accounts.',
    agent: 'sales',
    schema: SyncEventSourcesSchema,
    auth: { tier: 'authenticated' },
    expectedDuration: '1s',
    mode: 'sync',
    mutating: true,
    errorShape: 'single',
    handle: async (params, ctx) => ({
      status: 'completed',
      body: await syncEventSources(params, ctx),
    }),
  });
}
