/**
 * Publication to a Redis stream (`--publish redis://...`): one `XADD` per event, the verified
 * body in the `body` field and the event's metadata in the others (the same names as the
 * forward's headers). The XADD and a duplicate mark for (sender, idempotency_key) are one Lua
 * script, so a re-publication within the dedup window returns the first entry instead of adding
 * a second: Redis streams have no duplicate window of their own.
 *
 * "Durably enqueued" depends on the Redis: one that keeps nothing on disk (no AOF, no RDB
 * saves) loses every entry on a restart, so `start` refuses it unless the URL says
 * `volatile=accept`. A Redis that will not show its configuration is accepted with a warning.
 */
import { Redis } from 'ioredis';
import { messageId, renderName, type RedisTarget } from './broker-target.js';
import { eventHeaders, type Publisher, type ReceivedEvent } from './types.js';

export interface RedisStreamPublisherOptions {
  target: RedisTarget;
  brand: string;
  /** How long a connection or a command may take, in ms. */
  timeoutMs?: number;
}

// KEYS[1] the stream, KEYS[2] the duplicate mark; ARGV[1] the window in ms, then field/value
// pairs. Returns {entry id, 1 if it was already there}.
const PUBLISH_ONCE = `
local prior = redis.call('GET', KEYS[2])
if prior then return {prior, 1} end
local id = redis.call('XADD', KEYS[1], '*', unpack(ARGV, 2))
redis.call('SET', KEYS[2], id, 'PX', ARGV[1])
return {id, 0}
`;

/**
 * A key in the same cluster slot as `key`: Redis hashes only the first `{...}` of a key when
 * it is non-empty, so the stream's own tag is kept if it has one, and the whole stream name
 * becomes the tag if not (its hash is then the stream's own).
 */
export function sameSlotKey(key: string, suffix: string): string {
  const open = key.indexOf('{');
  const close = open >= 0 ? key.indexOf('}', open + 1) : -1;
  if (close > open + 1) return `${key}${suffix}`;
  return `{${key}}${suffix}`;
}

/** Whether the server keeps data across a restart; null when it will not say. */
async function persists(redis: Redis): Promise<boolean | null> {
  try {
    const [, aof] = (await redis.config('GET', 'appendonly')) as string[];
    const [, save] = (await redis.config('GET', 'save')) as string[];
    return aof === 'yes' || (save ?? '').trim() !== '';
  } catch {
    return null;
  }
}

export class RedisStreamPublisher implements Publisher {
  private readonly target: RedisTarget;
  private readonly brand: string;
  readonly redis: Redis;

  constructor(options: RedisStreamPublisherOptions) {
    this.target = options.target;
    this.brand = options.brand;
    const timeout = options.timeoutMs ?? 5_000;
    this.redis = new Redis(options.target.url, {
      lazyConnect: true,
      connectTimeout: timeout,
      commandTimeout: timeout,
      // While disconnected a publish fails at once (503, the seller retries) instead of
      // waiting in an offline queue past the seller's timeout.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
    });
    // Connection errors surface through the failing publish; without a listener ioredis
    // would print each reconnect attempt.
    this.redis.on('error', () => {});
    this.redis.defineCommand('publishOnce', { numberOfKeys: 2, lua: PUBLISH_ONCE });
  }

  /** Connects and checks persistence; returns warnings for the start-up log. */
  async start(): Promise<string[]> {
    await this.redis.connect();
    const kept = await persists(this.redis);
    if (kept === false && !this.target.volatile) {
      throw new Error(
        `--publish: the Redis at ${new URL(this.target.url).host} keeps nothing on disk (no AOF, no RDB saves), ` +
          'so every event in the stream is lost when it restarts; turn on appendonly, or add ' +
          '"volatile=accept" to the URL to accept that loss',
      );
    }
    if (kept === null) {
      return [
        'the Redis does not show its persistence settings (CONFIG refused): events are only as durable as its AOF/RDB configuration',
      ];
    }
    if (kept === false) {
      return [
        'volatile=accept: the Redis keeps nothing on disk; events in the stream are lost when it restarts',
      ];
    }
    return [];
  }

  streamOf(e: ReceivedEvent): string {
    return renderName(this.target.stream, e, (v) => v.replace(/[^!-~]/g, '_') || '_');
  }

  /** Adds the event once; returns the stream entry id (the first one for a re-publication). */
  async publish(e: ReceivedEvent): Promise<void> {
    await this.add(e);
  }

  async add(e: ReceivedEvent): Promise<{ id: string; duplicate: boolean }> {
    const stream = this.streamOf(e);
    const fields: (string | Buffer)[] = [];
    for (const [k, v] of Object.entries(eventHeaders(e, this.brand))) fields.push(k, v);
    fields.push('body', e.body);
    const run = (
      this.redis as unknown as Record<string, (...a: unknown[]) => Promise<[string, number]>>
    ).publishOnce!;
    const [id, dup] = await run.call(
      this.redis,
      stream,
      sameSlotKey(stream, `:dedup:${messageId(e)}`),
      String(this.target.dedupWindowMs),
      ...fields,
    );
    return { id, duplicate: dup === 1 };
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
