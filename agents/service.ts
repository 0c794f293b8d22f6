/**
 * The agents' core, assembled: schema, seed, clock, auth, registry of every task,
 * dispatcher, executor (async tasks + delivery simulation), operator actions and the
 * sender-facing delivery data source. Transports (MCP, A2A, HTTP routes) build on this.
 */
import type { BrandProfile } from '../shared/brand.js';
import type { Logger } from '../shared/infra/logger.js';
import type { Pool } from '../shared/infra/pg.js';
import { assertSchemaName } from '../shared/infra/pg.js';
import {
  Authenticator,
  issueToken,
  loadAgentSecrets,
  type AgentAuthKeys,
} from './auth/authenticate.js';
import { onboardPrincipal, revokeApiKeys } from './auth/principal-admin.js';
import { oauthResources } from './auth/resources.js';
import {
  AGENT_KINDS,
  type AgentKind,
  type CommercialRelationship,
  type Permissions,
} from './auth/principal.js';
import { publishCapabilitiesChange, registerCommonTasks } from './common/capabilities.js';
import { getPreview, registerCreativeAgentTasks } from './creative/creative-agent.js';
import {
  validateProductAuthorization,
  demoPublishers,
  type ProductAuthorizationResult,
} from './registry/product-authorization.js';
import { loadClock, type AgentClock } from './runtime/clock.js';
import { TaskDispatcher } from './runtime/dispatcher.js';
import { TaskExecutor } from './runtime/executor.js';
import { TaskRegistry } from './runtime/registry.js';
import { defaultSettings, type AgentSettings } from './runtime/settings.js';
import type { AgentNotifications } from './runtime/types.js';
import { registerAccountTasks } from './sales/accounts/accounts.js';
import { registerCatalogTasks } from './sales/catalog/catalog.js';
import { registerEventSourceTasks } from './sales/settlement/event-sources.js';
import { registerUsageTasks } from './sales/settlement/usage.js';
import { registerCreativeTasks } from './sales/creatives/creatives.js';
import { registerDeliveryTasks, SimulatedDeliverySource } from './sales/delivery/delivery.js';
import { DeliverySimulator } from './sales/delivery/simulator.js';
import { MediaBuyOperator, registerMediaBuyTasks } from './sales/media-buys/media-buys.js';
import { registerSignalTasks } from './signals/signal-agent.js';
import { registerTestController } from './testing/controller.js';
import { markDemoPrincipalsSandbox } from './sandbox/fixtures.js';
import { demoCredentials, seedCatalog, type DemoCredential } from './seed.js';
import { DEFAULT_AGENTS_SCHEMA, migrateAgents } from './store/migrations.js';

export interface AgentsCoreOptions {
  pool: Pool;
  /** Default `agents`. */
  schema?: string;
  profile: BrandProfile;
  /** The sender's NotificationCore (or RecordingNotifications). */
  notifications: AgentNotifications;
  settings?: Partial<AgentSettings>;
  /** A clock to use (tests: ManualClock); default the persisted clock at `clockSpeed`. */
  clock?: AgentClock;
  /** Virtual seconds per real second (default 1). */
  clockSpeed?: number;
  /** Extra verification keys per agent (EdDSA key, OAuth JWKS, audiences). */
  authKeys?: Partial<Record<AgentKind, Partial<AgentAuthKeys>>>;
  /** Run the seed catalog (default true). */
  seed?: boolean;
  logger?: Logger;
  /** Real ms between executor polls (default 500). */
  pollIntervalMs?: number;
}

export interface AgentsCore {
  schema: string;
  settings: AgentSettings;
  clock: AgentClock;
  registry: TaskRegistry;
  dispatcher: TaskDispatcher;
  executor: TaskExecutor;
  simulator: DeliverySimulator;
  operator: MediaBuyOperator;
  /** The sender's `DeliveryDataSource` for MediaBuyChannels. */
  deliverySource: SimulatedDeliverySource;
  /** HS256 secrets per agent (persisted). */
  secrets: Record<AgentKind, Uint8Array>;
  issueToken(
    agent: AgentKind,
    sub: string,
    permissions?: Permissions,
    ttlSeconds?: number,
  ): Promise<string>;
  demoCredentials(): Promise<DemoCredential[]>;
  /** Creates/updates a principal and issues a new API key (shown once). */
  onboardPrincipal(input: {
    agent: AgentKind;
    principalId: string;
    name?: string;
    permissions: Permissions;
    agentAccess?: boolean;
    commercialRelationship?: CommercialRelationship;
  }): Promise<{ agent: AgentKind; principal_id: string; api_key: string }>;
  revokeApiKeys(agent: AgentKind, principalId: string): Promise<number>;
  getPreview(previewId: string): Promise<{ html: string; expires_at: string } | null>;
  validateProductAuthorization(body: unknown): ProductAuthorizationResult;
  publishCapabilitiesChange(
    agent: AgentKind,
    reason: string,
    changedPaths?: string[],
  ): Promise<{
    capabilities_version: string;
    subscribers: number;
  }>;
  /** Starts the background executor. */
  start(): void;
  stop(): Promise<void>;
}

/** Runs `fn` at most once per `everyMs` of real time. */
function throttled(everyMs: number, fn: () => Promise<unknown>): () => Promise<unknown> {
  let last = 0;
  return async () => {
    if (Date.now() - last < everyMs) return;
    last = Date.now();
    await fn();
  };
}

