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
import { readdir } from 'node:fs/promises';
import type Koa from 'koa';
import { brandProfile, type BrandProfile } from '../../shared/brand.js';
import type { Config } from '../../shared/config.js';
import type { Logger } from '../../shared/infra/logger.js';
import { createPool, type Pool } from '../../shared/infra/pg.js';
import { createRedis } from '../../shared/infra/redis.js';
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
  ActivityLog,
  DEFAULT_SENDER_SCHEMA,
  DeliveryQueue,
  DeliveryWorker,
  deploymentQueuePrefix,
  KeySet,
  keysRouter,
  migrateSender,
  writeNewKey,
  type BrandAgent,
} from '../../sender/index.js';
import {
  consoleOidcFromConfig,
  startConsole,
  type OAuthClientAdmin,
  type RunningConsole,
} from '../../sender/console/index.js';
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
import { senderWiring } from './sender-wiring.js';

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

async function loadOrCreateKeys(dir: string, activeKid?: string): Promise<KeySet> {
  let present = false;
  try {
    present = (await readdir(dir)).some((n) => n.endsWith('.json'));
  } catch {
    present = false;
  }
  if (!present) await writeNewKey(dir, 'ed25519');
  return KeySet.fromDirectory(dir, activeKid ? { activeKid } : {});
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

export async function startAgentsService(o: AgentsServiceOptions): Promise<AgentsService> {
  const { config, logger } = o;
  const profile = brandProfile(config.SVC_BRAND);
  const stops: Array<() => Promise<unknown> | unknown> = [];
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

    const pool: Pool = createPool({
      connectionString: databaseUrl,
      max: 20,
      applicationName: `${profile.brand}-agents`,
    });
    stops.push(() => pool.end());
    const senderSchema = o.senderSchema ?? DEFAULT_SENDER_SCHEMA;
    await migrateSender(pool, senderSchema);

    const keysDir = o.keysDir ?? keysDirOf(config);
    const keys = await loadOrCreateKeys(keysDir, config.SVC_SIGNING_KID);

    const redis = createRedis(redisHandle.url);
    const workerRedis = createRedis(redisHandle.url);
    stops.push(() => {
      redis.disconnect();
      workerRedis.disconnect();
    });
    const queuePrefix =
      o.queuePrefix ??
      config.SVC_QUEUE_PREFIX ??
      (await deploymentQueuePrefix(pool, senderSchema, profile.brand));
    const prefix = { prefix: queuePrefix, shards: config.SVC_DISPATCH_SHARDS };
    const queue = new DeliveryQueue({ connection: redis, ...prefix });
    stops.push(() => queue.close());
    const activity = new ActivityLog({ pool, schema: senderSchema, logger });
    let core: AgentsCore | null = null;
    const { outbox, channels, notifications, allowHosts } = senderWiring({
      pool,
      queue,
      schema: senderSchema,
      config,
      profile,
      allowHosts: o.allowHosts,
      logger,
      core: () => core,
    });
    await channels.migrate();

    const oauth =
      o.oauth === false
        ? null
        : await createOAuthServer({
            pool,
            schema: o.agentsSchema ?? DEFAULT_AGENTS_SCHEMA,
            profile,
            urls,
            logger,
            devLogin: devLoginFromConfig(
              config,
              pool,
              o.agentsSchema ?? DEFAULT_AGENTS_SCHEMA,
              o.announceDevLoginCode,
            ),
            registration: {
              open: config.SVC_OAUTH_OPEN_REGISTRATION === '1',
              ...(config.SVC_OAUTH_INITIAL_ACCESS_TOKEN
                ? { initialAccessToken: config.SVC_OAUTH_INITIAL_ACCESS_TOKEN }
                : {}),
            },
          });

    const fromConfig = agentOptionsFromConfig(config);
    core = await createAgentsCore({
      pool,
      ...(o.agentsSchema ? { schema: o.agentsSchema } : {}),
      profile,
      notifications,
      clockSpeed: fromConfig.clockSpeed,
      settings: {
        ...fromConfig.settings,
        urls,
        previewBaseUrl: `${urls.creative}/previews`,
        webhookActivity: activity,
        brandJsonUrl: config.SVC_BRAND_JSON_URL ?? `${urls.sales}/.well-known/brand.json`,
        // The demo deployment carries its test controller, for its demo (sandbox) principals.
        testController: true,
        ...(o.settings ?? {}),
      },
      ...(oauth ? { authKeys: oauth.authKeys() } : {}),
      logger,
      ...(o.pollIntervalMs ? { pollIntervalMs: o.pollIntervalMs } : {}),
    });
    const agentsCore = core;

    const worker = new DeliveryWorker({
      outbox,
      signer: { key: keys.signingKey(), profile },
      connection: workerRedis,
      prefix: queuePrefix,
      concurrency: Math.max(4, Math.ceil(config.SVC_WORKER_CONCURRENCY / 8)),
      maxInFlight: config.SVC_WORKER_CONCURRENCY,
      allowHosts,
      activity,
      logger,
    });
    stops.push(async () => {
      await worker.close();
    });
    channels.start();
    stops.push(() => channels.stop());
    agentsCore.start();
    stops.push(() => agentsCore.stop());

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
        core: agentsCore,
        profile,
        keysRouter: keysRouter({ keys, profile, agents: brandAgents }),
        extra,
        oauth: oauth !== null,
        logger,
      });
      servers[agent].on('request', app.callback());
    }
    const credentials = await agentsCore.demoCredentials();
    // What `svc approve`, `svc worker`... on this data directory use for what they leave unset.
    await writeDeployment(config.SVC_DATA_DIR, {
      pid: process.pid,
      databaseUrl,
      redisUrl: redisHandle.url,
      queuePrefix,
      senderAllowHosts: allowHosts,
      keysDir: resolve(keysDir),
    });
    stops.push(() => removeDeployment(config.SVC_DATA_DIR));
    if (agentsCore.settings.testController) {
      logger.info(
        { principals: [...new Set(credentials.map((c) => c.principal_id))] },
        'comply_test_controller is on for the demo principals (sandbox accounts only)',
      );
    }
    const operatorConsole = await startOperatorConsole(o, {
      pool,
      queue,
      senderSchema,
      logger,
      oidcIssuer: oauth ? oauth.issuer('sales') : null,
      oidcRegistrationToken: oauth?.initialAccessToken ?? null,
      oauthClients: oauth ? oauthClientAdmin(pool, o.agentsSchema ?? DEFAULT_AGENTS_SCHEMA) : null,
    });
    if (operatorConsole) stops.push(() => operatorConsole.close());
    return {
      profile,
      urls,
      core: agentsCore,
      keys,
      oauth,
      databaseUrl,
      embeddedPostgres,
      redisUrl: redisHandle.url,
      privateRedisReason: redisHandle.reason,
      queuePrefix,
      credentials,
      console: operatorConsole,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
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

/** The seller's operator console (sender/console); a taken port is logged, not fatal. */
async function startOperatorConsole(
  o: AgentsServiceOptions,
  w: {
    pool: Pool;
    queue: DeliveryQueue;
    senderSchema: string;
    logger: Logger;
    /** The built-in provider (SVC_CONSOLE_AUTH=oidc signs operators in through it). */
    oidcIssuer: string | null;
    /** Its initial access token: the console registers itself as a client with it. */
    oidcRegistrationToken: string | null;
    oauthClients: OAuthClientAdmin | null;
  },
): Promise<RunningConsole | null> {
  const port = o.ports?.console ?? (o.ports ? 0 : o.config.SVC_CONSOLE_PORT);
  const fromConfig = consoleOidcFromConfig(o.config, w.oidcIssuer);
  const oidc =
    fromConfig && fromConfig.issuer === w.oidcIssuer && w.oidcRegistrationToken
      ? { ...fromConfig, initialAccessToken: w.oidcRegistrationToken }
      : fromConfig;
  try {
    return await startConsole({
      pool: w.pool,
      queue: w.queue,
      schema: w.senderSchema,
      dataDir: o.config.SVC_DATA_DIR,
      host: o.config.SVC_HTTP_HOST,
      port,
      brand: o.config.SVC_BRAND,
      logger: w.logger,
      oidc,
      ...(w.oauthClients ? { oauthClients: w.oauthClients } : {}),
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    w.logger.warn({ port }, 'operator console not started: port in use (set SVC_CONSOLE_PORT)');
    return null;
  }
}
