/**
 * Per-origin admission: at most N attempts in flight per origin, and an origin that
 * answered 429 paused for its Retry-After. A job that finds every slot of its origin taken
 * waits in the origin's line (bounded per origin and over all origins) and gets the next
 * slot that frees up, in arrival order; one refused (line full, paused, waited too long) is
 * pushed back to the delayed set (before any claim, so it stays the same row, key and
 * bytes). A slow or throttled buyer thus holds at most its line of the worker's slots, and
 * a backlog for one origin is served in order instead of going round the queue.
 *
 * With `shared`, N holds across every worker process on one Redis: a slot is a lease, a
 * member of a sorted set per origin scored by its expiry, under the queue's hash-tagged
 * prefix (the origin's dispatch shard: one Cluster slot). A process leases slots in small blocks and reuses them locally
 * while it keeps using them, so the hot path stays a counter check; a block unused for
 * `lingerMs` goes back, and leases are renewed every `ttlMs / 4` (a live holder misses
 * three renewals before it loses one). A SIGKILLed worker's slots come back when their
 * TTL (3 s by default) ends. Nothing here is durable, nor needs to be.
 */
import { randomBytes } from 'node:crypto';

export type Admission = { ok: true; release: () => void } | { ok: false; waitMs: number };

export interface SharedSlotsOptions {
  /** The Redis client to lease on: the worker's BullMQ client, or an ioredis client. */
  redis: () => SlotRedis | Promise<SlotRedis>;
  /**
   * The key prefix, with its hash tag, e.g. `{svc}`; or the prefix of each origin (its
   * dispatch shard's, so an origin's slots live with its jobs on one Cluster master).
   */
  prefix: string | ((origin: string) => string);
  /** Attempts in flight per origin across all processes (default: the per-process limit). */
  limit?: number;
  /** Lease lifetime without renewal (default 3 s): how long a dead worker's slots stay taken. */
  ttlMs?: number;
  /** Unused leased slots go back after this long (default 250 ms). */
  lingerMs?: number;
  /**
   * How long a job may wait in its origin's line for a slot before it is refused (default
   * 2 s): the line is served in arrival order as slots free up, here or (leased) elsewhere.
   */
  queueWaitMs?: number;
  /**
   * Jobs waiting in one origin's line in this process (default: the per-process limit, or
   * half of `maxWaitingTotal` if more).
   */
  maxWaiting?: number;
  /**
   * Jobs waiting in all lines of this process (default unbounded): what the worker keeps
   * free of waiting jobs for other origins' work.
   */
  maxWaitingTotal?: number;
  /** While a line waits, how often it asks Redis for slots freed elsewhere (100 ms). */
  pollMs?: number;
  /** Errors talking to Redis (admission then waits; nothing is sent over the limit). */
  onError?: (err: unknown) => void;
}

interface OriginState {
  active: number;
  /** Leased slot members (shared mode). */
  held: string[];
  /** Highest `active` since the last sweep: what the next sweep keeps leased. */
  peak: number;
  leasing: Promise<number> | null;
  /** Acquirers waiting for a lease call. */
  waiting: number;
  /** The origin's line: acquirers waiting for a slot, served first come, first served. */
  queue: Waiter[];
  /** Polls Redis for slots while the line waits (shared mode). */
  poll: NodeJS.Timeout | null;
  /** Mean time a slot is held (ms, moving average): paces jobs refused by a full line. */
  holdMs: number;
  /** Jobs refused by the full line since it was last empty: their turn comes in that order. */
  overflow: number;
}

interface Waiter {
  admit: (admission: Admission) => void;
  timer: NodeJS.Timeout;
}

/** Takes up to ARGV[2] free slots of ARGV[1], each leased for ARGV[3] ms; returns how many. */
const LEASE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local free = tonumber(ARGV[1]) - redis.call('ZCARD', KEYS[1])
local grant = math.min(tonumber(ARGV[2]), free)
if grant <= 0 then return 0 end
local ttl = tonumber(ARGV[3])
for i = 0, grant - 1 do
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[4] .. ':' .. (tonumber(ARGV[5]) + i))
end
redis.call('PEXPIRE', KEYS[1], ttl)
return grant`;

/**
 * Renews the leases ARGV[3..]; one that expired (or a flushed Redis lost) is taken again
 * only while the origin has room. Returns the members kept.
 */
const RENEW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local limit = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
local kept = {}
for i = 3, #ARGV do
  local m = ARGV[i]
  if redis.call('ZSCORE', KEYS[1], m) or redis.call('ZCARD', KEYS[1]) < limit then
    redis.call('ZADD', KEYS[1], now + ttl, m)
    kept[#kept + 1] = m
  end
end
if #kept > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return kept`;