/** Drops idempotency records and previews past their expiry (virtual time). */
export async function purgeExpired(
  pool: Pool,
  schema: string,
  clock: AgentClock,
): Promise<{ idempotency: number; previews: number; answered: number }> {
  const now = clock.now();
  const a = await pool.query(`DELETE FROM ${schema}.idempotency WHERE expires_at <= $1`, [now]);
  const b = await pool.query(`DELETE FROM ${schema}.previews WHERE expires_at <= $1`, [now]);
  // Tasks answered at once (stored only so A2A tasks/get finds their ids) are kept a day.
  const c = await pool.query(
    `DELETE FROM ${schema}.tasks
      WHERE (initial_status IN ('completed', 'failed', 'rejected', 'canceled')
             OR state @> '{"answered_at_once": true}'::jsonb)
        AND updated_at <= now() - make_interval(secs => $1)`,
    [ANSWERED_TASK_RETENTION_SECONDS],
  );
  return { idempotency: a.rowCount ?? 0, previews: b.rowCount ?? 0, answered: c.rowCount ?? 0 };
}

/** How long a task answered at once stays pollable (real seconds). */
export const ANSWERED_TASK_RETENTION_SECONDS = 86_400;

/** Each agent's token keys: its secret, the audiences a token may name, the caller's overrides. */
function agentAuthKeys(
  settings: AgentSettings,
  secrets: Record<AgentKind, Uint8Array>,
  overrides: AgentsCoreOptions['authKeys'],
): Record<AgentKind, AgentAuthKeys> {
  const keys = {} as Record<AgentKind, AgentAuthKeys>;
  for (const agent of AGENT_KINDS) {
    keys[agent] = {
      hs256Secret: secrets[agent],
      // The origin and its two endpoints: the RFC 9728 resources a token may be bound to.
      audiences: [agent, ...oauthResources(settings.urls[agent])],
      ...(overrides?.[agent] ?? {}),
    };
  }
  return keys;
}

/** Every agent's tasks; the test controller (and sandbox demo principals) when enabled. */
async function registerAllTasks(
  registry: TaskRegistry,
  tasks: TaskDispatcher['tasks'],
  settings: AgentSettings,
  capabilitiesTask: string,
  pool: Pool,
  schema: string,
): Promise<void> {
  registerCatalogTasks(registry);
  registerMediaBuyTasks(registry, tasks);
  registerCreativeTasks(registry);
  registerDeliveryTasks(registry);
  registerAccountTasks(registry);
  registerEventSourceTasks(registry);
  registerUsageTasks(registry);
  registerCreativeAgentTasks(registry);
  registerSignalTasks(registry);
  if (settings.testController) {
    registerTestController(registry);
    await markDemoPrincipalsSandbox(pool, schema);
  }
  registerCommonTasks(registry, tasks, capabilitiesTask);
}

export async function createAgentsCore(options: AgentsCoreOptions): Promise<AgentsCore> {
  const schema = assertSchemaName(options.schema ?? DEFAULT_AGENTS_SCHEMA);
  const { pool, notifications } = options;
  await migrateAgents(pool, schema);
  if (options.seed !== false) await seedCatalog(pool, schema);
  const secrets = await loadAgentSecrets(pool, schema);
  const clock = options.clock ?? (await loadClock(pool, schema, options.clockSpeed ?? 1));
  const base = defaultSettings(options.profile, options.settings ?? {});
  const settings: AgentSettings = {
    ...base,
    publishers: options.settings?.publishers ?? demoPublishers(base.urls.sales),
  };

  const keys = agentAuthKeys(settings, secrets, options.authKeys);
  const authenticator = new Authenticator({ pool, schema, profile: options.profile, keys });
  const registry = new TaskRegistry();
  const dispatcher = new TaskDispatcher({
    pool,
    schema,
    registry,
    authenticator,
    notifications,
    clock,
    settings,
    ...(options.logger ? { logger: options.logger } : {}),
  });
  const tasks = dispatcher.tasks;
  await registerAllTasks(registry, tasks, settings, options.profile.capabilitiesTask, pool, schema);

  const simulator = new DeliverySimulator({ pool, schema, clock, notifications });
  const executor = new TaskExecutor({
    pool,
    schema,
    registry,
    notifications,
    clock,
    settings,
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.pollIntervalMs ? { pollIntervalMs: options.pollIntervalMs } : {}),
    jobs: [
      { name: 'delivery-simulator', run: () => simulator.tick() },
      { name: 'purge-expired', run: throttled(60_000, () => purgeExpired(pool, schema, clock)) },
    ],
  });
  const operator = new MediaBuyOperator({ pool, schema, tasks, notifications, clock });
  const deliverySource = new SimulatedDeliverySource({ pool, schema, clock, notifications });

  return {
    schema,
    settings,
    clock,
    registry,
    dispatcher,
    executor,
    simulator,
    operator,
    deliverySource,
    secrets,
    issueToken: (agent, sub, permissions, ttlSeconds) =>
      issueToken({
        secret: secrets[agent],
        agent,
        sub,
        ...(permissions ? { permissions } : {}),
        ...(ttlSeconds ? { ttlSeconds } : {}),
      }),
    demoCredentials: () => demoCredentials(pool, schema),
    onboardPrincipal: (input) => onboardPrincipal(pool, schema, input),
    revokeApiKeys: (agent, principalId) => revokeApiKeys(pool, schema, agent, principalId),
    getPreview: (id) => getPreview(pool, schema, clock, id),
    validateProductAuthorization: (body) =>
      validateProductAuthorization(body, settings.publishers, clock.now()),
    publishCapabilitiesChange: (agent, reason, changedPaths) =>
      publishCapabilitiesChange({
        pool,
        schema,
        agent,
        settings,
        notifications,
        reason,
        ...(changedPaths ? { changedPaths } : {}),
        ...(options.logger ? { logger: options.logger } : {}),
      }),
    start: () => executor.start(),
    stop: () => executor.stop(),
  };
}
