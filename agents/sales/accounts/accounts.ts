/**
 * Accounts of the sales agent (sync_accounts), each with its account-level webhook
 * subscribers (`notification_configs[]`, supplement §7.4): replacement semantics (omitted
 * = unchanged, [] = clear, array = full replacement keyed by subscriber_id), write-only
 * `authentication`, paused entries kept but never fired.
 */
import { checkSubscriberUrls } from '../../common/subscriber-urls.js';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { decodeCursor, pageInfo, PaginationRequestSchema } from '../cursor.js';
import { canonicalJson } from '../../../shared/json/canonical.js';
import { ACCOUNT_NOTIFICATION_TYPES } from '../../../shared/envelope/notification-types.js';
import { LegacyAuthenticationSchema } from '../../../shared/envelope/channel-config.js';
import { proveSubscribers, type SubscriberEntry } from '../../common/subscriber-proof.js';
import { protocolError, taskError } from '../../runtime/errors.js';
import { TaskError } from '../../../shared/errors/task-errors.js';
import { requireIdempotencyKey } from '../../runtime/validation.js';
import type { TaskRegistry } from '../../runtime/registry.js';
import type { AgentNotifications, TaskContext } from '../../runtime/types.js';
import type { AccountNotificationType } from '../../../sender/index.js';
import type { CommercialRelationship } from '../../auth/principal.js';

/** Event types an account-level subscriber may register (supplement §6.7). */
export const ACCOUNT_EVENT_TYPES = ACCOUNT_NOTIFICATION_TYPES;

const httpUrl = z.url({ protocol: /^https?$/, error: 'url must be an http(s) URL' }).max(2048);

export const SubscriberConfigSchema = (eventTypes: readonly [string, ...string[]]) =>
  z.looseObject({
    subscriber_id: z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'subscriber_id must be 1-64 of [A-Za-z0-9_.:-]'),
    url: httpUrl,
    event_types: z.array(z.enum(eventTypes)).min(1, 'at least one event type is required'),
    authentication: LegacyAuthenticationSchema.optional(),
    active: z.boolean().default(true),
    product_payload_view: z.enum(['canonical', 'legacy']).optional(),
  });

export const AccountConfigSchema = SubscriberConfigSchema(ACCOUNT_EVENT_TYPES);

/** Who this seller invoices (capabilities `account.supported_billing`, enforced by sync_accounts). */
export const SUPPORTED_BILLING = ['operator', 'agent'] as const;
type SubscriberConfig = z.output<typeof AccountConfigSchema>;

/** Rejects two entries with one subscriber_id (the set is keyed by it). */
export function checkUniqueSubscribers(
  configs: Array<{ subscriber_id: string }>,
  field: string,
): void {
  const seen = new Set<string>();
  for (const [j, c] of configs.entries()) {
    if (seen.has(c.subscriber_id)) {
      throw taskError('VALIDATION_ERROR', 'subscriber_id must be unique', {
        field: `${field}[${j}].subscriber_id`,
      });
    }
    seen.add(c.subscriber_id);
  }
}

/** A config as echoed: never the write-only `authentication`. */
export function publicConfig(c: Record<string, unknown>): Record<string, unknown> {
  const copy = { ...c };
  if (copy.authentication) {
    copy.authentication = { schemes: (copy.authentication as { schemes: string[] }).schemes };
  }
  return copy;
}

