/**
 * `list_tasks` (published protocol/list-tasks, 3.1+): the caller's own tasks at one agent,
 * for reconciliation after a lost answer or webhook (a buyer recovers a submitted task's id
 * and state; create_media_buy_async_lifecycle.yaml reads it beside get_task_status).
 * Filters (status(es), task type(s), protocol(s), task ids, created/updated bounds,
 * context text, webhook), a sort, cursor pagination (pagination.ts) and the query summary;
 * a named `account` scopes the list to the tasks whose requests named that account.
 * Only task types of the published enum are listed (3.2's own ones only to a 3.2 pin), so
 * every answer is valid in the releases its request may be read in.
 */
import { z } from 'zod';
import type { AgentKind } from '../auth/principal.js';
import type { TaskRegistry } from '../runtime/registry.js';
import type { TaskContext } from '../runtime/types.js';
import { DateTimeSchema } from '../runtime/validation.js';
import { resolveRef, type Release } from '../protocol/index.js';
import { paginate, PaginationRequestSchema } from './pagination.js';

/**
 * A published enum, read from the release's vendored schema (enums/<name>.json), so the list
 * is the protocol's own and changes with the vendored release, not a copy kept here.
 */
function publishedEnum(release: Release, name: string): [string, ...string[]] {
  const values = (
    resolveRef(release, `/schemas/${release}/enums/${name}.json`) as { enum?: unknown }
  )?.enum;
  if (
    !Array.isArray(values) ||
    values.length === 0 ||
    !values.every((v) => typeof v === 'string')
  ) {
    throw new Error(`the vendored ${release} enums/${name}.json holds no enum of strings`);
  }
  return values as [string, ...string[]];
}

/** The task types of 3.1.19, and of 3.2.0-beta.5 (a superset: what 3.2 added). */
const TASK_TYPES_31 = publishedEnum('3.1.19', 'task-type');
const TASK_TYPES_32 = publishedEnum('3.2.0-beta.5', 'task-type');
const STATUSES = publishedEnum('3.2.0-beta.5', 'task-status');
const PROTOCOLS = publishedEnum('3.2.0-beta.5', 'adcp-protocol');
const SORT_FIELDS = ['created_at', 'updated_at', 'status', 'task_type', 'protocol'] as const;

export const ListTasksSchema = z.looseObject({
  account: z.looseObject({}).optional(),
  filters: z
    .looseObject({
      protocol: z.enum(PROTOCOLS).optional(),
      protocols: z.array(z.enum(PROTOCOLS)).min(1).optional(),
      status: z.enum(STATUSES).optional(),
      statuses: z.array(z.enum(STATUSES)).min(1).optional(),
      task_type: z.enum(TASK_TYPES_32).optional(),
      task_types: z.array(z.enum(TASK_TYPES_32)).min(1).optional(),
      created_after: DateTimeSchema.optional(),
      created_before: DateTimeSchema.optional(),
      updated_after: DateTimeSchema.optional(),
      updated_before: DateTimeSchema.optional(),
      task_ids: z.array(z.string().min(1).max(255)).min(1).max(100).optional(),
      context_contains: z.string().min(1).max(200).optional(),
      has_webhook: z.boolean().optional(),
    })
    .optional(),
  sort: z
    .looseObject({
      field: z.enum(SORT_FIELDS).optional(),
      direction: z.enum(['asc', 'desc']).optional(),
    })
    .optional(),
  pagination: PaginationRequestSchema.optional(),
  include_history: z.boolean().optional(),
});

type Params = z.output<typeof ListTasksSchema>;

interface Row {
  /** The account the task's request named (null: none). */
  account: Record<string, unknown> | null;
  task_id: string;
  task_type: string;
  status: string;
  created_at: Date;
  updated_at: Date;
  has_webhook: boolean;
  text: string;
}

/**
 * Tasks of the named account only (reconciliation is scoped to the authenticated account +
 * principal pair): the task's request named the same `account_id`, or the same brand domain
 * and operator. A task whose request named no account belongs to no account.
 */
function sameAccount(ref: Record<string, unknown>) {
  const key = (a: Record<string, unknown> | null): string | null => {
    if (!a || typeof a !== 'object') return null;
    if (typeof a.account_id === 'string') return `id:${a.account_id}`;
    const domain = (a.brand as { domain?: unknown } | undefined)?.domain;
    if (typeof domain !== 'string') return null;
    const operator = typeof a.operator === 'string' ? a.operator : domain;
    return `key:${domain.toLowerCase()}|${operator.toLowerCase()}`;
  };
  const wanted = key(ref);
  return (a: Record<string, unknown> | null) => wanted !== null && key(a) === wanted;
}

const TERMINAL = new Set(['completed', 'failed', 'canceled', 'rejected']);

