/**
 * Step 9 of the verifier: is this kid revoked, and is what we know about revocation fresh
 * enough to say it is not?
 *
 * Sources: kids revoked in configuration, and polled revocation lists (one per sender that
 * names a `revocation_url`, plus an optional global one). Polling follows each list's
 * `next_update`, clamped to [60 s, 30 min], with ETag / If-Modified-Since. A list not
 * refreshed within `next_update + grace` (grace = 4x the previous polling interval, at least
 * 300 s) makes its sender's kids `stale` (every kid, while its sender is not known yet);
 * so does a list never loaded (fail closed).
 * A kid listed as revoked by any trusted list is revoked, stale or not.
 */
import type { BrandProfile } from '../../shared/brand.js';
import type { Logger } from '../../shared/infra/logger.js';
import type { ResolvedKey, RevocationCheck } from '../../shared/signing/verify.js';
import { FETCH_BUDGETS, fetchDocument, type RawFetch } from '../keys/fetch-json.js';
import type { TrustConfig } from '../trust/trust-file.js';
import { verifyRevocationList, type RevocationSnapshot } from './revocation-list.js';

export interface RevocationSource {
  url: string;
  /** The sender the list belongs to; undefined for a list that applies to every sender. */
  senderId?: string;
}

/** Sources named by a trust file: each sender's `revocation_url`, else the global one. */
export function revocationSourcesFromTrust(trust: TrustConfig): RevocationSource[] {
  const out: RevocationSource[] = [];
  if (trust.revocation_url) out.push({ url: trust.revocation_url });
  for (const s of trust.senders) {
    if (s.revocation_url) out.push({ url: s.revocation_url, senderId: s.id });
  }
  return out;
}

export interface RevocationKeys {
  /** Key lookup for list signatures (no publisher pins). */
  resolveUnpinned(kid: string): Promise<ResolvedKey | null>;
  /** The sender a kid belongs to, when known (for per-sender staleness). */
  senderOf?(kid: string): string | undefined;
}

export interface PolledRevocationOptions {
  profile: BrandProfile;
  keys: RevocationKeys;
  sources?: RevocationSource[];
  /** Kids revoked by configuration. */
  revokedKids?: Iterable<string>;
  fetch?: RawFetch;
  allowLoopback?: boolean;
  connectTimeoutMs?: number;
  totalTimeoutMs?: number;
  /** Polling interval bounds (s): defaults 60 and 1800, the supplement's floor and ceiling. */
  minIntervalSeconds?: number;
  maxIntervalSeconds?: number;
  /** Lower bound on grace (s), default 300. */
  minGraceSeconds?: number;
  /** Milliseconds since the epoch (default Date.now). */
  clock?: () => number;
  logger?: Logger;
}

interface SourceState {
  source: RevocationSource;
  snapshot: RevocationSnapshot | null;
  etag?: string;
  lastModified?: string;
  /** Polling interval used before the latest poll (s). */
  lastInterval: number | null;
  /** Unix seconds after which this source is stale; null until first loaded. */
  staleAt: number | null;
  timer: NodeJS.Timeout | null;
  nextPollInSeconds: number | null;
  polls: number;
  /** When the list was last fetched successfully (loaded or 304), Unix ms; null before. */
  lastFetchMs: number | null;
}

export class PolledRevocationCheck implements RevocationCheck {
  private readonly states: SourceState[];
  private readonly revoked: Set<string>;
  private readonly clock: () => number;
  private readonly minInterval: number;
  private readonly maxInterval: number;
  private readonly minGrace: number;
  private running = false;
  /** Harness: revocation treated as stale from this Unix second on (vector 019). */
  private harnessStaleSince: number | null = null;

  constructor(private readonly opts: PolledRevocationOptions) {
    this.states = (opts.sources ?? []).map((source) => ({
      source,
      snapshot: null,
      lastInterval: null,
      staleAt: null,
      timer: null,
      nextPollInSeconds: null,
      polls: 0,
      lastFetchMs: null,
    }));
    this.revoked = new Set(opts.revokedKids ?? []);
    this.clock = opts.clock ?? Date.now;
    this.minInterval = opts.minIntervalSeconds ?? 60;
    this.maxInterval = opts.maxIntervalSeconds ?? 1800;
    this.minGrace = opts.minGraceSeconds ?? 300;
  }

  status(keyid: string, nowSeconds: number): 'ok' | 'revoked' | 'stale' {
    if (this.revoked.has(keyid)) return 'revoked';
    for (const s of this.states) {
      if (s.snapshot?.revokedKids.has(keyid)) return 'revoked';
    }
    if (this.harnessStaleSince !== null && nowSeconds >= this.harnessStaleSince) return 'stale';
    // A kid whose sender is not known yet is held to every list (fail closed).
    const sender = this.opts.keys.senderOf?.(keyid);
    for (const s of this.states) {
      const foreign = sender !== undefined && s.source.senderId !== undefined;
      if (foreign && s.source.senderId !== sender) continue;
      if (s.staleAt === null || nowSeconds > s.staleAt) return 'stale';
    }
    return 'ok';
  }