const SyncAccountsSchema = z
  .looseObject({
    accounts: z
      .array(
        z.looseObject({
          account_id: z
            .string()
            .regex(/^[A-Za-z0-9_.:-]{1,128}$/)
            .optional(),
          /** Published settings-update key: `{account_id}` of an existing account. */
          account: z
            .looseObject({
              account_id: z
                .string()
                .regex(/^[A-Za-z0-9_.:-]{1,128}$/)
                .optional(),
            })
            .optional(),
          name: z.string().min(1).max(200).optional(),
          brand: z.looseObject({ domain: z.string().min(1).max(253) }).optional(),
          /** Published provisioning: the operator's domain, and who is invoiced. */
          operator: z
            .string()
            .regex(
              /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/,
              'operator must be a domain',
            )
            .max(253)
            .optional(),
          billing: z.enum(['operator', 'agent', 'advertiser']).optional(),
          // Checked per account (accountRefusal): a bad entry fails its account only.
          notification_configs: z.array(z.unknown()).max(20).optional(),
        }),
      )
      .min(1)
      .max(50),
    dry_run: z.boolean().optional(),
    idempotency_key: z.string().optional(),
    context: z.unknown().optional(),
  })
  .refine(
    // The spec names sync_accounts without its shape; this service's form before the
    // published one keyed entries by `account_id`/`name` alone and had no key. A request
    // whose entries use none of the published members (`brand`, `operator`, `billing`,
    // `account`) is in that form; any published member makes it the published form.
    ...requireIdempotencyKey(
      (v) =>
        Array.isArray(v.accounts) &&
        v.accounts.every(
          (a: unknown) =>
            !a ||
            typeof a !== 'object' ||
            !['brand', 'operator', 'billing', 'account'].some((k) => k in a),
        ),
    ),
  );

/**
 * One account entry in the internal model: the published provisioning form (`brand`,
 * `operator`, `billing`), the settings-update form (`account: {account_id}`) and the spec's
 * older form (`account_id?`, `name`) give an id, a name, and the brand and operator the
 * published response requires. Without a brand (older form) the account's brand and
 * operator are `<principal>.invalid` (RFC 2606: a name that never resolves).
 */
function accountEntry(
  principalId: string,
  a: z.output<typeof SyncAccountsSchema>['accounts'][number],
): { accountId: string; name: string; brand: { domain: string }; operator: string } {
  const fallback = `${principalId.toLowerCase().replace(/[^a-z0-9-]/g, '-')}.invalid`;
  const brand = a.brand ? { ...a.brand, domain: a.brand.domain } : { domain: fallback };
  const operator = a.operator ?? brand.domain;
  const key = a.name ?? `${brand.domain}|${operator}`;
  const accountId = a.account_id ?? a.account?.account_id ?? derivedAccountId(principalId, key);
  return { accountId, name: a.name ?? brand.domain, brand, operator };
}

function derivedAccountId(principalId: string, name: string): string {
  return `acct_${createHash('sha256').update(`${principalId}\0${name}`).digest('hex').slice(0, 16)}`;
}

type AccountItem = z.output<typeof SyncAccountsSchema>['accounts'][number];

/** Whether an entry is the published form (any published member), not the older one. */
function isPublishedEntry(a: AccountItem): boolean {
  return ['brand', 'operator', 'billing', 'account'].some((k) => k in a);
}

/**
 * An entry's notification_configs checked, or why its account is refused: a billing this
 * seller does not offer (BILLING_NOT_SUPPORTED, scope capability) or an invalid or
 * duplicate subscriber (VALIDATION_ERROR naming `notification_configs[j]...`). The
 * published form refuses the one account (`action: failed`), as the published response
 * and the storyboards read it; the spec's older form keeps refusing the whole request
 * (`accounts[i].notification_configs...`).
 */
