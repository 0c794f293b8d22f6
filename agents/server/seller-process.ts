/**
 * The whole seller side in one process (`svc start`): PostgreSQL (migrated), Redis (a
 * private redis-server when none answers), the signing key set (generated under the
 * data dir on first start), the sender (NotificationCore, media-buy channels, delivery
 * worker, activity log), the agents core (seeded catalog, executor) and one HTTP origin
 * per agent with `/mcp`, `/a2a`, the agent card, the key documents and OAuth.
 * Every part is stopped in reverse order by `stop()`.
 */
import { agentOptionsFromConfig } from '../config.js';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import type Koa from 'koa';
import { brandProfile, type BrandProfile } from '../../shared/brand.js';
import type { Config } from '../../shared/config.js';
import type { Logger } from '../../shared/infra/logger.js';
import { createPool, type Pool } from '../../shared/infra/pg.js';
import { configuredRedisUrl } from '../../shared/infra/command-services.js';
import { keysDirOf } from '../../shared/config.js';
import {
  readLiveDeployment,
  removeDeployment,
  writeDeployment,
} from '../../shared/infra/deployment.js';
import { startEmbeddedPostgres } from '../../shared/infra/embedded-postgres.js';
import {
  DEFAULT_REDIS_URL,
  ensureRedis,
  ServiceUnavailableError,
  waitForPostgres,
  waitForRedis,
  type RedisHandle,
} from '../../shared/infra/services.js';
import {
  DEFAULT_SENDER_SCHEMA,
  keysRouter,
  startSender,
  type BrandAgent,
  type KeySet,
  type OAuthClientAdmin,
  type RunningConsole,
  type SenderRuntime,
} from '../../sender/index.js';
import { bindClient, listClients, unbindClient } from '../oauth/bindings.js';
import { AGENT_KINDS, type AgentKind } from '../auth/principal.js';
import type { AgentSettings } from '../runtime/settings.js';
import { createAgentsCore, type AgentsCore } from '../service.js';
import { DEFAULT_AGENTS_SCHEMA } from '../store/migrations.js';
import type { DemoCredential } from '../seed.js';
import { createOAuthServer, type OAuthServer } from '../oauth/server.js';
import { DevLogin, DEV_LOGIN_VARIABLE } from '../oauth/dev-login.js';
import { isLoopbackAddress } from '../../shared/net/ssrf.js';
import { createAgentApp } from './agent-app.js';

export interface AgentsServiceOptions {
  config: Config;
  logger: Logger;
  /**
   * Listen ports per agent and of the operator console (default from config; 0 picks a
   * free port). When `ports` is given without `console`, the console takes a free port.
   */
  ports?: Partial<Record<AgentKind | 'console', number>>;
  agentsSchema?: string;
  senderSchema?: string;
  /** BullMQ key prefix (tests: a unique one). */
  queuePrefix?: string;
  keysDir?: string;
  /** Extra hosts the sender may reach over http / at reserved addresses (tests: 127.0.0.1). */
  allowHosts?: string[];
  settings?: Partial<AgentSettings>;
  /** Executor poll interval (real ms). */
  pollIntervalMs?: number;
  /** Mount the OAuth authorisation server on every agent origin (default true). */
  oauth?: boolean;
  /** Where the development sign-in's one-time codes go (default: this terminal, stderr). */
  announceDevLoginCode?: (code: string) => void;
}

export interface AgentsService {
  profile: BrandProfile;
  urls: Record<AgentKind, string>;
  core: AgentsCore;
  keys: KeySet;
  oauth: OAuthServer | null;
  databaseUrl: string;
  /** The embedded server's data directory, when DATABASE_URL was unset. */
  embeddedPostgres: string | null;
  redisUrl: string;
  /** Why a private redis-server serves this deployment (null: the configured Redis). */
  privateRedisReason: string | null;
  queuePrefix: string;
  credentials: DemoCredential[];
  /** The operator console, or null when its port was taken (logged). */
  console: Pick<RunningConsole, 'url' | 'credentialsFile' | 'oidcIssuer'> | null;
  stop(): Promise<void>;
}

