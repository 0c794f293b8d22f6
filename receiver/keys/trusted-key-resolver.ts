/**
 * The receiver's `KeyResolver` over every trusted sender of the trust file: inline JWKS,
 * `jwks_uri`, or `agent_url` discovered through brand.json (or, with `capabilities_url`,
 * through the capabilities' `identity.brand_json_url`); publisher pins and the
 * `identity.key_origins.webhook_signing` check on top.
 *
 * Sender identity is the sender whose key set holds the kid; a kid held by two senders is
 * ambiguous and resolves to nothing (key_unknown) rather than to a guess. On a miss every
 * remote set gets one refetch, each subject to its own 30 s cooldown. A kid found nowhere
 * while a sender's keys cannot be had at all is answered with that sender's discovery code
 * (KeyDiscoveryError: `request_signature_brand_json_unreachable`, ...), so an operator sees
 * why, instead of a bare key_unknown.
 */
import type { Logger } from '../../shared/infra/logger.js';
import type { JWK } from '../../shared/signing/keys.js';
import type { KeyResolver, ResolvedKey } from '../../shared/signing/verify.js';
import type { SenderTrust, TrustConfig } from '../trust/trust-file.js';
import {
  BrandDiscoveryError,
  BrandJsonDiscovery,
  discoverViaBrandJsonUrl,
} from './brand-discovery.js';
import { SellerCapabilities } from './capabilities.js';
import { KeyDiscoveryError, type KeyFailure } from './discovery-error.js';
import type { RawFetch } from './fetch-json.js';
import { declaredKeyHost, keyOriginMatches } from './key-origin.js';
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
  /** The last keys loaded, fresh or not (what the console shows), without I/O. */
  held(): KeySet | null | undefined;
  view(): Promise<{ keys: KeySet | null; fetchedNow: boolean }>;
  /** One miss-refetch if the cooldown allows; false when skipped. */
  refetchForMiss(): Promise<boolean>;
  /** The URL the keys come from; null for an inline set. */
  jwksUri(): string | null;
  /** Why no key at all can be had from this source right now, or null. */
  failure(): KeyFailure | null;
}

class InlineSource implements KeySource {
  constructor(private readonly keys: KeySet) {}
  peek(): KeySet {
    return this.keys;
  }
  held(): KeySet {
    return this.keys;
  }
  async view(): Promise<{ keys: KeySet; fetchedNow: boolean }> {
    return { keys: this.keys, fetchedNow: false };
  }
  async refetchForMiss(): Promise<boolean> {
    return false;
  }
  jwksUri(): null {
    return null;
  }
  failure(): null {
    return null;
  }
}

