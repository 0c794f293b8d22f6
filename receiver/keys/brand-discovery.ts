/**
 * Seller agent URL -> `jwks_uri` through the operator's brand.json (supplement §2.6):
 * `/.well-known/brand.json` at the agent URL's origin; at most one hop through an
 * `authoritative_location` or `house` redirect variant; the `agents[]` entry whose `url`
 * byte-equals the agent URL (no canonicalisation, per security.mdx); its `jwks_uri`, or
 * `/.well-known/jwks.json` at the agent URL's origin.
 */
import {
  checkFetchableUrl,
  DocumentFetchError,
  FETCH_BUDGETS,
  fetchJson,
  isLoopbackHost,
} from './fetch-json.js';
import type { Clock, FetchSettings } from './remote-key-set.js';

export type DiscoveryFailure =
  | 'brand_json_unreachable'
  | 'brand_json_malformed'
  | 'agent_not_in_brand_json'
  | 'brand_json_ambiguous';

export class BrandDiscoveryError extends Error {
  readonly reason: DiscoveryFailure;
  constructor(reason: DiscoveryFailure, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BrandDiscoveryError';
    this.reason = reason;
  }
}

const DOMAIN = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

/** brand.json of a `house` redirect; a loopback `host:port` is accepted only in test mode. */
export function houseBrandJsonUrl(house: string, allowLoopback: boolean): string {
  if (DOMAIN.test(house)) return `https://${house}/.well-known/brand.json`;
  const m = /^([^:/]+):(\d{1,5})$/.exec(house);
  if (allowLoopback && m && isLoopbackHost(m[1]!)) {
    return `http://${house}/.well-known/brand.json`;
  }
  throw new BrandDiscoveryError('brand_json_malformed', `house "${house}" is not a domain`);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

async function fetchBrandJson(url: string, settings: FetchSettings): Promise<unknown> {
  try {
    const doc = await fetchJson(url, {
      fetch: settings.fetch,
      maxBytes: FETCH_BUDGETS.brandJsonBytes,
      allowLoopback: settings.allowLoopback,
      connectTimeoutMs: settings.connectTimeoutMs,
      totalTimeoutMs: settings.totalTimeoutMs,
    });
    return doc.notModified ? null : doc.value;
  } catch (err) {
    const reason = err instanceof DocumentFetchError && err.reason === 'malformed';
    throw new BrandDiscoveryError(
      reason ? 'brand_json_malformed' : 'brand_json_unreachable',
      (err as Error).message,
      { cause: err },
    );
  }
}

/** Resolves the agent's `jwks_uri`; throws BrandDiscoveryError naming the failure. */
export async function discoverJwksUri(agentUrl: string, settings: FetchSettings): Promise<string> {
  const allowLoopback = settings.allowLoopback ?? false;
  let origin: string;
  try {
    origin = checkFetchableUrl(agentUrl, allowLoopback).origin;
  } catch (err) {
    throw new BrandDiscoveryError('brand_json_unreachable', (err as Error).message);
  }
  let doc = await fetchBrandJson(`${origin}/.well-known/brand.json`, settings);
  if (!isObject(doc)) throw new BrandDiscoveryError('brand_json_malformed', 'not an object');
  if (!Array.isArray(doc.agents)) {
    // One redirect hop, and only through the two redirect variants of the schema.
    let next: string | undefined;
    if (typeof doc.authoritative_location === 'string') next = doc.authoritative_location;
    else if (typeof doc.house === 'string') next = houseBrandJsonUrl(doc.house, allowLoopback);
    if (next !== undefined) {
      try {
        checkFetchableUrl(next, allowLoopback);
      } catch (err) {
        throw new BrandDiscoveryError('brand_json_malformed', (err as Error).message);
      }
      doc = await fetchBrandJson(next, settings);
      if (!isObject(doc)) throw new BrandDiscoveryError('brand_json_malformed', 'not an object');
    }
  }
  if (!Array.isArray(doc.agents)) {
    throw new BrandDiscoveryError('agent_not_in_brand_json', 'brand.json lists no agents');
  }
  const matches = doc.agents.filter((a) => isObject(a) && a.url === agentUrl) as Array<
    Record<string, unknown>
  >;
  if (matches.length === 0) {
    throw new BrandDiscoveryError('agent_not_in_brand_json', `${agentUrl} is not in agents[]`);
  }
  if (matches.length > 1) {
    throw new BrandDiscoveryError('brand_json_ambiguous', `${agentUrl} is listed twice`);
  }
  const entry = matches[0]!;
  if (entry.jwks_uri === undefined) return `${origin}/.well-known/jwks.json`;
  if (typeof entry.jwks_uri !== 'string') {
    throw new BrandDiscoveryError('brand_json_malformed', 'jwks_uri is not a string');
  }
  try {
    checkFetchableUrl(entry.jwks_uri, allowLoopback);
  } catch (err) {
    throw new BrandDiscoveryError('brand_json_malformed', (err as Error).message);
  }
  return entry.jwks_uri;
}

/** Cached discovery for one agent URL: TTL on success, negative cache on failure. */
export class BrandJsonDiscovery {
  private jwksUri: string | null = null;
  private fetchedAt = Number.NEGATIVE_INFINITY;
  private failedAt = Number.NEGATIVE_INFINITY;
  private inflight: Promise<void> | null = null;
  lastError: BrandDiscoveryError | null = null;

  constructor(
    readonly agentUrl: string,
    private readonly clock: Clock,
    private readonly ttlMs: number,
    private readonly negativeTtlMs: number,
    private readonly settings: FetchSettings,
  ) {}

  /** The current `jwks_uri` (previous good one if a refresh fails), or null. */
  async current(): Promise<string | null> {
    const now = this.clock();
    if (this.jwksUri && now - this.fetchedAt < this.ttlMs) return this.jwksUri;
    if (now - this.failedAt < this.negativeTtlMs) return this.jwksUri;
    this.inflight ??= this.load().finally(() => {
      this.inflight = null;
    });
    await this.inflight;
    return this.jwksUri;
  }

  private async load(): Promise<void> {
    try {
      const uri = await discoverJwksUri(this.agentUrl, this.settings);
      if (this.jwksUri !== null && uri !== this.jwksUri) {
        // Buyers SHOULD alarm when the URL itself changes (supplement §2.6).
        this.settings.logger?.warn(
          { agentUrl: this.agentUrl, previous: this.jwksUri, current: uri },
          'jwks_uri changed in brand.json',
        );
      }
      this.jwksUri = uri;
      this.fetchedAt = this.clock();
      this.lastError = null;
    } catch (err) {
      this.failedAt = this.clock();
      this.lastError =
        err instanceof BrandDiscoveryError
          ? err
          : new BrandDiscoveryError('brand_json_unreachable', (err as Error).message);
      this.settings.logger?.warn(
        { agentUrl: this.agentUrl, reason: this.lastError.reason, err: this.lastError.message },
        'brand.json discovery failed',
      );
    }
  }
}
