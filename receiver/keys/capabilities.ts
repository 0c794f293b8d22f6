/**
 * A seller's capability document (the `get_<brand>_capabilities` result, supplement §7.1),
 * fetched from the trust file's `capabilities_url` with a plain GET: 64 KiB, no redirect,
 * strict JSON. The receiver reads three things from it:
 *   - `identity.brand_json_url`: where the brand_json_url bootstrap starts (§2.6);
 *   - `identity.key_origins.webhook_signing`: the host the webhook JWKS must be served from;
 *   - `webhook_signing.delivery_retry_horizon_seconds`: how long the seller may retry, so
 *     the idempotency retention is at least that (§4.2, 3.2 only).
 * Cached like key material (same TTL; a failed refresh keeps the previous good document;
 * failures are negatively cached).
 */
import { DocumentFetchError, FETCH_BUDGETS, fetchJson } from './fetch-json.js';
import { isKeyOriginDeclaration } from './key-origin.js';
import type { CachePolicy, Clock, FetchSettings } from './remote-key-set.js';
import { SvcError } from '../../shared/errors/base.js';

export interface SellerIdentity {
  /** `identity.brand_json_url` as given (checked by the bootstrap, which reports it). */
  brandJsonUrl: unknown;
  /** True when `identity.key_origins` is present at all. */
  keyOriginsDeclared: boolean;
  webhookKeyOrigin?: string;
  governanceKeyOrigin?: string;
  /** `webhook_signing.supported === true`. */
  webhookSigning: boolean;
  /** Advertised, within 86400-604800; undefined when absent or out of range. */
  deliveryRetryHorizonSeconds?: number;
}

export class CapabilitiesError extends SvcError {
  static override readonly code = 'ERR_CAPABILITIES';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CapabilitiesError';
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The §7.1 range of `delivery_retry_horizon_seconds`. */
export const HORIZON_RANGE = { min: 86_400, max: 604_800 } as const;

/** Reads what the receiver needs; throws CapabilitiesError when a field it uses is malformed. */
export function readCapabilities(doc: unknown): SellerIdentity {
  if (!isObject(doc)) throw new CapabilitiesError('capabilities are not a JSON object');
  const identity = doc.identity;
  if (identity !== undefined && !isObject(identity)) {
    throw new CapabilitiesError('identity is not an object');
  }
  const origins = identity?.key_origins;
  if (origins !== undefined && !isObject(origins)) {
    throw new CapabilitiesError('identity.key_origins is not an object');
  }
  const origin = (name: string): string | undefined => {
    const v = origins?.[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || !isKeyOriginDeclaration(v)) {
      throw new CapabilitiesError(`identity.key_origins.${name} is not an origin`);
    }
    return v;
  };
  const signing = doc.webhook_signing;
  if (signing !== undefined && !isObject(signing)) {
    throw new CapabilitiesError('webhook_signing is not an object');
  }
  const h = signing?.delivery_retry_horizon_seconds;
  const horizonOk =
    Number.isInteger(h) && (h as number) >= HORIZON_RANGE.min && (h as number) <= HORIZON_RANGE.max;
  return {
    brandJsonUrl: identity?.brand_json_url,
    keyOriginsDeclared: origins !== undefined,
    webhookKeyOrigin: origin('webhook_signing'),
    governanceKeyOrigin: origin('governance_signing'),
    webhookSigning: signing?.supported === true,
    deliveryRetryHorizonSeconds: horizonOk ? (h as number) : undefined,
  };
}

export class SellerCapabilities {
  private good: SellerIdentity | null = null;
  private fetchedAt = Number.NEGATIVE_INFINITY;
  private failedAt = Number.NEGATIVE_INFINITY;
  private inflight: Promise<void> | null = null;
  lastError: Error | null = null;
  fetches = 0;

  constructor(
    readonly url: string,
    private readonly clock: Clock,
    private readonly policy: Pick<CachePolicy, 'ttlMs' | 'negativeTtlMs'>,
    private readonly settings: FetchSettings,
  ) {}

  /** The last good document, fresh or not, without I/O. */
  peek(): SellerIdentity | null {
    return this.good;
  }

  /** True when the cached document is fresh (no fetch due). */
  fresh(): boolean {
    return this.good !== null && this.clock() - this.fetchedAt < this.policy.ttlMs;
  }

  /** The current document, refreshed when stale (null when never loaded). */
  async current(): Promise<SellerIdentity | null> {
    const now = this.clock();
    if (this.good && now - this.fetchedAt < this.policy.ttlMs) return this.good;
    if (now - this.failedAt < this.policy.negativeTtlMs) return this.good;
    this.inflight ??= this.load().finally(() => {
      this.inflight = null;
    });
    await this.inflight;
    return this.good;
  }

  private async load(): Promise<void> {
    this.fetches++;
    try {
      const doc = await fetchJson(this.url, {
        fetch: this.settings.fetch,
        maxBytes: FETCH_BUDGETS.capabilitiesBytes,
        allowLoopback: this.settings.allowLoopback,
        connectTimeoutMs: this.settings.connectTimeoutMs,
        totalTimeoutMs: this.settings.totalTimeoutMs,
      });
      if (doc.notModified) return;
      const read = readCapabilities(doc.value);
      const s = (doc.value as { webhook_signing?: { delivery_retry_horizon_seconds?: unknown } })
        .webhook_signing;
      if (s?.delivery_retry_horizon_seconds !== undefined && !read.deliveryRetryHorizonSeconds) {
        this.settings.logger?.warn(
          { capabilitiesUrl: this.url, value: s.delivery_retry_horizon_seconds },
          'delivery_retry_horizon_seconds outside 86400-604800: ignored',
        );
      }
      this.good = read;
      this.fetchedAt = this.clock();
      this.failedAt = Number.NEGATIVE_INFINITY;
      this.lastError = null;
    } catch (err) {
      this.failedAt = this.clock();
      this.lastError = err as Error;
      this.settings.logger?.warn(
        {
          capabilitiesUrl: this.url,
          reason: err instanceof DocumentFetchError ? err.code : 'malformed',
          err: (err as Error).message,
          keptPrevious: this.good !== null,
        },
        'capabilities fetch failed',
      );
    }
  }
}
