/**
 * Seller agent URL -> `jwks_uri` through the operator's brand.json (supplement §2.6):
 * `/.well-known/brand.json` at the agent URL's origin; at most one hop through an
 * `authoritative_location` or `house` redirect variant; the `agents[]` entry whose `url`
 * byte-equals the agent URL (no canonicalisation, per security.mdx); its `jwks_uri`, or
 * `/.well-known/jwks.json` at the agent URL's origin.
 *
 * The bootstrap alternative (`discoverViaBrandJsonUrl`) starts from the seller's
 * capabilities `identity.brand_json_url` instead: no redirect of any kind, and the agent
 * URL's registrable domain must equal the brand.json URL's, or be one of the brand.json's
 * `authorized_operators[]` (pinned Public Suffix List snapshot, registrable-domain.ts).
 */
import {
  checkFetchableUrl,
  DocumentFetchError,
  FETCH_BUDGETS,
  fetchJson,
  isLoopbackHost,
} from './fetch-json.js';
import { registrableDomain } from './registrable-domain.js';
import type { Clock, FetchSettings } from './remote-key-set.js';
import { SvcError } from '../../shared/errors/base.js';

/** The supplement's discovery failures (each answered as `request_signature_<reason>`). */
export type DiscoveryFailure =
  | 'brand_json_url_missing'
  | 'capabilities_unreachable'
  | 'brand_json_unreachable'
  | 'brand_json_malformed'
  | 'brand_origin_mismatch'
  | 'agent_not_in_brand_json'
  | 'brand_json_ambiguous';

export class BrandDiscoveryError extends SvcError {
  static override readonly code = 'ERR_BRAND_DISCOVERY';

  declare readonly code: DiscoveryFailure;
  constructor(reason: DiscoveryFailure, message: string, options?: { cause?: unknown }) {
    super(message, { ...options, code: reason });
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
    const reason = err instanceof DocumentFetchError && err.code === 'malformed';
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
  return jwksUriOfAgent(doc, agentUrl, origin, allowLoopback);
}

/** The `agents[]` entry whose url byte-equals the agent URL, and its `jwks_uri`. */
function jwksUriOfAgent(
  doc: Record<string, unknown>,
  agentUrl: string,
  agentOrigin: string,
  allowLoopback: boolean,
): string {
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
  if (entry.jwks_uri === undefined) return `${agentOrigin}/.well-known/jwks.json`;
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

/**
 * Registrable domains a brand.json delegates to through `authorized_operators[]`: each item
 * a domain string or an object with a `domain` string. Anything else is malformed.
 */
function authorizedOperators(doc: Record<string, unknown>): Set<string> {
  const list = doc.authorized_operators;
  const out = new Set<string>();
  if (list === undefined) return out;
  if (!Array.isArray(list)) {
    throw new BrandDiscoveryError('brand_json_malformed', 'authorized_operators is not an array');
  }
  for (const item of list) {
    const domain = typeof item === 'string' ? item : isObject(item) ? item.domain : undefined;
    if (typeof domain !== 'string' || !DOMAIN.test(domain.toLowerCase())) {
      throw new BrandDiscoveryError(
        'brand_json_malformed',
        'authorized_operators[] item is not a domain',
      );
    }
    out.add(registrableDomain(domain));
  }
  return out;
}

/**
 * Bootstrap through capabilities `identity.brand_json_url` (supplement §2.6): the document
 * is fetched from that URL alone (no `authoritative_location` / `house` hop, no HTTP
 * redirect), then bound to the agent by registrable domain before its `agents[]` is read.
 */
export async function discoverViaBrandJsonUrl(
  agentUrl: string,
  brandJsonUrl: unknown,
  settings: FetchSettings,
): Promise<string> {
  const allowLoopback = settings.allowLoopback ?? false;
  if (typeof brandJsonUrl !== 'string' || brandJsonUrl === '') {
    throw new BrandDiscoveryError(
      'brand_json_url_missing',
      'capabilities have no identity.brand_json_url',
    );
  }
  let agent: URL;
  let brand: URL;
  try {
    agent = checkFetchableUrl(agentUrl, allowLoopback);
  } catch (err) {
    throw new BrandDiscoveryError('brand_json_unreachable', (err as Error).message);
  }
  try {
    brand = checkFetchableUrl(brandJsonUrl, allowLoopback);
  } catch (err) {
    // Not an https URL: as good as no pointer at all.
    throw new BrandDiscoveryError('brand_json_url_missing', (err as Error).message);
  }
  const doc = await fetchBrandJson(brand.toString(), settings);
  if (!isObject(doc)) throw new BrandDiscoveryError('brand_json_malformed', 'not an object');
  if (
    !Array.isArray(doc.agents) &&
    (doc.authoritative_location !== undefined || typeof doc.house === 'string')
  ) {
    throw new BrandDiscoveryError(
      'brand_json_malformed',
      'a redirect variant: brand_json_url bootstrap follows no redirect',
    );
  }
  const agentDomain = registrableDomain(agent.hostname);
  if (
    agentDomain !== registrableDomain(brand.hostname) &&
    !authorizedOperators(doc).has(agentDomain)
  ) {
    throw new BrandDiscoveryError(
      'brand_origin_mismatch',
      `${agent.hostname} is neither under ${registrableDomain(brand.hostname)} nor an authorized operator`,
    );
  }
  return jwksUriOfAgent(doc, agentUrl, agent.origin, allowLoopback);
}

/**
 * Cached discovery for one agent URL: TTL on success, negative cache on failure. `discover`
 * replaces the agent-origin walk (the capabilities bootstrap passes its own).
 */
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
    private readonly discover: () => Promise<string> = () => discoverJwksUri(agentUrl, settings),
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
      const uri = await this.discover();
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
      const previous = this.lastError?.message;
      this.lastError =
        err instanceof BrandDiscoveryError
          ? err
          : new BrandDiscoveryError('brand_json_unreachable', (err as Error).message);
      // Once per distinct cause (the message names the URL that failed and why); a repeat of
      // the same failure, at every negative-cache expiry, goes to debug.
      const log = previous === this.lastError.message ? 'debug' : 'warn';
      this.settings.logger?.[log](
        {
          event: 'key_discovery_failed',
          agentUrl: this.agentUrl,
          reason: this.lastError.code,
          err: this.lastError.message,
        },
        `key discovery for ${this.agentUrl} failed: ${this.lastError.message}`,
      );
    }
  }
}