/** The filters a row meets; `applied` collects the published names of those given. */
function matcher(f: NonNullable<Params['filters']>, domain: string, applied: string[]) {
  const tests: Array<(r: Row) => boolean> = [];
  const add = (name: string, test: (r: Row) => boolean) => {
    applied.push(name);
    tests.push(test);
  };
  const set = (one: string | undefined, many: readonly string[] | undefined) =>
    one === undefined && many === undefined
      ? null
      : new Set([...(many ?? []), ...(one ? [one] : [])]);
  const protocols = set(f.protocol, f.protocols);
  if (protocols) add('protocol', () => protocols.has(domain));
  const statuses = set(f.status, f.statuses);
  if (statuses) add('status', (r) => statuses.has(r.status));
  const types = set(f.task_type, f.task_types);
  if (types) add('task_type', (r) => types.has(r.task_type));
  const ids = f.task_ids ? new Set(f.task_ids) : null;
  if (ids) add('task_ids', (r) => ids.has(r.task_id));
  const at = (s: string) => Date.parse(s);
  if (f.created_after) add('created_after', (r) => r.created_at.getTime() > at(f.created_after!));
  if (f.created_before)
    add('created_before', (r) => r.created_at.getTime() < at(f.created_before!));
  if (f.updated_after) add('updated_after', (r) => r.updated_at.getTime() > at(f.updated_after!));
  if (f.updated_before)
    add('updated_before', (r) => r.updated_at.getTime() < at(f.updated_before!));
  if (f.context_contains !== undefined) {
    const needle = f.context_contains.toLowerCase();
    add('context_contains', (r) => r.text.toLowerCase().includes(needle));
  }
  if (f.has_webhook !== undefined) add('has_webhook', (r) => r.has_webhook === f.has_webhook);
  return (r: Row) => tests.every((t) => t(r));
}

async function listTasks(params: Params, ctx: TaskContext, domain: string) {
  const listable: readonly string[] = ctx.request.release === '3.2' ? TASK_TYPES_32 : TASK_TYPES_31;
  // The text context_contains searches: the buyer's context and the ids the task names.
  const { rows } = await ctx.db.query<Row>(
    `SELECT task_id, task_type, status, created_at, updated_at, params->'account' AS account,
            (push_notification_config IS NOT NULL OR a2a_push IS NOT NULL) AS has_webhook,
            concat_ws(' ', task_id, resource_id, context::text, result->>'media_buy_id') AS text
       FROM ${ctx.schema}.tasks
      WHERE agent = $1 AND principal_id = $2 AND task_type = ANY($3)`,
    [ctx.agent, ctx.principal!.principal_id, listable],
  );
  const applied: string[] = [];
  const inAccount = params.account ? sameAccount(params.account) : () => true;
  const matching = rows
    .filter((r) => inAccount(r.account))
    .filter(matcher(params.filters ?? {}, domain, applied));
  const field = params.sort?.field ?? 'created_at';
  const direction = params.sort?.direction ?? 'desc';
  const key = (r: Row): string | number =>
    field === 'created_at'
      ? r.created_at.getTime()
      : field === 'updated_at'
        ? r.updated_at.getTime()
        : field === 'protocol'
          ? domain
          : r[field];
  const sign = direction === 'asc' ? 1 : -1;
  matching.sort((a, b) => {
    const x = key(a);
    const y = key(b);
    return (x < y ? -1 : x > y ? 1 : a.task_id.localeCompare(b.task_id)) * sign;
  });
  const { page, pagination } = paginate(matching, params.pagination, 50);
  const statusBreakdown: Record<string, number> = {};
  for (const r of matching) statusBreakdown[r.status] = (statusBreakdown[r.status] ?? 0) + 1;
  return {
    query_summary: {
      total_matching: matching.length,
      returned: page.length,
      domain_breakdown: { [domain]: matching.length },
      status_breakdown: statusBreakdown,
      filters_applied: applied,
      sort_applied: { field, direction },
    },
    tasks: page.map((r) => ({
      task_id: r.task_id,
      task_type: r.task_type,
      domain,
      status: r.status,
      created_at: r.created_at.toISOString(),
      updated_at: r.updated_at.toISOString(),
      ...(TERMINAL.has(r.status) ? { completed_at: r.updated_at.toISOString() } : {}),
      has_webhook: r.has_webhook,
    })),
    pagination,
  };
}

/** `list_tasks` at one agent, its tasks in that agent's protocol domain. */
export function addListTasksTask(
  registry: TaskRegistry,
  agent: AgentKind,
  domain: string,
  quick: { expectedDuration: string; mode: 'sync'; errorShape: 'single' | 'signal' },
): void {
  registry.add({
    name: 'list_tasks',
    description: 'List your tasks at this agent, filtered, sorted and paged (reconciliation).',
    agent,
    schema: ListTasksSchema,
    auth: { tier: 'authenticated' },
    ...quick,
    mutating: false,
    readOnly: true,
    handle: async (params, ctx) => ({
      status: 'completed',
      body: await listTasks(params, ctx, domain),
    }),
  });
}