function checkedEntry(
  ctx: Pick<TaskContext, 'notifications'>,
  a: AccountItem,
  i: number,
  relationship: CommercialRelationship,
): SubscriberConfig[] | undefined | TaskError {
  const published = isPublishedEntry(a);
  const prefix = published ? 'notification_configs' : `accounts[${i}].notification_configs`;
  try {
    if (a.billing && !(SUPPORTED_BILLING as readonly string[]).includes(a.billing)) {
      throw taskError('BILLING_NOT_SUPPORTED', `this seller does not offer ${a.billing} billing`, {
        field: 'billing',
        suggestion: `use one of ${SUPPORTED_BILLING.join(', ')}`,
        details: { scope: 'capability', supported_billing: [...SUPPORTED_BILLING] },
      });
    }
    if (a.billing && a.billing !== 'operator' && relationship === 'passthrough_only') {
      // The per-agent gate: the caller's identity is established (its credential maps to
      // an onboarded principal). The details are clamped to the published shape
      // (error-details/billing-not-permitted-for-agent.json): the rejected value and one
      // retry, never the agent's commercial state.
      throw taskError(
        'BILLING_NOT_PERMITTED_FOR_AGENT',
        `${a.billing} billing is not available to this buyer agent`,
        {
          field: 'billing',
          suggestion: 'retry with billing operator',
          details: { rejected_billing: a.billing, suggested_billing: 'operator' },
        },
      );
    }
    if (!a.notification_configs) return undefined;
    const configs = a.notification_configs.map((c, j) => {
      const parsed = AccountConfigSchema.safeParse(c);
      if (parsed.success) return parsed.data;
      const issue = parsed.error.issues[0]!;
      throw taskError('VALIDATION_ERROR', issue.message, {
        field: `${prefix}[${j}]${issue.path.map((k) => (typeof k === 'number' ? `[${k}]` : `.${String(k)}`)).join('')}`,
      });
    });
    checkUniqueSubscribers(configs, prefix);
    // The sender's URL rules at registration (issue 21): INVALID_REQUEST naming the field.
    checkSubscriberUrls(ctx, configs, 'account', prefix);
    return configs;
  } catch (err) {
    if (published && err instanceof TaskError) return err;
    throw err;
  }
}

/** The published result of a refused account: `failed`, `rejected`, with the error. */
function refusedAccount(
  principalId: string,
  a: AccountItem,
  err: TaskError,
): Record<string, unknown> {
  const { brand, operator } = accountEntry(principalId, a);
  const accountId = a.account_id ?? a.account?.account_id;
  return {
    ...(accountId ? { account_id: accountId } : {}),
    brand,
    operator,
    action: 'failed',
    status: 'rejected',
    errors: [protocolError(err)],
  };
}

/**
 * The caller's commercial relationship (its onboarding record), read only when an entry
 * asks for a billing other than the operator's, the only one it can restrict.
 */
async function commercialRelationship(
  ctx: TaskContext,
  accounts: AccountItem[],
): Promise<CommercialRelationship> {
  if (!accounts.some((a) => a.billing && a.billing !== 'operator')) return 'agent_billable';
  const { rows } = await ctx.db.query<{ commercial_relationship: CommercialRelationship }>(
    `SELECT commercial_relationship FROM ${ctx.schema}.principals
      WHERE agent = $1 AND principal_id = $2`,
    [ctx.agent, ctx.principal!.principal_id],
  );
  return rows[0]?.commercial_relationship ?? 'agent_billable';
}

