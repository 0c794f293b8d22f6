/**
 * OPTIONAL replay store in Redis, for deployments that run a persistent Redis (AOF) and want
 * the replay check off PostgreSQL. It is NOT the default: the Redis this project runs keeps
 * nothing on disk, so a restart forgets every nonce and reopens the replay window (up to
 * ~7 minutes of captured requests could be replayed; the idempotency store would still
 * deduplicate the events themselves). Use `PgReplayStore` unless that trade is acceptable.
 *
 * Layout: one sorted set per keyid (member nonce, score expiry in ms) and one aggregate
 * sorted set (member `keyid\n nonce`), all under one hash-tagged prefix so a Cluster keeps
 * them in one slot. Insert is one Lua script (atomic with both cap checks, exact counts,
 * expired members dropped on the way); time is the Redis server's clock, shared by every
 * instance. `atCap` and `seen` are read-only ZCOUNT / ZSCORE.
 */
import type { Redis, Result } from 'ioredis';
import {
  DEFAULT_AGGREGATE_CAP,
  DEFAULT_MIN_TTL_SECONDS,
  DEFAULT_PER_KEYID_CAP,
  MAX_TTL_SECONDS,
  type InsertOutcome,
} from './pg-replay-store.js';

export interface RedisReplayStoreOptions {
  /** Key prefix; wrap in braces (`{name}`) for Cluster (see hashTaggedPrefix). */
  prefix: string;
  perKeyidCap?: number;
  aggregateCap?: number;
  minTtlSeconds?: number;
  /** Test seam: ms since the epoch instead of Redis TIME. */
  clock?: () => number;
}

// KEYS: 1 keyid set, 2 aggregate set, 3 harness cap counter
// ARGV: 1 nonce, 2 member for the aggregate set, 3 ttl ms, 4 cap, 5 aggregate cap, 6 now ms|''
const INSERT = `
local now = tonumber(ARGV[6])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) > now then return 'replayed' end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local n = redis.call('ZCARD', KEYS[1]) + tonumber(redis.call('GET', KEYS[3]) or '0')
if n >= tonumber(ARGV[4]) then return 'cap' end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return 'cap' end
local expires = now + tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], expires, ARGV[1])
redis.call('ZADD', KEYS[2], expires, ARGV[2])
for i = 1, 2 do
  if redis.call('PTTL', KEYS[i]) < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[i], ARGV[3]) end
end
return 'inserted'
`;

export class RedisReplayStore {
  readonly perKeyidCap: number;
  readonly aggregateCap: number;
  readonly minTtlSeconds: number;
  private readonly prefix: string;
  private readonly clock: (() => number) | undefined;

  constructor(
    private readonly redis: Redis,
    opts: RedisReplayStoreOptions,
  ) {
    this.prefix = opts.prefix;
    this.perKeyidCap = opts.perKeyidCap ?? DEFAULT_PER_KEYID_CAP;
    this.aggregateCap = opts.aggregateCap ?? DEFAULT_AGGREGATE_CAP;
    this.minTtlSeconds = opts.minTtlSeconds ?? DEFAULT_MIN_TTL_SECONDS;
    this.clock = opts.clock;
    if (!redis.replayInsert) redis.defineCommand('replayInsert', { numberOfKeys: 3, lua: INSERT });
  }

  // Keyids are length-prefixed so no keyid can forge another's key name.
  private keyidSet(keyid: string): string {
    return `${this.prefix}:replay:k:${keyid.length}:${keyid}`;
  }
  private get aggregateSet(): string {
    return `${this.prefix}:replay:all`;
  }
  private harnessKey(keyid: string): string {
    return `${this.prefix}:replay:h:${keyid.length}:${keyid}`;
  }

  private async now(): Promise<number> {
    if (this.clock) return this.clock();
    const [s, us] = await this.redis.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  }

  async atCap(keyid: string): Promise<boolean> {
    const now = await this.now();
    const [live, harness, all] = await Promise.all([
      this.redis.zcount(this.keyidSet(keyid), `(${now}`, '+inf'),
      this.redis.get(this.harnessKey(keyid)),
      this.redis.zcount(this.aggregateSet, `(${now}`, '+inf'),
    ]);
    return live + Number(harness ?? 0) >= this.perKeyidCap || all >= this.aggregateCap;
  }

  async seen(keyid: string, nonce: string): Promise<boolean> {
    const [score, now] = await Promise.all([
      this.redis.zscore(this.keyidSet(keyid), nonce),
      this.now(),
    ]);
    return score !== null && Number(score) > now;
  }

  async insert(keyid: string, nonce: string, ttlSeconds: number): Promise<InsertOutcome> {
    const ttl = Math.min(
      Math.max(Math.ceil(Number.isFinite(ttlSeconds) ? ttlSeconds : 0), this.minTtlSeconds),
      MAX_TTL_SECONDS,
    );
    return (await this.redis.replayInsert(
      this.keyidSet(keyid),
      this.aggregateSet,
      this.harnessKey(keyid),
      nonce,
      `${keyid}\n${nonce}`,
      String(ttl * 1000),
      String(this.perKeyidCap),
      String(this.aggregateCap),
      this.clock ? String(this.clock()) : '',
    )) as InsertOutcome;
  }

  /** Vector 018: counts the cap as full for this keyid. */
  async harnessFillCap(keyid: string): Promise<void> {
    await this.redis.set(this.harnessKey(keyid), String(this.perKeyidCap), 'EX', MAX_TTL_SECONDS);
  }

  async harnessClearCap(keyid: string): Promise<void> {
    await this.redis.del(this.harnessKey(keyid));
  }

  async harnessInstallEntries(
    entries: ReadonlyArray<{ keyid: string; nonce: string }>,
  ): Promise<void> {
    for (const e of entries) await this.insert(e.keyid, e.nonce, this.minTtlSeconds);
  }
}

declare module 'ioredis' {
  interface RedisCommander<Context> {
    replayInsert(
      keyidSet: string,
      aggregateSet: string,
      harness: string,
      nonce: string,
      member: string,
      ttlMs: string,
      cap: string,
      aggregateCap: string,
      nowMs: string,
    ): Result<string, Context>;
  }
}