  /** Polls every source once (awaited), then keeps polling on unref'd timers until stop(). */
  async start(): Promise<void> {
    this.running = true;
    await Promise.all(this.states.map((s) => this.pollAndSchedule(s)));
  }

  stop(): void {
    this.running = false;
    for (const s of this.states) {
      if (s.timer) clearTimeout(s.timer);
      s.timer = null;
    }
  }

  /** Polls now without touching the schedule (tests and admin). */
  async pollNow(): Promise<void> {
    await Promise.all(this.states.map((s) => this.poll(s)));
  }

  /** Observability: per source, when it goes stale and when it is polled next. */
  describe(): Array<{
    url: string;
    senderId?: string;
    loaded: boolean;
    staleAt: number | null;
    nextPollInSeconds: number | null;
    polls: number;
    /** Last successful fetch (Unix ms) and the held list's `next_update` (Unix s). */
    lastFetchMs: number | null;
    nextUpdate: number | null;
  }> {
    return this.states.map((s) => ({
      url: s.source.url,
      senderId: s.source.senderId,
      loaded: s.snapshot !== null,
      staleAt: s.staleAt,
      nextPollInSeconds: s.nextPollInSeconds,
      polls: s.polls,
      lastFetchMs: s.lastFetchMs,
      nextUpdate: s.snapshot?.nextUpdate ?? null,
    }));
  }

  // ---- conformance harness hooks (vectors 017 and 019) -------------------------------

  /** Installs `revoked_kids` (vector 017). */
  harnessRevoke(kids: Iterable<string>): void {
    for (const k of kids) this.revoked.add(k);
  }

  /** Installs "not refreshed for `staleSeconds` past grace as of `nowSeconds`" (vector 019). */
  harnessStale(staleSeconds: number, nowSeconds: number): void {
    this.harnessStaleSince = nowSeconds - staleSeconds;
  }

  /** Clears harness state (configured kids and loaded lists stay). */
  harnessReset(configuredKids: Iterable<string> = this.opts.revokedKids ?? []): void {
    this.revoked.clear();
    for (const k of configuredKids) this.revoked.add(k);
    this.harnessStaleSince = null;
  }

  private clamp(seconds: number): number {
    return Math.min(Math.max(seconds, this.minInterval), this.maxInterval);
  }

  private async pollAndSchedule(s: SourceState): Promise<void> {
    const interval = await this.poll(s);
    if (!this.running) return;
    s.nextPollInSeconds = interval;
    s.timer = setTimeout(() => {
      s.timer = null;
      if (this.running) void this.pollAndSchedule(s);
    }, interval * 1000);
    s.timer.unref();
  }

  /** One poll; returns the delay (s) until the next one. Never throws. */
  private async poll(s: SourceState): Promise<number> {
    s.polls++;
    const now = this.clock() / 1000;
    try {
      const doc = await fetchDocument(s.source.url, {
        fetch: this.opts.fetch,
        maxBytes: FETCH_BUDGETS.revocationBytes,
        allowLoopback: this.opts.allowLoopback,
        connectTimeoutMs: this.opts.connectTimeoutMs,
        totalTimeoutMs: this.opts.totalTimeoutMs,
        etag: s.snapshot ? s.etag : undefined,
        lastModified: s.snapshot ? s.lastModified : undefined,
      });
      if (doc.notModified) {
        s.lastFetchMs = this.clock();
        // Unchanged: staleness still follows the list's own next_update.
        return this.clamp((s.snapshot as RevocationSnapshot).nextUpdate - now);
      }
      const snapshot = await verifyRevocationList(doc.raw, {
        profile: this.opts.profile,
        keyFor: (kid) => this.opts.keys.resolveUnpinned(kid),
        senderId: s.source.senderId,
        sourceUrl: s.source.url,
      });
      if (s.snapshot && snapshot.updated < s.snapshot.updated) {
        throw new Error('list is older than the one already held (rollback refused)');
      }
      const interval = this.clamp(snapshot.nextUpdate - now);
      const grace = Math.max(4 * (s.lastInterval ?? interval), this.minGrace);
      s.snapshot = snapshot;
      s.staleAt = snapshot.nextUpdate + grace;
      s.lastInterval = interval;
      s.etag = doc.etag;
      s.lastModified = doc.lastModified;
      s.lastFetchMs = this.clock();
      return interval;
    } catch (err) {
      this.opts.logger?.warn(
        { url: s.source.url, err: (err as Error).message, keptPrevious: s.snapshot !== null },
        'revocation list refresh failed',
      );
      return this.minInterval;
    }
  }
}
