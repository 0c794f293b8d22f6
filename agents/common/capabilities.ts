/**
 * Tasks every agent has: the capability document (`get_<brand>_capabilities`, with the
 * `webhook_signing` block of supplement §7.1), `get_agent_capabilities` (per-event
 * coalescence windows), `sync_agent_notification_configs` (agent-level subscribers, owned
 * by the caller) and `get_task_status` (polling). Also the operator's "capabilities
 * changed" publication, which bumps the version before firing.
 */
import { addListTasksTask } from './list-tasks.js';
import { z } from 'zod';
import type { Pool } from '../../shared/infra/pg.js';
import type { Logger } from '../../shared/infra/logger.js';
import { isTerminalStatus } from '../../shared/envelope/task-status.js';
import {
  advertisedTypes,
  AGENT_NOTIFICATION_TYPES,
  coalescenceWindows,
  NOTIFICATION_TYPES,
} from '../../shared/envelope/notification-types.js';
import { AGENT_KINDS, type AgentKind } from '../auth/principal.js';
import {
  checkUniqueSubscribers,
  publicConfig,
  SubscriberConfigSchema,
  SUPPORTED_BILLING,
} from '../sales/accounts/accounts.js';
import { supportedFormats } from '../creative/canonical.js';
import { portfolio } from '../sales/catalog/catalog.js';
import { allFormats, type FormatRow } from '../creative/formats.js';
import { checkSubscriberUrls } from './subscriber-urls.js';
import type { TaskRegistry } from '../runtime/registry.js';
import { proveSubscribers, type SubscriberEntry } from './subscriber-proof.js';
import type { AgentSettings } from '../runtime/settings.js';
import type { TaskStore } from '../runtime/task-store.js';
import type { AgentNotifications, TaskContext } from '../runtime/types.js';
import { CONTROLLER_SCENARIOS } from '../sandbox/scenarios.js';

/** The force/simulate scenarios of 3.0's closed capability enum (newer ones: list_scenarios). */
const DECLARED_SCENARIOS = new Set([
  'force_account_status',
  'force_creative_status',
  'force_media_buy_status',
  'force_session_status',
  'force_task_completion',
  'simulate_budget_spend',
  'simulate_delivery',
]);
import { SUPPORTED_VERSIONS } from '../runtime/versions.js';

const PROTOCOLS: Record<AgentKind, string> = {
  sales: 'media_buy',
  creative: 'creative',
  signals: 'signals',
};

/** The published `adcp-protocol` of each agent's tasks (get_task_status `protocol`). */
const TASK_PROTOCOLS: Record<AgentKind, string> = {
  sales: 'media-buy',
  creative: 'creative',
  signals: 'signals',
};

/** Published sync outcome: `cleared` (now none), `unchanged` (same set) or `updated`. */
function syncAction(previous: unknown[], next: unknown[]): 'updated' | 'unchanged' | 'cleared' {
  if (next.length === 0 && previous.length > 0) return 'cleared';
  // jsonb does not keep key order: compare with sorted keys.
  const key = (c: unknown): string =>
    JSON.stringify(c, (_k, v: unknown) =>
      v && typeof v === 'object' && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
        : v,
    );
  const same = previous.length === next.length && previous.every((c, i) => key(c) === key(next[i]));
  return same ? 'unchanged' : 'updated';
}

/** Coalescence windows (seconds) this seller keeps per event type (§4.6 defaults or shorter). */
export const COALESCENCE_WINDOWS: Record<string, number> = coalescenceWindows();

async function capabilitiesVersion(db: Pick<Pool, 'query'>, schema: string, agent: AgentKind) {
  const { rows } = await db.query<{ version: number; changed_at: Date }>(
    `SELECT version, changed_at FROM ${schema}.capabilities_versions WHERE agent = $1`,
    [agent],
  );
  return rows[0] ?? { version: 1, changed_at: new Date(0) };
}