async function listen(port: number, host: string): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}

type Stops = Array<() => Promise<unknown> | unknown>;

export async function startAgentsService(o: AgentsServiceOptions): Promise<AgentsService> {
  const { config, logger } = o;
  const profile = brandProfile(config.SVC_BRAND);
  const stops: Stops = [];
  const stop = async () => {
    for (const s of stops.reverse()) {
      try {
        await s();
      } catch (err) {
        logger.warn({ err }, 'shutdown step failed');
      }
    }
    stops.length = 0;
  };
  try {
    const { databaseUrl, embeddedPostgres } = await backingDatabase(config, logger, stops);
    const redisHandle = await backingRedis(config, logger);
    stops.push(() => redisHandle.stop());
    // Listen first: the agents' URLs (cards, format ids, brand.json) need the real ports.
    const { servers, urls } = await listenAgents(o, stops);
    const pool: Pool = createPool({
      connectionString: databaseUrl,
      max: 20,
      applicationName: `${profile.brand}-agents`,
    });
    stops.push(() => pool.end());
    const agentsSchema = o.agentsSchema ?? DEFAULT_AGENTS_SCHEMA;
    let core: AgentsCore | null = null;
    const sender = await startSender({
      config,
      pool,
      redisUrl: redisHandle.url,
      profile,
      logger,
      schema: o.senderSchema ?? DEFAULT_SENDER_SCHEMA,
      keysDir: o.keysDir ?? keysDirOf(config),
      ...(o.queuePrefix ? { queuePrefix: o.queuePrefix } : {}),
      ...(o.allowHosts ? { allowHosts: o.allowHosts } : {}),
      reportSource: () => core,
    });
    stops.push(() => sender.stop());
    const oauth = o.oauth === false ? null : await oauthServer(o, pool, profile, urls);
    core = await agentsCore(o, { pool, profile, urls, sender, oauth });
    const agents = core;
    sender.start();
    agents.start();
    stops.push(() => agents.stop());
    mountAgents({ servers, urls, profile, core: agents, keys: sender.keys, oauth, logger });
    const credentials = await agents.demoCredentials();
    // What `svc approve`, `svc worker`... on this data directory use for what they leave unset.
    await writeDeployment(config.SVC_DATA_DIR, {
      pid: process.pid,
      databaseUrl,
      redisUrl: redisHandle.url,
      queuePrefix: sender.queuePrefix,
      senderAllowHosts: sender.allowHosts,
      keysDir: resolve(o.keysDir ?? keysDirOf(config)),
    });
    stops.push(() => removeDeployment(config.SVC_DATA_DIR));
    if (agents.settings.testController) {
      logger.info(
        { principals: [...new Set(credentials.map((c) => c.principal_id))] },
        'comply_test_controller is on for the demo principals (sandbox accounts only)',
      );
    }
    const operatorConsole = await sender.startConsole({
      port: o.ports?.console ?? (o.ports ? 0 : config.SVC_CONSOLE_PORT),
      oidcIssuer: oauth ? oauth.issuer('sales') : null,
      oidcRegistrationToken: oauth?.initialAccessToken ?? null,
      oauthClients: oauth ? oauthClientAdmin(pool, agentsSchema) : null,
    });
    return {
      profile,
      urls,
      core: agents,
      keys: sender.keys,
      oauth,
      databaseUrl,
      embeddedPostgres,
      redisUrl: redisHandle.url,
      privateRedisReason: redisHandle.reason,
      queuePrefix: sender.queuePrefix,
      credentials,
      console: operatorConsole,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** One listening server per agent (port 0 picks a free one), closed gently on stop. */
async function listenAgents(
  o: AgentsServiceOptions,
  stops: Stops,
): Promise<{ servers: Record<AgentKind, Server>; urls: Record<AgentKind, string> }> {
  const { config } = o;
  const host = config.SVC_HTTP_HOST;
  const servers = {} as Record<AgentKind, Server>;
  const urls = {} as Record<AgentKind, string>;
  const defaults: Record<AgentKind, number> = {
    sales: config.SVC_SALES_PORT,
    creative: config.SVC_CREATIVE_PORT,
    signals: config.SVC_SIGNALS_PORT,
  };
  for (const agent of AGENT_KINDS) {
    const server = await listen(o.ports?.[agent] ?? defaults[agent], host);
    servers[agent] = server;
    stops.push(
      () =>
        new Promise<void>((r) => {
          server.closeIdleConnections();
          server.close(() => r());
          setTimeout(() => {
            server.closeAllConnections();
            r();
          }, 2000).unref();
        }),
    );
    const port = (server.address() as AddressInfo).port;
    const h = host.includes(':') ? `[${host}]` : host;
    urls[agent] = `http://${h}:${port}`;
  }
  return { servers, urls };
}

/** The OAuth authorisation server every agent origin mounts (registration per config). */
function oauthServer(
  o: AgentsServiceOptions,
  pool: Pool,
  profile: BrandProfile,
  urls: Record<AgentKind, string>,
): Promise<OAuthServer> {
  const { config, logger } = o;
  const schema = o.agentsSchema ?? DEFAULT_AGENTS_SCHEMA;
  return createOAuthServer({
    pool,
    schema,
    profile,
    urls,
    logger,
    devLogin: devLoginFromConfig(config, pool, schema, o.announceDevLoginCode),
    registration: {
      open: config.SVC_OAUTH_OPEN_REGISTRATION === '1',
      ...(config.SVC_OAUTH_INITIAL_ACCESS_TOKEN
        ? { initialAccessToken: config.SVC_OAUTH_INITIAL_ACCESS_TOKEN }
        : {}),
    },
  });
}

/** The agents' core on the sender's NotificationCore, with the deployment's settings. */
function agentsCore(
  o: AgentsServiceOptions,
  w: {
    pool: Pool;
    profile: BrandProfile;
    urls: Record<AgentKind, string>;
    sender: SenderRuntime;
    oauth: OAuthServer | null;
  },
): Promise<AgentsCore> {
  const { config, logger } = o;
  const { urls } = w;
  const fromConfig = agentOptionsFromConfig(config);
  return createAgentsCore({
    pool: w.pool,
    ...(o.agentsSchema ? { schema: o.agentsSchema } : {}),
    profile: w.profile,
    notifications: w.sender.notifications,
    clockSpeed: fromConfig.clockSpeed,
    settings: {
      ...fromConfig.settings,
      urls,
      previewBaseUrl: `${urls.creative}/previews`,
      webhookActivity: w.sender.activity,
      brandJsonUrl: config.SVC_BRAND_JSON_URL ?? `${urls.sales}/.well-known/brand.json`,
      // The demo deployment carries its test controller, for its demo (sandbox) principals.
      testController: true,
      ...(o.settings ?? {}),
    },
    ...(w.oauth ? { authKeys: w.oauth.authKeys() } : {}),
    logger,
    ...(o.pollIntervalMs ? { pollIntervalMs: o.pollIntervalMs } : {}),
  });
}

/** Each agent's app (MCP, A2A, card, key documents, OAuth) on its listening server. */
function mountAgents(w: {
  servers: Record<AgentKind, Server>;
  urls: Record<AgentKind, string>;
  profile: BrandProfile;
  core: AgentsCore;
  keys: KeySet;
  oauth: OAuthServer | null;
  logger: Logger;
}): void {
  const { urls, profile, oauth } = w;
  const brandAgents: BrandAgent[] = AGENT_KINDS.map((agent) => ({
    type: agent,
    url: urls[agent],
    id: `${profile.brand}_${agent}_agent`,
    jwks_uri: `${urls[agent]}/.well-known/jwks.json`,
  }));
  for (const agent of AGENT_KINDS) {
    const extra: Koa.Middleware[] = oauth ? [oauth.middleware(agent)] : [];
    const app = createAgentApp({
      agent,
      core: w.core,
      profile,
      keysRouter: keysRouter({ keys: w.keys, profile, agents: brandAgents }),
      extra,
      oauth: oauth !== null,
      logger: w.logger,
    });
    w.servers[agent].on('request', app.callback());
  }
}

/** The console's OAuth client action: bindings.ts, audited as the console's operator. */
function oauthClientAdmin(pool: Pool, schema: string): OAuthClientAdmin {
  const who = (operator: string) => ({ actor: operator, via: 'console' as const });
  return {
    list: () => listClients(pool, schema),
    bind: (i, operator) =>
      bindClient(
        pool,
        schema,
        { agent: i.agent, clientId: i.client_id, principalId: i.principal_id },
        who(operator),
      ),
    unbind: (i, operator) =>
      unbindClient(pool, schema, { agent: i.agent, clientId: i.client_id }, who(operator)),
  };
}

/**
 * The OAuth development sign-in, only when asked for by name, never in production and only
 * on a loopback listener; its one-time codes go to this terminal (stderr).
 */
export function devLoginFromConfig(
  config: Config,
  pool: Pool,
  schema: string,
  announce?: (code: string) => void,
): DevLogin | null {
  if (config.SVC_OAUTH_DEV_LOGIN !== '1') return null;
  if (config.NODE_ENV === 'production') {
    throw new ServiceUnavailableError(
      `${DEV_LOGIN_VARIABLE}=1 is a development sign-in: not with NODE_ENV=production`,
    );
  }
  const host = config.SVC_HTTP_HOST.replace(/^\[|\]$/g, '');
  if (host !== 'localhost' && !isLoopbackAddress(host)) {
    throw new ServiceUnavailableError(
      `${DEV_LOGIN_VARIABLE}=1 needs SVC_HTTP_HOST on loopback (127.0.0.1, ::1), not ${config.SVC_HTTP_HOST}`,
    );
  }
  return new DevLogin({
    pool,
    schema,
    announce:
      announce ??
      ((code) =>
        process.stderr.write(
          `OAuth development sign-in: one-time code ${code} (single use; any principal, or a console operator)\n`,
        )),
  });
}

/**
 * DATABASE_URL (waited for), or, unset, the embedded server under the data directory,
 * stopped last. Refuses to run beside another `svc start` on the same data directory.
 */
async function backingDatabase(
  config: Config,
  logger: Logger,
  stops: Array<() => Promise<unknown> | unknown>,
): Promise<{ databaseUrl: string; embeddedPostgres: string | null }> {
  const other = await readLiveDeployment(config.SVC_DATA_DIR);
  if (other) {
    throw new ServiceUnavailableError(
      `another svc start (pid ${other.pid}) runs on the data directory ${resolve(config.SVC_DATA_DIR)}: ` +
        'stop it, or give this one its own SVC_DATA_DIR.',
    );
  }
  if (config.DATABASE_URL !== undefined) {
    await waitForPostgres(config.DATABASE_URL, {
      waitSeconds: config.SVC_SERVICE_WAIT_SECONDS,
      logger,
    });
    return { databaseUrl: config.DATABASE_URL, embeddedPostgres: null };
  }
  const embedded = await startEmbeddedPostgres(config.SVC_DATA_DIR, logger);
  stops.push(() => embedded.stop());
  return {
    databaseUrl: embedded.url,
    embeddedPostgres: embedded.dir,
  };
}

/**
 * REDIS_URL when set (waited for: the operator chose it); unset, the local default when it
 * answers, else a private redis-server under the data directory (logged with the reason).
 */
async function backingRedis(config: Config, logger: Logger): Promise<RedisHandle> {
  const configured = configuredRedisUrl(config);
  if (configured !== undefined) {
    await waitForRedis(configured, { waitSeconds: config.SVC_SERVICE_WAIT_SECONDS, logger });
    return { url: configured, child: null, reason: null, stop: async () => {} };
  }
  return ensureRedis(DEFAULT_REDIS_URL, config.SVC_DATA_DIR, logger);
}
