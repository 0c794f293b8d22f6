/**
 * What stands before RFC 7591 registration at `POST /oauth/register` (issue 21): a
 * per-address rate limit and a size cap on the request (a flood of anonymous 30 KB
 * registrations), and the client metadata this server refuses because honouring it would
 * make the OAuth library fetch a URL the client chose (`jwks_uri`, `sector_identifier_uri`,
 * `request_uris`) or authenticate by keys it would fetch (`private_key_jwt`). The library's
 * own HTTP requests are refused outright (`refuseOutboundRequests`): nothing it could fetch
 * goes around `shared/net`'s guard.
 */
import { errors as oidcErrors } from 'oidc-provider';

/** Registrations allowed per client address per window (default 10 a minute). */
export interface RegistrationLimits {
  perAddress?: number;
  windowMs?: number;
  /** Largest registration body, bytes (default 8 KiB; real client metadata is ~1 KiB). */
  maxBodyBytes?: number;
  now?: () => number;
}

/** Sliding-window count per address; the table is bounded (oldest address dropped first). */
export class AddressRateLimiter {
  private readonly hits = new Map<string, number[]>();
  private readonly limit: number;
  private readonly window: number;
  private readonly now: () => number;

  constructor(limit: number, windowMs: number, now: () => number = Date.now) {
    this.limit = limit;
    this.window = windowMs;
    this.now = now;
  }

  /** Seconds until `address` may try again (0: it may), without counting an attempt. */
  peek(address: string): number {
    const now = this.now();
    const recent = (this.hits.get(address) ?? []).filter((t) => t > now - this.window);
    if (recent.length < this.limit) return 0;
    return Math.max(1, Math.ceil((recent[0]! + this.window - now) / 1000));
  }

  /** Counts one attempt: 0 when allowed, else the seconds until the address may try again. */
  take(address: string): number {
    const now = this.now();
    const recent = (this.hits.get(address) ?? []).filter((t) => t > now - this.window);
    if (recent.length >= this.limit) {
      this.hits.set(address, recent);
      return Math.max(1, Math.ceil((recent[0]! + this.window - now) / 1000));
    }
    recent.push(now);
    this.hits.delete(address);
    this.hits.set(address, recent);
    if (this.hits.size > 10_000) this.hits.delete(this.hits.keys().next().value!);
    return 0;
  }
}

export const DEFAULT_REGISTRATIONS_PER_MINUTE = 10;
export const DEFAULT_MAX_REGISTRATION_BYTES = 8 * 1024;

/** Token endpoint authentication methods clients may register: shared secrets or none (PKCE). */
export const CLIENT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'none'] as const;

/** Registered metadata that would make the library fetch a client-chosen URL. */
const FETCHING_METADATA = ['jwks_uri', 'sector_identifier_uri', 'request_uris', 'jwks'] as const;

/**
 * The marker property oidc-provider calls `extraClientMetadata.validator` for on every
 * registration: the validator sees the whole metadata and refuses what fetches. The marker
 * itself is never kept.
 */
export const METADATA_GUARD_PROPERTY = 'svc_metadata_guard';

export function validateClientMetadata(
  _ctx: unknown,
  key: string,
  _value: unknown,
  metadata: Record<string, unknown>,
): void {
  if (key !== METADATA_GUARD_PROPERTY) return;
  delete metadata[METADATA_GUARD_PROPERTY];
  for (const field of FETCHING_METADATA) {
    const v = metadata[field];
    if (v === undefined || (Array.isArray(v) && v.length === 0)) continue;
    throw new oidcErrors.InvalidClientMetadata(
      `${field} is not accepted by this server (it never fetches client-supplied URLs); register with a client secret`,
    );
  }
}

/**
 * oidc-provider's `httpOptions`: called before each of its outbound requests. This server
 * makes none (the metadata that would cause one is refused at registration); any request
 * still attempted is refused here instead of leaving the process unguarded.
 */
export function refuseOutboundRequests(url: URL): never {
  throw new Error(`outbound request to ${url.origin} refused: the OAuth server fetches nothing`);
}
