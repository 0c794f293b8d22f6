/**
 * The receiver's `KeyResolver` over every trusted sender of the trust file: inline JWKS,
 * `jwks_uri`, or `agent_url` discovered through brand.json; publisher pins on top.
 *
 * Sender identity is the sender whose key set holds the kid; a kid held by two senders is
 * ambiguous and resolves to nothing (key_unknown) rather than to a guess. On a miss every
 * remote set gets one refetch, each subject to its own 30 s cooldown.
 */
import type { Logger } from '../../shared/infra/logger.js';
import type { JWK } from '../../shared/signing/keys.js';
import type { KeyResolver, ResolvedKey } from '../../shared/signing/verify.js';
import type { SenderTrust, TrustConfig } from '../trust/trust-file.js';
import { BrandJsonDiscovery } from './brand-discovery.js';
import type { RawFetch } from './fetch-json.js';
import { parseKeySet, type KeySet } from './key-set.js';
import { PublisherPinSet, type PinVerdict } from './publisher-pins.js';
import {
  clampPolicy,
  RemoteKeySet,
  type CachePolicy,
  type Clock,
  type FetchSettings,
} from './remote-key-set.js';

export interface TrustedKeyResolverOptions extends Partial<CachePolicy> {
  /** Transport (default: safeFetch from shared/net, with its SSRF guard and IP pinning). */
  fetch?: RawFetch;
  /** Plain http to loopback hosts, for local tests only. */
  allowLoopback?: boolean;
  /** Milliseconds since the epoch (default Date.now); injectable for cooldown tests. */
  clock?: Clock;
  connectTimeoutMs?: number;
  totalTimeoutMs?: number;
  logger?: Logger;
}

interface KeySource {
  /** Fresh keys without I/O, or undefined when a fetch is due. */
  peek(): KeySet | null | undefined;
  view(): Promise<{ keys: KeySet | null; fetchedNow: boolean }>;
  /** One miss-refetch if the cooldown allows; false when skipped. */
  refetchForMiss(): Promise<boolean>;
}

class InlineSource implements KeySource {
  constructor(private readonly keys: KeySet) {}
  peek(): KeySet {
    return this.keys;
  }
  async view(): Promise<{ keys: KeySet; fetchedNow: boolean }> {
    return { keys: this.keys, fetchedNow: false };
  }
  async refetchForMiss(): Promise<boolean> {
    return false;
  }
}

class UriSource implements KeySource {
  constructor(readonly set: RemoteKeySet) {}
  peek(): KeySet | undefined {
    return this.set.peek() ?? undefined;
  }
  view(): Promise<{ keys: KeySet | null; fetchedNow: boolean }> {
    return this.set.view();
  }
  refetchForMiss(): Promise<boolean> {
    return this.set.refetchForMiss();
  }
}

/** agent_url: brand.json gives the jwks_uri, then that URL's set. */
class AgentSource implements KeySource {
  private set: RemoteKeySet | null = null;
  constructor(
    private readonly discovery: BrandJsonDiscovery,
    private readonly makeSet: (uri: string) => RemoteKeySet,
  ) {}
  peek(): KeySet | undefined {
    return this.set?.peek() ?? undefined;
  }
  private async current(): Promise<RemoteKeySet | null> {
    const uri = await this.discovery.current();
    if (uri === null) return null;
    if (this.set?.url !== uri) this.set = this.makeSet(uri);
    return this.set;
  }
  async view(): Promise<{ keys: KeySet | null; fetchedNow: boolean }> {
    const set = await this.current();
    return set ? set.view() : { keys: null, fetchedNow: true };
  }
  async refetchForMiss(): Promise<boolean> {
    const set = await this.current();
    return set ? set.refetchForMiss() : false;
  }
}

interface Sender {
  id: string;
  source: KeySource;
  pins: PublisherPinSet | null;
}

export class TrustedKeyResolver implements KeyResolver {
  private readonly senders: Sender[];
  private readonly clock: Clock;
  private readonly logger: Logger | undefined;
  /** kid -> sender id of the last successful resolution (revocation lists are per sender). */
  private readonly lastSender = new Map<string, string>();