export async function capabilityDocument(
  db: Pick<Pool, 'query'>,
  schema: string,
  agent: AgentKind,
  settings: AgentSettings,
  taskNames: string[],
): Promise<Record<string, unknown>> {
  const v = await capabilitiesVersion(db, schema, agent);
  const formats: FormatRow[] | null = agent === 'creative' ? await allFormats(db, schema) : null;
  // Key order is the document's order on the wire: each block is added where it was.
  const doc: Record<string, unknown> = {
    [settings.profile.brand]: protocolBlock(settings, v),
    supported_protocols: [PROTOCOLS[agent]],
    agent_url: settings.urls[agent],
    tasks: taskNames,
  };
  doc.webhook_signing = webhookSigningBlock(settings);
  // The published schema takes only an https brand.json (a loopback deployment has none).
  if (settings.brandJsonUrl?.startsWith('https://'))
    doc.identity = { brand_json_url: settings.brandJsonUrl, per_principal_key_isolation: false };
  // Declared: the canonical force/simulate scenarios (DECLARED_SCENARIOS) (the names every release's enum
  // has, 3.0 included); seeding and response-arm directives (force_*_arm, not in 3.0's
  // enum) are discovered with list_scenarios.
  // force_task_completion is not declared either: ours completes a forced discovery task
  // only (get_products), not the create_media_buy tasks a declared one would promise.
  const declared = CONTROLLER_SCENARIOS[agent].filter(
    (x) => DECLARED_SCENARIOS.has(x) && x !== 'force_task_completion',
  );
  // The creative agent's controller has seeding scenarios only: not declared, since 3.0
  // buyers (the registry's @adcp/sdk 6.11.0) validate the block against 3.0's closed enum.
  if (settings.testController && declared.length > 0) {
    doc.compliance_testing = { scenarios: declared };
  }
  if (agent !== 'sales') {
    // Every 3.x capability document carries the account block's billing (the published
    // `account.supported_billing`); these agents invoice the operator, out of band.
    doc.account = {
      supported_billing: ['operator'],
      supported_account_currency_modes: ['per_media_buy'],
    };
  }
  if (agent === 'creative') doc.creative = creativeBlock(settings, formats ?? []);
  if (agent === 'sales') Object.assign(doc, salesBlocks(settings));
  return doc;
}

/** The brand's block: versions, idempotency and capability-change notifications. */
function protocolBlock(
  settings: AgentSettings,
  v: { version: number; changed_at: Date },
): Record<string, unknown> {
  return {
    major_versions: [3],
    // 3.2 version negotiation: the releases this agent answers in (re-pin targets).
    supported_versions: [...SUPPORTED_VERSIONS],
    version: settings.protocolVersion,
    idempotency: { supported: true, replay_ttl_seconds: settings.idempotencyTtlSeconds },
    capability_changes: {
      capabilities_version: String(v.version),
      last_modified: v.changed_at.toISOString(),
      cache_ttl_seconds: 300,
      notifications: {
        supported: true,
        registration_task: 'sync_agent_notification_configs',
        event_types: advertisedTypes('capability_changes'),
        coalescence_window_seconds: NOTIFICATION_TYPES['capabilities.changed'].coalescenceSeconds,
      },
    },
  };
}

function webhookSigningBlock(settings: AgentSettings): Record<string, unknown> {
  if (!settings.webhookSigning.supported) return { supported: false };
  return {
    supported: true,
    profile: settings.profile.webhookTag,
    algorithms: settings.webhookSigning.algorithms,
    legacy_hmac_fallback: settings.webhookSigning.legacyHmacFallback,
    ...(settings.protocolVersion === '3.2'
      ? { delivery_retry_horizon_seconds: settings.webhookSigning.deliveryRetryHorizonSeconds }
      : {}),
  };
}

/** build_creative generates and transforms; sync_creatives/list_creatives keep a library. */
function creativeBlock(settings: AgentSettings, formats: FormatRow[]): Record<string, unknown> {
  return {
    has_creative_library: true,
    supports_generation: true,
    supports_transformation: true,
    // The canonical build catalog (3.1+; the 3.2 source of truth for formats).
    supported_formats: supportedFormats(formats, settings.urls.creative),
    // Explicitly off: no rate card through the protocol, no evaluator (experimental).
    bills_through_adcp: false,
    supports_evaluator: false,
  };
}

/** The sales agent's blocks, in the document's order: media_buy, account, ext. */
function salesBlocks(settings: AgentSettings): Record<string, unknown> {
  return {
    media_buy: {
      // get_products refine (products and proposals, proposal finalize); see sales/catalog/proposals.ts.
      buying_modes: ['brief', 'refine'],
      portfolio: portfolio(settings),
      propagation_surfaces: ['snapshot', 'webhook'],
      reporting_delivery_methods: ['webhook'],
      reporting_capabilities: {
        windowed_pull_granularities: settings.windowedPullGranularities,
        available_reporting_frequencies: ['hourly', 'daily', 'monthly'],
      },
      // Published 3.2: account-level subscribers (sync_accounts) for assignment changes.
      relationship_notifications: {
        supported: true,
        registration_task: 'sync_accounts',
        event_types: advertisedTypes('relationship'),
        repair_tasks: ['get_media_buys'],
        supports_webhook_activity: false,
      },
    },
    account: {
      supported_billing: [...SUPPORTED_BILLING],
      // Accounts carry no currency: each buy names its own (3.2 provisioning modes).
      supported_account_currency_modes: ['per_media_buy'],
      required_for_products: false,
      ...(settings.testController ? { sandbox: true } : {}),
      notifications: {
        supported: true,
        registration_task: 'sync_accounts',
        read_task: 'list_accounts',
        event_types: advertisedTypes('account'),
        supports_webhook_activity: false,
      },
    },
    // What the published enums have no place for: impairments registered per buy, and
    // creative.status_changed on account subscribers (supplement); under `ext`.
    ext: {
      impairment_notifications: {
        supported: true,
        registration_task: 'create_media_buy',
        event_types: advertisedTypes('ext.impairments'),
        repair_tasks: ['get_media_buys'],
        supports_webhook_activity: true,
      },
      account_event_types: advertisedTypes('ext.account_events'),
    },
  };
}

