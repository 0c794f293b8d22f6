/**
 * `--publish <url>`: which broker receives the verified, deduplicated events, and under what
 * name (spec: reliability, "2xx only once publication is complete or durably enqueued").
 *
 * One URL names the broker and, in its query, where each event goes. A name is a template
 * over `{sender}` and `{task_type}`, so a buyer can route by seller and by task without a
 * consumer-side filter:
 *
 * - `nats://host:4222?subject=svc.webhooks.{sender}.{task_type}&stream=SVC_WEBHOOKS`
 * - `amqp://user:pass@host:5672/vhost?exchange=svc.webhooks&routing_key={sender}.{task_type}`
 * - `redis://host:6379/0?stream=svc:webhooks` (`rediss://` for TLS)
 *
 * Parsing is pure and done at start, so a bad URL stops the sidecar with a message naming the
 * option before anything is accepted.
 */
import { SvcError } from '../../shared/errors/base.js';

export type BrokerKind = 'nats' | 'amqp' | 'redis';

export class PublishTargetError extends SvcError {
  static override readonly code = 'PUBLISH_TARGET_INVALID';

  constructor(message: string) {
    super(`--publish: ${message}`);
    this.name = 'PublishTargetError';
  }
}

export interface NatsTarget {
  kind: 'nats';
  servers: string[];
  user?: string;
  pass?: string;
  subject: string;
  stream: string;
  /** The stream's duplicate window when this publisher creates the stream. */
  duplicateWindowMs: number;
}

export interface AmqpTarget {
  kind: 'amqp';
  /** The connection URL as amqplib takes it (our own query members removed). */
  url: string;
  exchange: string;
  routingKey: string;
}

export interface RedisTarget {
  kind: 'redis';
  url: string;
  stream: string;
  /** How long a re-publication of the same (sender, key) returns the first entry. */
  dedupWindowMs: number;
  /** Accept a Redis that keeps nothing on disk (events are lost on its restart). */
  volatile: boolean;
}

export type BrokerTarget = NatsTarget | AmqpTarget | RedisTarget;

/** What an event's name is built from. */
export interface NameParts {
  sender: string;
  taskType: string | null;
}

const PLACEHOLDER = /\{(sender|task_type)\}/g;

/** Fills a name template; each value is made safe for the broker's name syntax first. */
export function renderName(
  template: string,
  parts: NameParts,
  safe: (v: string) => string,
): string {
  return template.replace(PLACEHOLDER, (_, k: string) =>
    safe(k === 'sender' ? parts.sender : (parts.taskType ?? 'event')),
  );
}

/**
 * (sender, idempotency_key) as one id: the JetStream message id, the AMQP message id and the
 * Redis duplicate mark. Header-safe and unambiguous: '/' is escaped in both parts.
 */
export function messageId(e: { sender: string; idempotencyKey: string }): string {
  return `${encodeURIComponent(e.sender)}/${encodeURIComponent(e.idempotencyKey)}`;
}

/** NATS subject tokens and AMQP routing-key words: letters, digits, `_` and `-` only. */
export function safeToken(v: string): string {
  const s = v.replace(/[^A-Za-z0-9_-]/g, '_');
  return s.length > 0 ? s : '_';
}

function checkTemplate(name: string, value: string, allowed: RegExp, what: string): string {
  if (value.length === 0 || value.length > 255) {
    throw new PublishTargetError(`${name} must be 1 to 255 characters`);
  }
  const unknown = value.match(/\{[^}]*\}/g)?.find((p) => !/^\{(sender|task_type)\}$/.test(p));
  if (unknown) {
    throw new PublishTargetError(
      `${name} has an unknown placeholder ${unknown}; use {sender} or {task_type}`,
    );
  }
  if (!allowed.test(value.replace(PLACEHOLDER, 'x'))) {
    throw new PublishTargetError(`${name} "${value}" is not a valid ${what}`);
  }
  return value;
}

function durationMs(name: string, raw: string | null, fallback: number): number {
  if (raw === null) return fallback;
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1) {
    throw new PublishTargetError(`${name} takes a whole number of seconds from 1, got "${raw}"`);
  }
  return Number(raw) * 1000;
}

function refuseUnknown(url: URL, known: string[]): void {
  for (const k of url.searchParams.keys()) {
    if (!known.includes(k)) {
      throw new PublishTargetError(
        `unknown query member "${k}" for ${url.protocol.slice(0, -1)}; known: ${known.join(', ')}`,
      );
    }
  }
}