  constructor(trust: TrustConfig | readonly SenderTrust[], opts: TrustedKeyResolverOptions = {}) {
    const policy = clampPolicy(opts);
    this.clock = opts.clock ?? Date.now;
    this.logger = opts.logger;
    const settings: FetchSettings = {
      fetch: opts.fetch,
      allowLoopback: opts.allowLoopback,
      connectTimeoutMs: opts.connectTimeoutMs,
      totalTimeoutMs: opts.totalTimeoutMs,
      logger: opts.logger,
    };
    const makeSet = (uri: string) => new RemoteKeySet(uri, this.clock, policy, settings);
    const list = Array.isArray(trust) ? trust : (trust as TrustConfig).senders;
    this.senders = list.map((s: SenderTrust) => {
      let source: KeySource;
      if (s.jwks) source = new InlineSource(parseKeySet(s.jwks));
      else if (s.jwks_uri) source = new UriSource(makeSet(s.jwks_uri));
      else {
        const discovery = new BrandJsonDiscovery(
          s.agent_url as string,
          this.clock,
          policy.ttlMs,
          policy.negativeTtlMs,
          settings,
        );
        source = new AgentSource(discovery, makeSet);
      }
      const pins = s.pins
        ? new PublisherPinSet(s.pins, s.pins.agent_url ?? s.agent_url, this.clock, {
            ...settings,
            negativeTtlMs: policy.negativeTtlMs,
            cooldownMs: policy.refetchCooldownMs,
          })
        : null;
      return { id: s.id, source, pins };
    });
  }

  /** `context.created`: the signature's (Unix seconds), judged against pins' `revoked_at`. */
  async resolve(keyid: string, context?: { created: number }): Promise<ResolvedKey | null> {
    const found = await this.lookup(keyid);
    if (!found) return null;
    const { sender, jwk } = found;
    if (sender.pins) {
      const signedAtMs = context ? context.created * 1000 : undefined;
      const verdict: PinVerdict = await sender.pins.check(keyid, jwk, signedAtMs);
      if (verdict !== 'ok' && verdict !== 'unpinned') {
        this.logger?.info({ keyid, sender: sender.id, verdict }, 'publisher pin refused key');
        return null;
      }
    }
    this.lastSender.set(keyid, sender.id);
    return { jwk, senderId: sender.id };
  }

  /**
   * The key and its sender ignoring publisher pins: for checking the signature of a
   * sender's revocation list, which is signed by a key of the same JWKS.
   */
  async resolveUnpinned(keyid: string): Promise<ResolvedKey | null> {
    const found = await this.lookup(keyid);
    return found ? { jwk: found.jwk, senderId: found.sender.id } : null;
  }

  /** The sender a kid last resolved to (sync; for per-sender revocation state). */
  senderOf(keyid: string): string | undefined {
    return this.lastSender.get(keyid);
  }

  /** Fetches every sender's keys once (start-up warm-up; failures are only logged). */
  async warm(): Promise<void> {
    await Promise.all(this.senders.map((s) => s.source.view()));
  }

  private holders(
    keyid: string,
    sets: ReadonlyArray<KeySet | null | undefined>,
  ): Array<{ sender: Sender; jwk: JWK }> {
    const out: Array<{ sender: Sender; jwk: JWK }> = [];
    sets.forEach((keys, i) => {
      const jwk = keys?.get(keyid);
      if (jwk) out.push({ sender: this.senders[i]!, jwk });
    });
    return out;
  }

  private async lookup(keyid: string): Promise<{ sender: Sender; jwk: JWK } | null> {
    // Fast path: every set fresh in memory, no awaiting per sender.
    let sets: Array<KeySet | null | undefined> = this.senders.map((s) => s.source.peek());
    let fetchedNow: boolean[] = sets.map(() => false);
    if (sets.some((k) => k === undefined)) {
      const views = await Promise.all(this.senders.map((s) => s.source.view()));
      sets = views.map((v) => v.keys);
      fetchedNow = views.map((v) => v.fetchedNow);
    }
    let holders = this.holders(keyid, sets);
    if (holders.length === 0) {
      // Unknown kid: one refetch per remote set (each under its cooldown), then look again.
      const refetched = await Promise.all(
        this.senders.map((s, i) => (fetchedNow[i] ? false : s.source.refetchForMiss())),
      );
      if (refetched.some(Boolean)) {
        sets = await Promise.all(this.senders.map(async (s) => (await s.source.view()).keys));
        holders = this.holders(keyid, sets);
      }
    }
    if (holders.length > 1) {
      this.logger?.warn(
        { keyid, senders: holders.map((h) => h.sender.id) },
        'kid held by more than one sender: refused as ambiguous',
      );
      return null;
    }
    return holders[0] ?? null;
  }
}