const AgentConfigSchema = SubscriberConfigSchema(AGENT_NOTIFICATION_TYPES);

const SyncAgentConfigsSchema = z.looseObject({
  notification_configs: z.array(AgentConfigSchema).max(20),
  dry_run: z.boolean().optional(),
  idempotency_key: z.string().optional(),
  context: z.unknown().optional(),
});

const TaskStatusSchema = z.looseObject({
  task_id: z.string().min(1).max(255),
  include_result: z.boolean().optional(),
});

export function registerCommonTasks(
  registry: TaskRegistry,
  tasks: TaskStore,
  capabilitiesTask: string,
): void {
  for (const agent of AGENT_KINDS) {
    addCapabilitiesTask(registry, agent, capabilitiesTask);
    addAgentCapabilitiesTask(registry, agent);
    addSyncAgentConfigsTask(registry, agent);
    addTaskStatusTask(registry, tasks, agent);
    addListTasksTask(registry, agent, TASK_PROTOCOLS[agent], quickTask(agent));
  }
}

/** What each common task is: answered at once, errors in the agent's own shape. */
function quickTask(agent: AgentKind) {
  return {
    expectedDuration: '1s',
    mode: 'sync',
    errorShape: agent === 'signals' ? 'signal' : 'single',
  } as const;
}

/** A public, read-only document of the agent (its capabilities), no parameters. */
function publicDocument(agent: AgentKind) {
  return {
    agent,
    schema: z.looseObject({}),
    auth: { tier: 'public' },
    ...quickTask(agent),
    mutating: false,
    readOnly: true,
  } as const;
}

/** The capability document (published name `capabilitiesTask`), public. */
function addCapabilitiesTask(
  registry: TaskRegistry,
  agent: AgentKind,
  capabilitiesTask: string,
): void {
  registry.add({
    name: capabilitiesTask,
    description: 'Return the capability document of this agent.',
    ...publicDocument(agent),
    handle: async (_p, ctx) => ({
      status: 'completed',
      body: await capabilityDocument(
        ctx.db,
        ctx.schema,
        agent,
        ctx.settings,
        registry.list(agent).map((t) => t.name),
      ),
    }),
  });
}

/** `get_agent_capabilities`: per-event coalescence windows and the task list, public. */
function addAgentCapabilitiesTask(registry: TaskRegistry, agent: AgentKind): void {
  registry.add({
    name: 'get_agent_capabilities',
    description: 'Per-event coalescence windows and task list of this agent.',
    ...publicDocument(agent),
    handle: async (_p, ctx) => ({
      status: 'completed',
      body: {
        agent_url: ctx.settings.urls[agent],
        agent_kind: agent,
        coalescence_windows: COALESCENCE_WINDOWS,
        tasks: registry.list(agent).map((t) => ({
          name: t.name,
          auth:
            t.auth.tier === 'public'
              ? 'public'
              : t.auth.tier === 'public-limited'
                ? 'public_limited'
                : 'authenticated',
          expected_duration: t.expectedDuration,
          async: t.mode === 'async',
        })),
      },
    }),
  });
}

