/**
 * Configuration from the environment: every variable the service reads is declared here,
 * with its default and what it accepts, so a bad value stops the process with a message
 * that names the variable instead of failing somewhere deep inside.
 */
import { join } from 'node:path';
import { z } from 'zod';
import { BRANDS, DEFAULT_BRAND } from './brand.js';
import { clusterNodesProblem } from './infra/redis.js';
import { SvcError } from './errors/base.js';

const url = (protocols: string[]) =>
  z.string().refine((v) => {
    try {
      return protocols.includes(new URL(v).protocol);
    } catch {
      return false;
    }
  });

const port = z.coerce.number().int().min(0).max(65535);

/** A duration as variables take it: a whole number and a unit (`30d`, `720h`). */
const DURATION = /^[1-9]\d{0,8}[smhd]$/;

function durationSeconds(v: string): number {
  const unit = { s: 1, m: 60, h: 3600, d: 86_400 }[v.slice(-1) as 's' | 'm' | 'h' | 'd'];
  return Number(v.slice(0, -1)) * unit;
}

/** Each entry: the schema, and the human text of what it accepts (for error messages). */
const variables = {
  SVC_BRAND: { schema: z.enum(BRANDS).default(DEFAULT_BRAND), accepts: 'svc or adcp' },
  SVC_PROTOCOL_VERSION: {
    schema: z.enum(['3.1', '3.2']).default('3.2'),
    accepts: '3.1 or 3.2',
  },
  DATABASE_URL: {
    schema: url(['postgres:', 'postgresql:']).optional(),
    accepts:
      'a postgres:// URL (unset: svc start runs an embedded PostgreSQL under SVC_DATA_DIR/postgres, which the other commands use)',
    shown: 'the embedded PostgreSQL',
  },
  REDIS_URL: {
    schema: url(['redis:', 'rediss:']).optional(),
    accepts:
      'a redis:// URL (unset: the Redis of the running svc start, else redis://127.0.0.1:6379)',
    shown: 'redis://127.0.0.1:6379',
  },
  REDIS_CLUSTER_NODES: {
    schema: z
      .string()
      .refine((v) => clusterNodesProblem(v) === null)
      .optional(),
    accepts:
      'comma-separated host:port seed nodes of a Redis Cluster, set instead of REDIS_URL (every command then uses the cluster)',
  },
  SVC_DISPATCH_SHARDS: {
    schema: z.coerce.number().int().min(1).max(1024).default(16),
    accepts:
      'dispatch shards, a positive integer 1-1024: deliveries are split over this many BullMQ queues by destination origin, each its own Redis Cluster hash tag (sender/README.md says how to change it on a running deployment)',
  },
  NODE_ENV: {
    schema: z.string().optional(),
    accepts: 'production: no secrets on the terminal, no development login pages',
  },
  SVC_SERVICE_WAIT_SECONDS: {
    schema: z.coerce.number().int().min(0).max(86400).default(60),
    accepts:
      'how long long-running commands wait for PostgreSQL and Redis to answer, with back-off, 0-86400',
  },
  SVC_QUEUE_PREFIX: {
    schema: z
      .string()
      .regex(/^[A-Za-z0-9_.:{}-]{1,64}$/)
      .optional(),
    accepts:
      'BullMQ key prefix shared by svc start, svc worker and svc approve (unset: {<brand>:<id of the database>}, one per deployment)',
    shown: '{<brand>:<database id>}',
  },
  LOG_LEVEL: {
    schema: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    accepts: 'fatal, error, warn, info, debug, trace or silent',
  },
  SVC_KEYS_DIR: {
    schema: z.string().min(1).optional(),
    accepts: 'the directory of signing JWK files (unset: SVC_DATA_DIR/keys, for every command)',
    shown: 'SVC_DATA_DIR/keys',
  },
  SVC_DATA_DIR: { schema: z.string().min(1).default('.data'), accepts: 'a directory path' },
  SVC_HTTP_HOST: { schema: z.string().min(1).default('127.0.0.1'), accepts: 'a host name or IP' },
  SVC_SALES_PORT: { schema: port.default(3001), accepts: 'a port number 0-65535' },
  SVC_CREATIVE_PORT: { schema: port.default(3002), accepts: 'a port number 0-65535' },
  SVC_SIGNALS_PORT: { schema: port.default(3003), accepts: 'a port number 0-65535' },
  SVC_CONSOLE_PORT: {
    schema: port.default(3004),
    accepts: "the seller console's port on SVC_HTTP_HOST, 0-65535 (svc start, svc console)",
  },
  SVC_CONSOLE_AUTH: {
    schema: z.enum(['token', 'oidc']).default('token'),
    accepts:
      'how operators sign in to the seller console in a browser: token (console.token of the credentials file) or oidc (through SVC_CONSOLE_OIDC_ISSUER); the JSON API takes the token as Bearer either way',
  },
  SVC_CONSOLE_OIDC_ISSUER: {
    schema: z.string().url().optional(),
    accepts:
      "the OpenID provider's issuer URL for SVC_CONSOLE_AUTH=oidc (unset: svc start's built-in provider, the sales agent's /oauth)",
    shown: 'http://SVC_HTTP_HOST:SVC_SALES_PORT/oauth',
  },
  SVC_CONSOLE_OPERATORS: {
    schema: z
      .string()
      .regex(/^[^,\s]+(,[^,\s]+)*$/)
      .optional(),
    accepts:
      'comma-separated OIDC subjects (sub) admitted as console operators (unset: console.operator of the credentials file)',
    shown: 'console.operator',
  },
  SVC_OAUTH_OPEN_REGISTRATION: {
    schema: z.enum(['0', '1']).default('0'),
    accepts:
      '1: anyone may register OAuth clients at /oauth/register without the initial access token (a client still acts as nobody until svc oauth clients bind); 0: the token is required',
  },
  SVC_OAUTH_INITIAL_ACCESS_TOKEN: {
    schema: z
      .string()
      .regex(/^[\x21-\x7e]{32,512}$/)
      .optional(),
    accepts:
      'the initial access token /oauth/register demands as Authorization: Bearer, 32-512 printable characters (unset: one made on first start, in oauth.initial_access_token of the credentials file)',
    shown: 'generated',
  },
  SVC_OAUTH_DEV_LOGIN: {
    schema: z.enum(['0', '1']).default('0'),
    accepts:
      "1: the OAuth server's development sign-in page (authorization_code), on a loopback SVC_HTTP_HOST only, never with NODE_ENV=production; it asks for the principal's API key or a one-time code printed on svc start's terminal",
  },
  SVC_SENDER_ALLOW_HOSTS: {
    schema: z
      .string()
      .regex(/^[A-Za-z0-9.:\-[\]]*(,[A-Za-z0-9.:\-[\]]+)*$/)
      .default(''),
    accepts:
      "comma-separated hosts a sender may reach over http or at reserved addresses (local testing; svc approve and svc worker also take the running svc start's)",
  },
  SVC_SIGNING_KID: {
    schema: z.string().min(1).optional(),
    accepts: 'the kid in SVC_KEYS_DIR that signs webhooks (default: the newest Ed25519 key)',
  },
  SVC_BRAND_JSON_URL: {
    schema: z.url({ protocol: /^https$/ }).optional(),
    accepts:
      "the https URL of the operator's brand.json, published as identity.brand_json_url in every agent's capabilities (the protocol requires it when webhooks are signed; unset: the sales agent's /.well-known/brand.json when svc start is served over https, else none)",
  },
  SVC_RETRY_HORIZON_SECONDS: {
    schema: z.coerce.number().int().min(86400).max(604800).default(86400),
    accepts: 'delivery_retry_horizon_seconds, 86400-604800',
  },
  SVC_RETENTION: {
    schema: z
      .string()
      .regex(DURATION)
      .default('30d')
      .transform((v) => durationSeconds(v)),
    accepts:
      'how long deliveries and their attempt records are kept: a whole number and s, m, h or d (30d, 720h), at least SVC_RETRY_HORIZON_SECONDS; whole days past it are dropped (sender/README.md, Storage)',
    shown: '30d',
  },
  SVC_IMPAIRMENT_WINDOW_SECONDS: {
    schema: z.coerce.number().int().min(0).max(300).default(300),
    accepts:
      'coalescence window of general impairments in seconds, 0-300 (the default is the ceiling)',
  },
  SVC_IMPAIRMENT_FAST_WINDOW_SECONDS: {
    schema: z.coerce.number().int().min(0).max(59).default(0),
    accepts: 'coalescence window of fraud and brand-safety impairments in seconds, 0-59 (0: none)',
  },
  SVC_CHANNEL_TICK_MS: {
    schema: z.coerce.number().int().min(50).max(60000).default(1000),
    accepts: 'how often reporting schedules and impairment windows are checked, 50-60000 ms',
  },
  SVC_REPORT_AGGREGATION: {
    schema: z.enum(['0', '1']).default('0'),
    accepts:
      '1 to send reports of buys with identical reporting registrations, due together, as one payload',
  },
  SVC_WORKER_CONCURRENCY: {
    schema: z.coerce.number().int().min(1).max(2000).default(64),
    accepts: 'deliveries in flight per worker process, 1-2000',
  },
  SVC_WORKER_DURABLE_CLAIMS: {
    schema: z.enum(['0', '1']).default('1'),
    accepts:
      '1: each claim waits for the WAL flush before its request goes out (an attempt sent is recorded even across a database crash); 0: one WAL flush less per claim batch, a crash may forget an attempt that was sent (sender/README.md)',
  },
  SVC_RECEIVER_LISTEN: {
    schema: z
      .string()
      .regex(/^(\[[0-9a-fA-F:.]+\]|[^:\s]+):\d{1,5}$/)
      .default('127.0.0.1:8787'),
    accepts: 'host:port the receiver sidecar listens on',
  },
  SVC_RECEIVER_SCHEMA: {
    schema: z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,62}$/)
      .default('receiver'),
    accepts: 'PostgreSQL schema of the receiver tables ([a-z0-9_])',
  },
  SVC_RECEIVER_TRUST: { schema: z.string().min(1).optional(), accepts: 'a trust file path' },
  SVC_RECEIVER_FORWARD: {
    schema: url(['http:', 'https:']).optional(),
    accepts: "the app's URL events are forwarded to (http only on loopback)",
  },
  SVC_RECEIVER_QUEUE: {
    schema: z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,64}$/)
      .optional(),
    accepts: 'a durable queue name, 1-64 of [A-Za-z0-9_.:-]',
  },
  SVC_RECEIVER_PUBLISH: {
    schema: z.string().min(1).optional(),
    accepts: 'a broker URL events are published to: nats://, amqp(s):// or redis(s)://',
  },
  SVC_RECEIVER_QUEUE_TOKEN: {
    schema: z.string().min(32).optional(),
    accepts: 'bearer token (32+ chars) of the sidecar queue pull API',
  },
  SVC_RECEIVER_WORKERS: {
    schema: z.coerce.number().int().min(1).max(64).default(1),
    accepts: 'receiver sidecar worker processes sharing the port, 1-64',
  },
  SVC_RECEIVER_ALLOW_HTTP_LOOPBACK: {
    schema: z.enum(['0', '1']).default('0'),
    accepts:
      '1 to let the receiver fetch brand.json, JWKS and capabilities over plain http from loopback hosts (local testing only)',
  },
  SVC_RECEIVER_SCHEME: {
    schema: z.enum(['http', 'https']).optional(),
    accepts: 'http or https: the scheme senders sign (https behind a TLS proxy)',
  },
  SVC_RECEIVER_MAX_CONNECTIONS: {
    schema: z.coerce.number().int().min(1).max(1_000_000).default(1024),
    accepts: 'open connections per sidecar process before new ones are closed, 1-1000000',
  },
  SVC_RECEIVER_MAX_CONNECTIONS_PER_ADDRESS: {
    schema: z.coerce.number().int().min(1).max(1_000_000).default(256),
    accepts:
      'open connections per client address (IPv6: per /64) before its oldest idle one is closed, 1-1000000 (at most the process cap; behind a proxy, raise it to the proxy pool)',
  },
  SVC_RECEIVER_PUBLIC_ORIGINS: {
    schema: z.string().optional(),
    accepts:
      "the receiver's own public origins, comma-separated (https://buyer.example,http://10.0.0.5:8787): deliveries addressed to any other are refused",
    shown: 'unset: any Host is accepted',
  },
  SVC_RECEIVER_CONSOLE_TOKEN: {
    // Any string here, so a bad value is never echoed; run.ts checks its length.
    schema: z.string().optional(),
    accepts: 'the sidecar console token, 16+ characters (instead of credentials.json)',
    shown: 'from credentials.json',
  },
  SVC_RECEIVER_CONSOLE_TOKEN_FILE: {
    schema: z.string().min(1).optional(),
    accepts:
      'a file holding the sidecar console token, 16+ characters, readable by its owner only (mode 0600 or 0400)',
  },
  SVC_RECEIVER_BODY_BUDGET_MIB: {
    schema: z.coerce.number().int().min(1).max(65_536).default(64),
    accepts:
      'MiB of request bodies held at once per process before 503 + Retry-After, 1-65536 (at least the 1 MiB body cap)',
  },
  SVC_RECEIVER_HEADERS_TIMEOUT_MS: {
    schema: z.coerce.number().int().min(100).max(600_000).default(10_000),
    accepts: 'ms to receive a request head before 408, 100-600000',
  },
  SVC_RECEIVER_BODY_TIMEOUT_MS: {
    schema: z.coerce.number().int().min(100).max(600_000).default(20_000),
    accepts: 'ms to receive a whole request body before 408, 100-600000',
  },
  SVC_RECEIVER_BODY_IDLE_TIMEOUT_MS: {
    schema: z.coerce.number().int().min(100).max(600_000).default(10_000),
    accepts: 'ms without a body chunk before 400 body_incomplete, 100-600000',
  },
  SVC_RECEIVER_SYNCHRONOUS_COMMIT: {
    schema: z.enum(['0', '1']).default('0'),
    accepts:
      '1 to wait for the WAL flush on every claim, nonce and done-mark (receiver/README.md, Durability)',
  },
  SVC_RECEIVER_ADMISSION_SHORT_RATIO: {
    schema: z.coerce.number().positive().max(1000).optional(),
    accepts:
      'new-keyid alarm (a): multiple of the 24 h moving average per 5 min (unset: randomised around 3)',
  },
  SVC_RECEIVER_ADMISSION_MEDIUM_RATIO: {
    schema: z.coerce.number().positive().max(1000).optional(),
    accepts:
      'new-keyid alarm (b): multiple of the 30-day P95 per 5 min (unset: randomised around 2)',
  },
  SVC_RECEIVER_ADMISSION_LONG_RATIO: {
    schema: z.coerce.number().positive().max(1000).optional(),
    accepts:
      'new-keyid alarm (c): multiple of max(90-day P99, the (d) ceiling) (unset: randomised around 1.5)',
  },
  SVC_RECEIVER_ADMISSION_CEILING_MIN: {
    schema: z.coerce.number().positive().max(1_000_000).optional(),
    accepts: 'new-keyid alarm (d): floor of the per-5-min ceiling (unset: randomised around 20)',
  },
  SVC_RECEIVER_ADMISSION_CEILING_FRACTION: {
    schema: z.coerce.number().positive().max(1).optional(),
    accepts:
      'new-keyid alarm (d): fraction of the 30-day unique keyids per 5 min (unset: randomised around 0.1)',
  },
  SVC_RECEIVER_ADMISSION_MIN_NEW: {
    schema: z.coerce.number().int().min(1).max(1_000_000).default(3),
    accepts: 'new keyids a 5-min window needs before alarm (a) or (b) may trip, >= 1',
  },
  SVC_RECEIVER_ADMISSION_EVALUATE_SECONDS: {
    schema: z.coerce.number().int().min(5).max(3600).default(60),
    accepts: 'seconds between new-keyid admission evaluations, 5-3600',
  },
  SVC_REPLAY_PER_KEYID_CAP: {
    schema: z.coerce.number().int().min(1).max(100_000_000).default(100_000),
    accepts: 'replay-cache entries per keyid before rate_abuse, 1-100000000',
  },
  SVC_REPLAY_AGGREGATE_CAP: {
    schema: z.coerce.number().int().min(1).max(1_000_000_000).default(10_000_000),
    accepts: 'replay-cache entries over all keyids before rate_abuse, 1-1000000000',
  },
  SVC_AGENTS_CLOCK_SPEED: {
    schema: z.coerce.number().positive().max(1_000_000).default(1),
    accepts: 'virtual seconds per real second for agent tasks and delivery simulation (> 0)',
  },
  SVC_AGENTS_APPROVAL: {
    schema: z
      .string()
      .regex(/^(manual|never|\d{1,7})$/)
      .default('30'),
    accepts: 'manual, never, or the seconds after which pending media buys are approved',
  },
  SVC_AGENTS_VALIDATE_RESPONSES: {
    schema: z.enum(['off', 'warn', 'strict']).default('off'),
    accepts:
      'off, warn or strict: check agent responses against the published schemas (strict: a drift is a fault; tests)',
  },
  SVC_AGENTS_WINDOWED_GRANULARITIES: {
    schema: z
      .string()
      .regex(/^((hourly|daily|weekly|monthly)(,(hourly|daily|weekly|monthly))*)?$/)
      .default('hourly'),
    accepts: 'comma-separated windowed_pull_granularities (hourly, daily...); empty for none',
  },
} as const;