/** Gives the leases ARGV[1..] back. */
const RELEASE = `return redis.call('ZREM', KEYS[1], unpack(ARGV))`;

/** What the limiter needs of a client: ioredis, or BullMQ's adapter of it (`runCommand`). */
export interface SlotRedis {
  defineCommand(name: string, definition: { numberOfKeys: number; lua: string }): void;
  runCommand?(name: string, args: unknown[]): Promise<unknown>;
}

const SCRIPTS = { originLease: LEASE, originRenew: RENEW, originRelease: RELEASE };
const defined = new WeakSet<object>();

function script(
  redis: SlotRedis,
  name: keyof typeof SCRIPTS,
  args: (string | number)[],
): Promise<unknown> {
  if (!defined.has(redis)) {
    for (const [n, lua] of Object.entries(SCRIPTS))
      redis.defineCommand(n, { numberOfKeys: 1, lua });
    defined.add(redis);
  }
  if (redis.runCommand) return redis.runCommand(name, args);
  const fn = (redis as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[name]!;
  return fn.apply(redis, args);
}

export class OriginLimiter {
  private readonly origins = new Map<string, OriginState>();
  private readonly pausedUntil = new Map<string, number>();
  private readonly shared: Required<
    Omit<
      SharedSlotsOptions,
      'onError' | 'limit' | 'queueWaitMs' | 'maxWaiting' | 'maxWaitingTotal' | 'pollMs'
    >
  > | null;
  private readonly queueWaitMs: number;
  private readonly maxWaiting: number;
  private readonly maxWaitingTotal: number;
  private readonly pollMs: number;
  /** Acquirers waiting in all lines. */
  private waitingTotal = 0;
  private readonly limit: number;
  private readonly onError: (err: unknown) => void;
  private readonly owner = randomBytes(6).toString('base64url');
  private readonly block: number;
  private seq = 0;
  private timer: NodeJS.Timeout | null = null;
  private lastRenew = Date.now();
  private sweeping: Promise<void> | null = null;

  /**
   * `perOrigin`: attempts in flight per origin in this process; in shared mode `limit`
   * (default the same) bounds them across every process.
   */
  constructor(
    private readonly perOrigin: number,
    private readonly random: () => number = Math.random,
    shared?: SharedSlotsOptions,
  ) {
    this.shared = shared
      ? {
          redis: shared.redis,
          prefix: shared.prefix,
          ttlMs: shared.ttlMs ?? 3000,
          lingerMs: shared.lingerMs ?? 250,
        }
      : null;
    this.onError = shared?.onError ?? (() => {});
    this.limit = Math.max(1, shared?.limit ?? perOrigin);
    this.queueWaitMs = shared?.queueWaitMs ?? 2000;
    this.maxWaitingTotal = shared?.maxWaitingTotal ?? Number.POSITIVE_INFINITY;
    this.maxWaiting = Math.max(
      0,
      shared?.maxWaiting ??
        (Number.isFinite(this.maxWaitingTotal)
          ? Math.max(perOrigin, Math.floor(this.maxWaitingTotal / 2))
          : perOrigin),
    );
    this.pollMs = shared?.pollMs ?? 100;
    // Leases come in blocks of a quarter of the limit: a busy origin costs a Redis call
    // per block, a slow one (small limit) leases one slot at a time.
    this.block = Math.max(1, Math.ceil(perOrigin / 4));
  }

  private state(origin: string): OriginState {
    let s = this.origins.get(origin);
    if (!s) {
      s = {
        active: 0,
        held: [],
        peak: 0,
        leasing: null,
        waiting: 0,
        queue: [],
        poll: null,
        holdMs: 50,
        overflow: 0,
      };
      this.origins.set(origin, s);
    }
    return s;
  }

  private pausedFor(origin: string, now = Date.now()): number {
    const until = this.pausedUntil.get(origin);
    if (until === undefined) return 0;
    if (until > now) return until - now;
    this.pausedUntil.delete(origin);
    return 0;
  }

  private admit(s: OriginState, origin: string): Admission {
    s.active++;
    if (s.active > s.peak) s.peak = s.active;
    let released = false;
    const at = Date.now();
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        s.active--;
        s.holdMs += (Date.now() - at - s.holdMs) / 8;
        // Handed to the head of the line at once: no newcomer can take it first.
        this.serveLine(s, origin);
        // In-process mode has no sweeper: an idle origin is forgotten at once.
        if (!this.shared && s.active === 0) this.origins.delete(origin);
      },
    };
  }

  private full(): Admission {
    return { ok: false, waitMs: 50 + Math.floor(this.random() * 200) };
  }

  /**
   * Admission decided in this process alone: a free slot under the limit (in shared mode,
   * a slot this process already leased), or a refusal with how long to wait.
   */
  tryAcquire(origin: string, now = Date.now()): Admission {
    const paused = this.pausedFor(origin, now);
    if (paused > 0) return { ok: false, waitMs: paused + Math.floor(this.random() * 100) };
    const s = this.state(origin);
    if (s.active >= this.perOrigin) return this.full();
    if (this.shared && s.active >= s.held.length) return this.full();
    // Others wait for this origin: a newcomer goes behind them, not past them.
    if (s.queue.length > 0) return this.full();
    return this.admit(s, origin);
  }

  /**
   * Admission across processes: locally when this process holds a free leased slot (no
   * I/O), else after leasing a block from Redis. Never throws; a Redis failure refuses.
   */
  acquire(origin: string, now = Date.now()): Admission | Promise<Admission> {
    const local = this.tryAcquire(origin, now);
    if (local.ok || !this.shared) return local;
    const s = this.state(origin);
    // Refused for want of a free leased slot (not paused): lease more, or wait for one.
    if (this.pausedFor(origin, now) > 0) return local;
    return this.leaseAndAdmit(origin, s);
  }

  private async leaseAndAdmit(origin: string, s: OriginState): Promise<Admission> {
    if (s.queue.length === 0) {
      s.waiting++;
      try {
        // Acquirers arriving together share lease calls; one that found its call's grant
        // taken by the others asks again while the origin has room (bounded by the limit).
        for (let i = 0; i <= this.perOrigin; i++) {
          if (this.free(s)) return this.admit(s, origin);
          if (s.held.length >= this.perOrigin) break;
          if ((await this.lease(origin, s)) === 0) break;
        }
      } finally {
        s.waiting--;
      }
      if (this.free(s) && s.queue.length === 0) return this.admit(s, origin);
    }
    return this.wait(origin, s);
  }

  /**
   * Every slot the origin has is taken: the job joins the origin's line, served in order
   * as slots free up (released here, or leased once freed elsewhere), for `queueWaitMs`.
   * A full line (per origin, and over all origins, so waiting jobs never take every job
   * slot from other origins' work) or a paused origin refuses at once: the job goes round
   * the delayed set as before.
   */
  private wait(origin: string, s: OriginState): Admission | Promise<Admission> {
    if (this.pausedFor(origin) > 0) return this.full();
    if (s.queue.length >= this.maxWaiting || this.waitingTotal >= this.maxWaitingTotal) {
      // Back in about the time the jobs ahead take, later the later it was refused: the
      // overflow comes back in its order rather than in a random one (capped at 5 s).
      s.overflow++;
      const ahead = s.queue.length + s.overflow;
      const turns = Math.ceil(ahead / Math.max(1, this.perOrigin));
      return { ok: false, waitMs: Math.min(5000, 20 + Math.round(s.holdMs * turns)) };
    }
    return new Promise<Admission>((resolve) => {
      const waiter: Waiter = {
        admit: (admission) => {
          clearTimeout(waiter.timer);
          this.waitingTotal--;
          resolve(admission);
        },
        timer: setTimeout(() => {
          const i = s.queue.indexOf(waiter);
          if (i >= 0) s.queue.splice(i, 1);
          waiter.admit(this.full());
        }, this.queueWaitMs),
      };
      s.queue.push(waiter);
      this.waitingTotal++;
      this.ensurePoll(origin, s);
    });
  }

  /**
   * Admits the head of the line while a leased slot of this process is free; a paused
   * origin's line is refused (each job waits out the pause in the delayed set).
   */
  private serveLine(s: OriginState, origin: string): void {
    const paused = s.queue.length > 0 ? this.pausedFor(origin) : 0;
    if (paused > 0) {
      for (const w of s.queue.splice(0)) {
        w.admit({ ok: false, waitMs: paused + Math.floor(this.random() * 100) });
      }
    }
    while (s.queue.length > 0 && this.free(s)) s.queue.shift()!.admit(this.admit(s, origin));
    if (s.queue.length === 0) {
      s.overflow = 0;
      if (s.poll) clearInterval(s.poll);
      s.poll = null;
    }
  }

  /** While the line waits, slots freed in other processes are leased for it. */
  private ensurePoll(origin: string, s: OriginState): void {
    if (s.poll || !this.shared) return;
    s.poll = setInterval(() => {
      if (s.queue.length === 0) return this.serveLine(s, origin);
      if (this.pausedFor(origin) > 0) return this.serveLine(s, origin);
      if (s.leasing || s.held.length >= this.perOrigin) return;
      void this.lease(origin, s).then(() => this.serveLine(s, origin));
    }, this.pollMs);
    s.poll.unref();
  }

  /** A leased slot of this process is free. */
  private free(s: OriginState): boolean {
    return s.active < s.held.length && s.active < this.perOrigin;
  }

  /**
   * One lease call per origin at a time, for as many slots as acquirers are waiting (at
   * least a block); resolves to the number granted.
   */
  private lease(origin: string, s: OriginState): Promise<number> {
    if (s.leasing) return s.leasing;
    const shared = this.shared!;
    s.leasing = (async () => {
      try {
        const redis = await shared.redis();
        // Sized after the await, so acquirers of the same tick are counted.
        const want = Math.min(
          Math.max(this.block, s.waiting + s.queue.length),
          this.perOrigin - s.held.length,
        );
        if (want <= 0) return 0;
        const first = this.seq;
        this.seq += want;
        const granted = Number(
          await script(redis, 'originLease', [
            this.key(origin),
            this.limit,
            want,
            shared.ttlMs,
            this.owner,
            first,
          ]),
        );
        for (let i = 0; i < granted; i++) s.held.push(`${this.owner}:${first + i}`);
        this.ensureTimer();
        return granted;
      } catch (err) {
        this.onError(err);
        return 0;
      } finally {
        s.leasing = null;
      }
    })();
    return s.leasing;
  }

  private key(origin: string): string {
    const prefix = this.shared!.prefix;
    return `${typeof prefix === 'string' ? prefix : prefix(origin)}:origin-slots:${origin}`;
  }

  private ensureTimer(): void {
    if (this.timer || !this.shared) return;
    this.timer = setInterval(() => {
      if (this.sweeping) return;
      this.sweeping = this.sweep().finally(() => {
        this.sweeping = null;
      });
    }, this.shared.lingerMs);
    this.timer.unref();
  }

  /**
   * Gives back leased slots unused since the last sweep, and renews the rest every quarter
   * of the TTL. Resolves once Redis answered.
   */
  async sweep(now = Date.now()): Promise<void> {
    const shared = this.shared;
    if (!shared) return;
    const renew = now - this.lastRenew >= shared.ttlMs / 4;
    if (renew) this.lastRenew = now;
    try {
      const redis = await shared.redis();
      const calls: Promise<unknown>[] = [];
      for (const [origin, s] of this.origins) {
        // A line waiting here keeps every slot it has.
        const keep = s.queue.length > 0 ? s.held.length : Math.max(s.active, s.peak);
        s.peak = s.active;
        if (s.held.length > keep && !s.leasing) {
          const surplus = s.held.splice(keep);
          calls.push(script(redis, 'originRelease', [this.key(origin), ...surplus]));
        }
        if (renew && s.held.length > 0 && !s.leasing) {
          const members = s.held;
          calls.push(
            script(redis, 'originRenew', [
              this.key(origin),
              this.limit,
              shared.ttlMs,
              ...members,
            ]).then((result) => {
              const kept = result as string[];
              // Lost leases (expired, or Redis flushed and the room taken) leave the
              // process with fewer slots: new attempts wait until it is under them.
              if (kept.length < members.length) {
                const k = new Set(kept);
                s.held = s.held.filter((m) => k.has(m) || !members.includes(m));
              }
            }),
          );
        }
        if (
          s.held.length === 0 &&
          s.active === 0 &&
          !s.leasing &&
          s.waiting === 0 &&
          !s.queue.length
        ) {
          this.origins.delete(origin);
        }
      }
      await Promise.all(calls);
    } catch (err) {
      this.onError(err);
    }
  }

  pause(origin: string, ms: number, now = Date.now()): void {
    const until = now + ms;
    if ((this.pausedUntil.get(origin) ?? 0) < until) this.pausedUntil.set(origin, until);
    const s = this.origins.get(origin);
    if (s && ms > 0) this.serveLine(s, origin);
  }

  inFlight(origin: string): number {
    return this.origins.get(origin)?.active ?? 0;
  }

  /** Slots this process holds leased for `origin` (shared mode). */
  leased(origin: string): number {
    return this.origins.get(origin)?.held.length ?? 0;
  }

  /** Stops the sweeper and gives every leased slot back (graceful shutdown). */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    for (const s of this.origins.values()) {
      for (const w of s.queue.splice(0)) w.admit(this.full());
      if (s.poll) clearInterval(s.poll);
      s.poll = null;
    }
    await this.sweeping;
    const shared = this.shared;
    if (!shared) return;
    const held = [...this.origins].filter(([, s]) => s.held.length > 0);
    if (held.length === 0) return;
    try {
      const redis = await shared.redis();
      await Promise.all(
        held.map(([origin, s]) => script(redis, 'originRelease', [this.key(origin), ...s.held])),
      );
      for (const [, s] of held) s.held = [];
    } catch (err) {
      this.onError(err);
    }
  }
}