async function syncAccounts(params: z.output<typeof SyncAccountsSchema>, ctx: TaskContext) {
  const s = ctx.schema;
  const principalId = ctx.principal!.principal_id;
  const out: Array<Record<string, unknown>> = [];
  const relationship = await commercialRelationship(ctx, params.accounts);
  await ctx.db.query('SAVEPOINT sync_accounts');
  for (const [i, raw] of params.accounts.entries()) {
    const checked = checkedEntry(ctx, raw, i, relationship);
    if (checked instanceof TaskError) {
      out.push(refusedAccount(principalId, raw, checked));
      continue;
    }
    const a = { ...raw, notification_configs: checked };
    const { accountId, name, brand, operator } = accountEntry(principalId, a);
    const { rows } = await ctx.db.query<{
      principal_id: string;
      name: string;
      brand: unknown;
      notification_configs: SubscriberConfig[];
    }>(
      `SELECT principal_id, name, brand, notification_configs FROM ${s}.accounts
        WHERE agent = $1 AND account_id = $2 FOR UPDATE`,
      [ctx.agent, accountId],
    );
    const before = rows[0];
    if (before && before.principal_id !== principalId) {
      throw taskError('ACCOUNT_NOT_FOUND', `no account ${accountId} for this principal`, {
        field: `accounts[${i}].account_id`,
      });
    }
    const configs = a.notification_configs ?? before?.notification_configs ?? [];
    if (a.notification_configs && !params.dry_run && !ctx.dryRun) {
      await proveSubscribers(ctx.settings.subscriberVerifier, {
        scope: 'account',
        accountId,
        sellerAgentUrl: ctx.settings.urls[ctx.agent],
        previous: (before?.notification_configs ?? []) as SubscriberEntry[],
        next: a.notification_configs as SubscriberEntry[],
        fieldPrefix: `accounts[${i}].notification_configs`,
      });
    }
    let action = 'created';
    if (before) {
      action =
        before.name === name &&
        canonicalJson(before.brand ?? null) === canonicalJson(a.brand ?? null) &&
        canonicalJson(before.notification_configs) === canonicalJson(configs)
          ? 'unchanged'
          : 'updated';
    }
    await ctx.db.query(
      `INSERT INTO ${s}.accounts (agent, account_id, principal_id, name, brand, notification_configs)
       VALUES ($1,$2,$3,$4,$5,$6)
       ON CONFLICT (agent, account_id) DO UPDATE SET name = EXCLUDED.name, brand = EXCLUDED.brand,
         notification_configs = EXCLUDED.notification_configs, updated_at = now()`,
      [ctx.agent, accountId, principalId, name, a.brand ?? null, canonicalJson(configs)],
    );
    out.push({
      account_id: accountId,
      name,
      brand,
      operator,
      ...(a.billing ? { billing: a.billing } : {}),
      action,
      status: 'active',
      notification_configs: configs.map(publicConfig),
    });
  }
  if (params.dry_run) await ctx.db.query('ROLLBACK TO SAVEPOINT sync_accounts');
  return {
    status: 'completed' as const,
    body: { accounts: out, ...(params.dry_run ? { dry_run: true } : {}) },
  };
}

/** Fires an account-level event to the principal's active subscribers of that type. */
export async function emitAccountEvent(
  ctx: {
    db: TaskContext['db'];
    schema: string;
    agent: string;
    principal: TaskContext['principal'];
    notifications: AgentNotifications;
  },
  type: AccountNotificationType,
  notificationId: string,
  fields: Record<string, unknown>,
): Promise<void> {
  if (!ctx.principal) return;
  const { rows } = await ctx.db.query<{
    account_id: string;
    notification_configs: SubscriberConfig[];
  }>(
    `SELECT account_id, notification_configs FROM ${ctx.schema}.accounts
      WHERE agent = $1 AND principal_id = $2 AND notification_configs <> '[]'::jsonb`,
    [ctx.agent, ctx.principal.principal_id],
  );
  for (const account of rows) {
    const configs = account.notification_configs.filter(
      (c) => c.active !== false && c.event_types.includes(type),
    );
    if (configs.length === 0) continue;
    await ctx.notifications.accountNotification({
      configs,
      notificationType: type,
      notificationId: `${notificationId}.${account.account_id}`.slice(0, 255),
      fields: { account_id: account.account_id, ...fields },
      principalId: ctx.principal.principal_id,
      client: ctx.db,
    });
  }
}

/** An account's statuses (core/account.json `status`), for the task and the test controller. */
export const ACCOUNT_STATUSES = [
  'active',
  'pending_approval',
  'rejected',
  'payment_required',
  'suspended',
  'closed',
] as const;

/** A published AccountRef: `account_id`, or the natural key (brand, operator). */
export const AccountRefSchema = z.union([
  z.looseObject({ account_id: z.string().min(1).max(128) }),
  z.looseObject({
    brand: z.looseObject({ domain: z.string().min(1).max(253) }),
    operator: z.string().min(1).max(253).optional(),
  }),
]);

/**
 * The caller's sales account an AccountRef names (its id, or the one sync_accounts derived
 * from the natural key), or null when the caller has no such account.
 */