// A NATS subject: dot-separated tokens, no wildcards or white space, no empty token.
const NATS_SUBJECT = /^[^.\s*>]+(\.[^.\s*>]+)*$/;
// A stream name: no white space, dots, wildcards or path separators.
const NATS_STREAM = /^[^\s.*>/\\]{1,255}$/;

function natsTarget(url: URL, brand: string): NatsTarget {
  refuseUnknown(url, ['subject', 'stream', 'duplicate_window']);
  if (url.pathname !== '' && url.pathname !== '/') {
    throw new PublishTargetError('a nats URL has no path; name the subject with ?subject=');
  }
  const subject = checkTemplate(
    'subject',
    url.searchParams.get('subject') ?? `${brand}.webhooks.{sender}.{task_type}`,
    NATS_SUBJECT,
    'NATS subject (dot-separated tokens, no wildcards or spaces)',
  );
  if (/[^.]\{|\}[^.]/.test(subject)) {
    throw new PublishTargetError(`subject "${subject}": a placeholder must be a whole token`);
  }
  const stream = url.searchParams.get('stream') ?? `${brand.toUpperCase()}_WEBHOOKS`;
  if (!NATS_STREAM.test(stream))
    throw new PublishTargetError(`stream "${stream}" is not a valid stream name`);
  return {
    kind: 'nats',
    // URL.hostname keeps an IPv6 address's brackets, as host:port needs them.
    servers: [`${url.hostname}:${url.port || '4222'}`],
    ...(url.username ? { user: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { pass: decodeURIComponent(url.password) } : {}),
    subject,
    stream,
    duplicateWindowMs: durationMs(
      'duplicate_window',
      url.searchParams.get('duplicate_window'),
      120_000,
    ),
  };
}

// An exchange name and a routing key (AMQP 0-9-1 shortstr; we keep to the safe characters).
const AMQP_EXCHANGE = /^[A-Za-z0-9_.:-]{1,255}$/;
const AMQP_ROUTING_KEY = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

function amqpTarget(url: URL, brand: string): AmqpTarget {
  const ours = ['exchange', 'routing_key'];
  const exchange = url.searchParams.get('exchange') ?? `${brand}.webhooks`;
  if (!AMQP_EXCHANGE.test(exchange)) {
    throw new PublishTargetError(`exchange "${exchange}" is not a valid exchange name`);
  }
  const routingKey = checkTemplate(
    'routing_key',
    url.searchParams.get('routing_key') ?? '{sender}.{task_type}',
    AMQP_ROUTING_KEY,
    'routing key (dot-separated words)',
  );
  const conn = new URL(url.href);
  for (const k of ours) conn.searchParams.delete(k);
  // amqplib's own connection members (heartbeat, frameMax, channelMax, locale) pass through.
  refuseUnknown(conn, ['heartbeat', 'frameMax', 'channelMax', 'locale']);
  return { kind: 'amqp', url: conn.href, exchange, routingKey };
}

// A Redis key: printable, no white space.
const REDIS_KEY = /^[!-~]{1,255}$/;

function redisTarget(url: URL, brand: string): RedisTarget {
  refuseUnknown(url, ['stream', 'dedup_window', 'volatile']);
  const stream = checkTemplate(
    'stream',
    url.searchParams.get('stream') ?? `${brand}:webhooks`,
    REDIS_KEY,
    'Redis key (printable, no spaces)',
  );
  const volatile = url.searchParams.get('volatile');
  if (volatile !== null && volatile !== 'accept') {
    throw new PublishTargetError(`volatile takes only "accept", got "${volatile}"`);
  }
  const conn = new URL(url.href);
  conn.search = '';
  return {
    kind: 'redis',
    url: conn.href,
    stream,
    dedupWindowMs: durationMs('dedup_window', url.searchParams.get('dedup_window'), 120_000),
    volatile: volatile === 'accept',
  };
}

/** Parses `--publish`; throws PublishTargetError naming the option and what it accepts. */
export function parseBrokerTarget(input: string, brand: string): BrokerTarget {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new PublishTargetError(`"${input}" is not a URL; use nats://, amqp(s):// or redis(s)://`);
  }
  if (!url.hostname) throw new PublishTargetError(`"${input}" names no host`);
  switch (url.protocol) {
    case 'nats:':
      return natsTarget(url, brand);
    case 'amqp:':
    case 'amqps:':
      return amqpTarget(url, brand);
    case 'redis:':
    case 'rediss:':
      return redisTarget(url, brand);
    default:
      throw new PublishTargetError(
        `unknown scheme ${url.protocol} in "${input}"; use nats://, amqp(s):// or redis(s)://`,
      );
  }
}