type Variables = typeof variables;
export type Config = { [K in keyof Variables]: z.output<Variables[K]['schema']> };

export class ConfigError extends SvcError {
  static override readonly code = 'ERR_CONFIG';

  readonly variable: string;
  constructor(variable: string, value: string, accepts: string) {
    super(`${variable}=${JSON.stringify(value)} is not valid: it accepts ${accepts}`);
    this.name = 'ConfigError';
    this.variable = variable;
  }
}

/** Reads and validates every declared variable; throws ConfigError on the first bad one. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const out: Record<string, unknown> = {};
  for (const [name, { schema, accepts }] of Object.entries(variables)) {
    const raw = env[name];
    const value = raw === '' ? undefined : raw;
    const parsed = (schema as z.ZodType).safeParse(value);
    if (!parsed.success) throw new ConfigError(name, raw ?? '', accepts);
    out[name] = parsed.data;
  }
  // Retention drops whole days: never one that may still hold a delivery being retried.
  if ((out.SVC_RETENTION as number) < (out.SVC_RETRY_HORIZON_SECONDS as number)) {
    throw new ConfigError(
      'SVC_RETENTION',
      env.SVC_RETENTION ?? '',
      `${variables.SVC_RETENTION.accepts}; here at least ${out.SVC_RETRY_HORIZON_SECONDS as number}s`,
    );
  }
  if (out.REDIS_URL !== undefined && out.REDIS_CLUSTER_NODES !== undefined) {
    throw new ConfigError(
      'REDIS_CLUSTER_NODES',
      String(out.REDIS_CLUSTER_NODES),
      'the seed nodes of a Redis Cluster, set instead of REDIS_URL, not with it: unset one of REDIS_URL and REDIS_CLUSTER_NODES',
    );
  }
  return out as Config;
}

/** For entry points: a bad variable ends the process with exit code 2 and a clear message. */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`svc: configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

/** The signing keys directory every command uses by default. */
export function keysDirOf(config: Pick<Config, 'SVC_KEYS_DIR' | 'SVC_DATA_DIR'>): string {
  return config.SVC_KEYS_DIR ?? join(config.SVC_DATA_DIR, 'keys');
}

/** NODE_ENV=production: secrets are written to files only, never printed. */
export function isProduction(config: Pick<Config, 'NODE_ENV'>): boolean {
  return config.NODE_ENV === 'production';
}

export function splitHosts(value: string): string[] {
  return value
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
}

/** What `svc --help` and the README list: each variable, what it accepts, its default. */
export function describeVariables(): Array<{ name: string; accepts: string; default: string }> {
  return Object.entries(variables).map(([name, v]) => {
    const d = (v.schema as z.ZodType).safeParse(undefined);
    const value = d.success && d.data !== undefined ? String(d.data) : '';
    const shown = 'shown' in v ? (v as { shown: string }).shown : undefined;
    return { name, accepts: v.accepts, default: shown ?? (value === '' ? 'unset' : value) };
  });
}

/** The default of one variable, as `--help` shows it. */
export function defaultOf(name: keyof Variables): string {
  return describeVariables().find((v) => v.name === name)?.default ?? 'unset';
}