export async function ownAccountId(
  ctx: TaskContext,
  ref: z.output<typeof AccountRefSchema>,
): Promise<string | null> {
  const principalId = ctx.principal!.principal_id;
  const id =
    'account_id' in ref && typeof ref.account_id === 'string'
      ? ref.account_id
      : derivedAccountId(
          principalId,
          `${(ref as { brand: { domain: string } }).brand.domain}|${(ref as { operator?: string }).operator ?? (ref as { brand: { domain: string } }).brand.domain}`,
        );
  const { rowCount } = await ctx.db.query(
    `SELECT 1 FROM ${ctx.schema}.accounts WHERE agent = 'sales' AND account_id = $1 AND principal_id = $2`,
    [id, principalId],
  );
  return rowCount ? id : null;
}

const ListAccountsSchema = z.looseObject({
  account_ids: z.array(z.string().min(1).max(128)).max(100).optional(),
  /** Published 3.1+: one account, by `account_id` or by its natural key. */
  account: AccountRefSchema.optional(),
  status: z.enum(ACCOUNT_STATUSES).optional(),
  pagination: PaginationRequestSchema.optional(),
});

/**
 * The ids `list_accounts` is narrowed to: `account_ids`, and the published exact `account`
 * filter (its `account_id`, or the id sync_accounts derives from its natural key).
 */
function listedIds(
  principalId: string,
  params: z.output<typeof ListAccountsSchema>,
): string[] | null {
  const a = params.account as
    { account_id?: string; brand?: { domain: string }; operator?: string } | undefined;
  const exact = !a
    ? null
    : typeof a.account_id === 'string'
      ? a.account_id
      : derivedAccountId(principalId, `${a.brand!.domain}|${a.operator ?? a.brand!.domain}`);
  if (exact === null) return params.account_ids ?? null;
  return params.account_ids ? params.account_ids.filter((id) => id === exact) : [exact];
}

export function registerAccountTasks(registry: TaskRegistry): void {
  registry.add({
    name: 'list_accounts',
    description: 'List your accounts and their notification subscribers.',
    agent: 'sales',
    schema: ListAccountsSchema,
    auth: { tier: 'authenticated' },
    expectedDuration: '1s',
    mode: 'sync',
    mutating: false,
    readOnly: true,
    errorShape: 'single',
    handle: async (params, ctx) => {
      const offset = decodeCursor(params.pagination?.cursor);
      const limit = params.pagination?.max_results ?? 100;
      const { rows } = await ctx.db.query<{
        account_id: string;
        name: string;
        brand: unknown;
        status: string;
        notification_configs: Array<Record<string, unknown>>;
        total: string;
      }>(
        `SELECT account_id, name, brand, status, notification_configs,
                count(*) OVER () AS total FROM ${ctx.schema}.accounts
          WHERE agent = $1 AND principal_id = $2 AND ($3::text[] IS NULL OR account_id = ANY($3))
            AND ($6::text IS NULL OR status = $6)
          ORDER BY created_at, account_id LIMIT $4 OFFSET $5`,
        [
          ctx.agent,
          ctx.principal!.principal_id,
          listedIds(ctx.principal!.principal_id, params),
          limit,
          offset,
          params.status ?? null,
        ],
      );
      const total = rows.length > 0 ? Number(rows[0]!.total) : 0;
      return {
        status: 'completed',
        body: {
          pagination: pageInfo(offset, rows.length, total, false),
          accounts: rows.map((r) => ({
            account_id: r.account_id,
            name: r.name,
            ...(r.brand ? { brand: r.brand } : {}),
            status: r.status,
            notification_configs: r.notification_configs.map(publicConfig),
          })),
        },
      };
    },
  });
  registry.add({
    name: 'sync_accounts',
    description: 'Create or update accounts and their notification_configs.',
    agent: 'sales',
    schema: SyncAccountsSchema,
    auth: { tier: 'authenticated' },
    expectedDuration: '1s',
    mode: 'sync',
    mutating: true,
    webhookTaskType: 'sync_accounts',
    errorShape: 'single',
    handle: syncAccounts,
  });
}