class UriSource implements KeySource {
  constructor(readonly set: RemoteKeySet) {}
  peek(): KeySet | undefined {
    return this.set.peek() ?? undefined;
  }
  held(): KeySet | undefined {
    return this.set.held() ?? undefined;
  }
  view(): Promise<{ keys: KeySet | null; fetchedNow: boolean }> {
    return this.set.view();
  }
  refetchForMiss(): Promise<boolean> {
    return this.set.refetchForMiss();
  }
  jwksUri(): string {
    return this.set.url;
  }
  failure(): KeyFailure | null {
    return this.set.unavailable() ? 'jwks_unavailable' : null;
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
  held(): KeySet | undefined {
    return this.set?.held() ?? undefined;
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
  jwksUri(): string | null {
    return this.set?.url ?? null;
  }
  /** The key set brand.json led to (for its last fetch), once discovered. */
  remoteSet(): RemoteKeySet | null {
    return this.set;
  }
  failure(): KeyFailure | null {
    if (this.set === null) return this.discovery.lastError?.code ?? null;
    return this.set.unavailable() ? 'jwks_unavailable' : null;
  }
}

export interface SenderKeyStatus {
  sender: string;
  kids: string[];
  jwksUri: string | null;
  lastFetchMs: number | null;
  failure: KeyFailure | null;
}

interface Sender {
  id: string;
  source: KeySource;
  pins: PublisherPinSet | null;
  capabilities: SellerCapabilities | null;
  /** Trust file `key_origins.webhook_signing` (wins over the capabilities'). */
  keyOrigin: string | undefined;
}

type Lookup =
  | { kind: 'found'; sender: Sender; jwk: JWK }
  | { kind: 'none'; failure?: { sender: Sender; reason: KeyFailure } };

export class TrustedKeyResolver implements KeyResolver {
  private readonly senders: Sender[];
  private readonly byId: Map<string, Sender>;
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
      const capabilities = s.capabilities_url
        ? new SellerCapabilities(s.capabilities_url, this.clock, policy, settings)
        : null;
      let source: KeySource;
      if (s.jwks) source = new InlineSource(parseKeySet(s.jwks));
      else if (s.jwks_uri) source = new UriSource(makeSet(s.jwks_uri));
      else {
        const agentUrl = s.agent_url as string;
        const discovery = new BrandJsonDiscovery(
          agentUrl,
          this.clock,
          policy.ttlMs,
          policy.negativeTtlMs,
          settings,
          capabilities ? () => bootstrap(agentUrl, capabilities, settings) : undefined,
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
      return { id: s.id, source, pins, capabilities, keyOrigin: s.key_origins?.webhook_signing };
    });
    this.byId = new Map(this.senders.map((s) => [s.id, s]));
  }

  /**
   * `context.created`: the signature's (Unix seconds), judged against pins' `revoked_at`.
   * Throws KeyDiscoveryError when the sender's keys cannot be trusted or found.
   */
  async resolve(keyid: string, context?: { created: number }): Promise<ResolvedKey | null> {
    const found = await this.lookup(keyid);
    if (found.kind === 'none') {
      if (!found.failure) return null;
      const { sender, reason } = found.failure;
      throw new KeyDiscoveryError(reason, sender.id, `keys of ${sender.id} unavailable: ${reason}`);
    }
    const { sender, jwk } = found;
    let pinned = false;
    if (sender.pins) {
      const signedAtMs = context ? context.created * 1000 : undefined;
      const verdict: PinVerdict = await sender.pins.check(keyid, jwk, signedAtMs);
      if (verdict !== 'ok' && verdict !== 'unpinned') {
        this.logger?.info({ keyid, sender: sender.id, verdict }, 'publisher pin refused key');
        return null;
      }
      pinned = verdict === 'ok';
    }
    // The key_origins check is skipped only for the pinned tuple (supplement §2.7).
    if (!pinned && (sender.capabilities !== null || sender.keyOrigin !== undefined)) {
      const problem = await this.originProblem(sender);
      if (problem) {
        this.logger?.warn(
          { keyid, sender: sender.id, jwksUri: sender.source.jwksUri(), reason: problem },
          'sender keys refused: key origin',
        );
        throw new KeyDiscoveryError(problem, sender.id);
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
    return found.kind === 'found' ? { jwk: found.jwk, senderId: found.sender.id } : null;
  }

  /** The sender a kid last resolved to (sync; for per-sender revocation state). */
  /**
   * Each sender's keys as this process holds them, for the operator console: kids (public
   * identifiers only), where they come from, the last fetch, and why none can be had now.
   */
  status(): SenderKeyStatus[] {
    return this.senders.map((s) => {
      const set =
        s.source instanceof UriSource
          ? s.source.set
          : s.source instanceof AgentSource
            ? s.source.remoteSet()
            : null;
      return {
        sender: s.id,
        // Held, not fresh: past the TTL the keys are still the ones verified with.
        kids: [...(s.source.held()?.keys() ?? [])],
        jwksUri: s.source.jwksUri(),
        lastFetchMs: set?.lastFetchMs() ?? null,
        failure: s.source.failure(),
      };
    });
  }

  senderOf(keyid: string): string | undefined {
    return this.lastSender.get(keyid);
  }

  /**
   * The sender's advertised `delivery_retry_horizon_seconds` from its capabilities (cached,
   * refreshed with its keys), or undefined. Sync: it is read per delivery.
   */
  advertisedHorizonSeconds(senderId: string): number | undefined {
    return this.byId.get(senderId)?.capabilities?.peek()?.deliveryRetryHorizonSeconds;
  }

  /** Fetches every sender's keys and capabilities once (start-up; failures are only logged). */
  async warm(): Promise<void> {
    await Promise.all(
      this.senders.flatMap((s) => [s.source.view(), s.capabilities?.current() ?? null]),
    );
  }

  /** Why a found key's origin is not the declared one, or null (supplement §2.6). */
  private async originProblem(sender: Sender): Promise<KeyFailure | null> {
    let declared = sender.keyOrigin;
    let governance: string | undefined;
    if (sender.capabilities) {
      const caps = sender.capabilities.fresh()
        ? sender.capabilities.peek()
        : await sender.capabilities.current();
      // Never loaded: nothing to check against, so nothing is trusted (fail closed).
      if (!caps) return 'capabilities_unreachable';
      declared ??= caps.webhookKeyOrigin;
      if (declared === undefined && caps.keyOriginsDeclared && caps.webhookSigning) {
        return 'key_origin_missing';
      }
      governance = caps.governanceKeyOrigin;
    }
    const uri = sender.source.jwksUri();
    if (declared === undefined || uri === null) return null;
    if (!keyOriginMatches(uri, declared)) return 'key_origin_mismatch';
    // Governance keys must not share the webhook keys' origin (co-tenancy is refused).
    if (
      governance !== undefined &&
      declaredKeyHost(governance)?.host === declaredKeyHost(declared)?.host
    ) {
      return 'key_origin_mismatch';
    }
    return null;
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

  private async lookup(keyid: string): Promise<Lookup> {
    // Fast path: every set fresh in memory, no awaiting per sender.
    let sets: Array<KeySet | null | undefined> = this.senders.map((s) => s.source.peek());
    let fetchedNow: boolean[] = sets.map(() => false);
    if (sets.some((k) => k === undefined)) {
      // Capabilities are refreshed with the key material.
      const [views] = await Promise.all([
        Promise.all(this.senders.map((s) => s.source.view())),
        Promise.all(this.senders.map((s) => s.capabilities?.current())),
      ]);
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
      return { kind: 'none' };
    }
    const holder = holders[0];
    if (holder) return { kind: 'found', ...holder };
    for (const sender of this.senders) {
      const reason = sender.source.failure();
      if (reason) return { kind: 'none', failure: { sender, reason } };
    }
    return { kind: 'none' };
  }
}

/** The brand_json_url bootstrap: capabilities first, then the brand.json they point at. */
async function bootstrap(
  agentUrl: string,
  capabilities: SellerCapabilities,
  settings: FetchSettings,
): Promise<string> {
  const caps = await capabilities.current();
  if (!caps) {
    throw new BrandDiscoveryError(
      'capabilities_unreachable',
      capabilities.lastError?.message ?? 'capabilities not loaded',
    );
  }
  return discoverViaBrandJsonUrl(agentUrl, caps.brandJsonUrl, settings);
}
