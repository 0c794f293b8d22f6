/**
 * Publisher pins (supplement §2.7): adagents.json `authorized_agents[].signing_keys[]` for
 * the sending agent. When a pin exists it is authoritative: a kid outside the pinned set is
 * unknown whatever the JWKS says, a signature made at or after its pinned key's `revoked_at`
 * is refused (the signature's `created`, not the time of arrival: a delivery signed before
 * the revocation and retried after it is still good), and pinned key material (when given) must match the JWKS key. On an unknown kid the
 * adagents.json is refetched bypassing the cache (at most once per cooldown, so forged
 * traffic cannot turn the receiver into a fetch amplifier).
 */
import type { JWK } from '../../shared/signing/keys.js';
import type { PinnedKey, PublisherPins as PinsConfig } from '../trust/trust-file.js';
import { checkFetchableUrl, FETCH_BUDGETS, fetchJson } from './fetch-json.js';
import type { Clock, FetchSettings } from './remote-key-set.js';

export type PinVerdict =
  | 'unpinned' // the publisher pins nothing for this agent: JWKS alone decides
  | 'ok'
  | 'unknown' // kid not in the pinned set
  | 'revoked' // pinned key past its revoked_at
  | 'mismatch' // pinned material differs from the JWKS key
  | 'unavailable'; // pins configured but adagents.json never loaded: fail closed

/** Default cache life of adagents.json, and the ceiling on its max-age. */
export const ADAGENTS_TTL_MS = 60 * 60_000;

const MATERIAL = ['kty', 'crv', 'x', 'y', 'n', 'e'] as const;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The pinned keys for `agentUrl`, or null when the document pins nothing for it. */
export function pinsForAgent(doc: unknown, agentUrl: string): Map<string, PinnedKey> | null {
  if (!isObject(doc) || !Array.isArray(doc.authorized_agents)) {
    throw new Error('adagents.json has no authorized_agents array');
  }
  let out: Map<string, PinnedKey> | null = null;
  for (const entry of doc.authorized_agents) {
    if (!isObject(entry) || entry.url !== agentUrl || entry.signing_keys === undefined) continue;
    if (!Array.isArray(entry.signing_keys)) throw new Error('signing_keys is not an array');
    out ??= new Map();
    for (const k of entry.signing_keys) {
      if (!isObject(k) || typeof k.kid !== 'string' || typeof k.kty !== 'string') {
        throw new Error('signing_keys item lacks kid or kty');
      }
      if (k.revoked_at !== undefined && Number.isNaN(Date.parse(String(k.revoked_at)))) {
        throw new Error(`signing_keys "${k.kid}" has an invalid revoked_at`);
      }
      out.set(k.kid, k as PinnedKey);
    }
  }
  return out;
}

/** `signedAtMs`: the signature's `created` (ms); the clock when the caller has none. */
function judge(pin: PinnedKey, jwk: JWK, signedAtMs: number): PinVerdict {
  if (pin.revoked_at !== undefined && signedAtMs >= Date.parse(pin.revoked_at)) return 'revoked';
  for (const m of MATERIAL) {
    const pinned = (pin as Record<string, unknown>)[m];
    if (pinned !== undefined && pinned !== (jwk as Record<string, unknown>)[m]) return 'mismatch';
  }
  return 'ok';
}

export class PublisherPinSet {
  private pins: Map<string, PinnedKey> | null = null;
  private loaded = false;
  private fetchedAt = Number.NEGATIVE_INFINITY;
  private failedAt = Number.NEGATIVE_INFINITY;
  private ttlMs = ADAGENTS_TTL_MS;
  private lastForcedAt: number | null = null;
  private inflight: Promise<void> | null = null;
  fetches = 0;

  constructor(
    private readonly config: PinsConfig,
    private readonly agentUrl: string | undefined,
    private readonly clock: Clock,
    private readonly settings: FetchSettings & { negativeTtlMs: number; cooldownMs: number },
  ) {
    if (config.signing_keys) {
      this.pins = new Map(config.signing_keys.map((k) => [k.kid, k]));
      this.loaded = true;
    }
  }

  /** `signedAtMs`: the signature's `created` in ms (default: now). */
  async check(kid: string, jwk: JWK, signedAtMs?: number): Promise<PinVerdict> {
    if (this.config.signing_keys) return this.verdict(kid, jwk, signedAtMs);
    const now = this.clock();
    if (now - this.fetchedAt >= this.ttlMs && now - this.failedAt >= this.settings.negativeTtlMs) {
      await this.refresh();
    }
    if (!this.loaded) return 'unavailable';
    let verdict = this.verdict(kid, jwk, signedAtMs);
    if (verdict === 'unknown') {
      const t = this.clock();
      if (this.lastForcedAt === null || t - this.lastForcedAt >= this.settings.cooldownMs) {
        this.lastForcedAt = t;
        await this.refresh();
        verdict = this.verdict(kid, jwk, signedAtMs);
      }
    }
    return verdict;
  }

  private verdict(kid: string, jwk: JWK, signedAtMs?: number): PinVerdict {
    if (this.pins === null) return 'unpinned';
    const pin = this.pins.get(kid);
    return pin ? judge(pin, jwk, signedAtMs ?? this.clock()) : 'unknown';
  }

  private refresh(): Promise<void> {
    this.inflight ??= this.load().finally(() => {
      this.inflight = null;
    });
    return this.inflight;
  }

  private async fetchDoc(url: string): Promise<{ value: unknown; maxAgeSeconds?: number }> {
    const doc = await fetchJson(url, {
      fetch: this.settings.fetch,
      maxBytes: FETCH_BUDGETS.adagentsBytes,
      allowLoopback: this.settings.allowLoopback,
      connectTimeoutMs: this.settings.connectTimeoutMs,
      totalTimeoutMs: this.settings.totalTimeoutMs,
    });
    if (doc.notModified) throw new Error('unexpected 304');
    return doc;
  }

  private async load(): Promise<void> {
    this.fetches++;
    const url = this.config.adagents_url as string;
    try {
      let doc = await this.fetchDoc(url);
      const v = doc.value;
      if (isObject(v) && !Array.isArray(v.authorized_agents)) {
        // One hop through the authoritative_location variant.
        if (typeof v.authoritative_location !== 'string') {
          throw new Error('adagents.json has no authorized_agents array');
        }
        checkFetchableUrl(v.authoritative_location, this.settings.allowLoopback ?? false);
        doc = await this.fetchDoc(v.authoritative_location);
      }
      this.pins = pinsForAgent(doc.value, this.agentUrl as string);
      this.loaded = true;
      this.fetchedAt = this.clock();
      this.failedAt = Number.NEGATIVE_INFINITY;
      this.ttlMs = Math.min((doc.maxAgeSeconds ?? Infinity) * 1000, ADAGENTS_TTL_MS);
    } catch (err) {
      this.failedAt = this.clock();
      this.settings.logger?.warn(
        { adagentsUrl: url, err: (err as Error).message, keptPrevious: this.loaded },
        'adagents.json fetch failed',
      );
    }
  }
}