/** `sync_agent_notification_configs`: agent-level webhooks, each subscriber proved first. */
function addSyncAgentConfigsTask(registry: TaskRegistry, agent: AgentKind): void {
  registry.add({
    name: 'sync_agent_notification_configs',
    description: 'Register agent-level webhooks (capabilities.changed).',
    agent,
    schema: SyncAgentConfigsSchema,
    auth: { tier: 'authenticated' },
    ...quickTask(agent),
    mutating: true,
    webhookTaskType: 'sync_agent_notification_configs',
    handle: async (params, ctx) => {
      checkUniqueSubscribers(params.notification_configs, 'notification_configs');
      checkSubscriberUrls(ctx, params.notification_configs, 'agent', 'notification_configs');
      const { rows } = await ctx.db.query<{ configs: SubscriberEntry[] }>(
        `SELECT configs FROM ${ctx.schema}.agent_notification_configs WHERE agent = $1 AND principal_id = $2`,
        [agent, ctx.principal!.principal_id],
      );
      const previous = rows[0]?.configs ?? [];
      if (!params.dry_run && !ctx.dryRun) {
        await proveSubscribers(ctx.settings.subscriberVerifier, {
          scope: 'agent',
          sellerAgentUrl: ctx.settings.urls[agent],
          previous,
          next: params.notification_configs as SubscriberEntry[],
          fieldPrefix: 'notification_configs',
        });
      }
      if (!params.dry_run) {
        await ctx.db.query(
          `INSERT INTO ${ctx.schema}.agent_notification_configs (agent, principal_id, configs)
           VALUES ($1, $2, $3)
           ON CONFLICT (agent, principal_id) DO UPDATE SET configs = EXCLUDED.configs, updated_at = now()`,
          [agent, ctx.principal!.principal_id, JSON.stringify(params.notification_configs)],
        );
      }
      const v = await capabilitiesVersion(ctx.db, ctx.schema, agent);
      return {
        status: 'completed',
        body: {
          action: syncAction(previous, params.notification_configs),
          notification_configs: params.notification_configs.map(publicConfig),
          capabilities_version: String(v.version),
          ...(params.dry_run ? { dry_run: true } : {}),
        },
      };
    },
  });
}

/** `get_task_status`: poll an asynchronous task as the work it handed out. */
function addTaskStatusTask(registry: TaskRegistry, tasks: TaskStore, agent: AgentKind): void {
  registry.add({
    name: 'get_task_status',
    description: 'Poll an asynchronous task by task_id.',
    agent,
    schema: TaskStatusSchema,
    auth: { tier: 'authenticated' },
    ...quickTask(agent),
    mutating: false,
    readOnly: true,
    handle: async (params, ctx: TaskContext) => {
      const includeResult = params.include_result ?? false;
      let view = await tasks.view(ctx.db, params.task_id, ctx.principal, true);
      // The record of an asynchronous answer (A2A hands each call a task) polls as the
      // work it handed out (its `task_id`), so a poller on either id sees the work move.
      const work = view.answered ? view.result?.task_id : undefined;
      if (typeof work === 'string' && work !== view.task_id) {
        view = await tasks.view(ctx.db, work, ctx.principal, includeResult);
      } else if (!includeResult && view.result && !isTerminalStatus(view.status)) {
        delete view.result;
      }
      // The poll answers with the polled task's status.
      const { status, answered: _answered, ...rest } = view;
      return { status, body: { ...rest, protocol: TASK_PROTOCOLS[agent] } };
    },
  });
}

/**
 * Publishes a new capability version for an agent, then fires `capabilities.changed` to
 * every active agent-level subscriber (the snapshot is visible before the event).
 */
export async function publishCapabilitiesChange(deps: {
  pool: Pool;
  schema: string;
  agent: AgentKind;
  settings: AgentSettings;
  notifications: AgentNotifications;
  reason: string;
  changedPaths?: string[];
  logger?: Logger;
}): Promise<{ capabilities_version: string; subscribers: number }> {
  const { pool, schema, agent } = deps;
  const { rows } = await pool.query<{ version: number }>(
    `INSERT INTO ${schema}.capabilities_versions (agent, version) VALUES ($1, 2)
     ON CONFLICT (agent) DO UPDATE SET version = ${schema}.capabilities_versions.version + 1, changed_at = now()
     RETURNING version`,
    [agent],
  );
  const version = String(rows[0]!.version);
  const { rows: owners } = await pool.query<{ configs: Array<Record<string, unknown>> }>(
    `SELECT configs FROM ${schema}.agent_notification_configs WHERE agent = $1`,
    [agent],
  );
  const configs = owners
    .flatMap((o) => o.configs)
    .filter(
      (c) => c.active !== false && (c.event_types as string[]).includes('capabilities.changed'),
    );
  // One subscriber at a time: a config the sender refuses (stored before the registration
  // check, or the operator's allow-list changed since) is logged and skipped, never the
  // reason another subscriber misses the event.
  let sent = 0;
  for (const config of configs) {
    try {
      await deps.notifications.agentEvent({
        configs: [config],
        agentUrl: deps.settings.urls[agent],
        capabilitiesVersion: version,
        reason: deps.reason,
        ...(deps.changedPaths ? { changedPaths: deps.changedPaths } : {}),
      });
      sent++;
    } catch (err) {
      deps.logger?.warn(
        { err, agent, subscriber_id: config.subscriber_id },
        'capabilities.changed not sent to a subscriber the sender refuses',
      );
    }
  }
  return { capabilities_version: version, subscribers: sent };
}
