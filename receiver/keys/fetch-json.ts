/**
 * Fetching the small JSON documents key discovery depends on (capabilities, brand.json,
 * JWKS, adagents.json, revocation lists) within the supplement's budgets (§2.6): a byte cap per
 * document, connect 5 s, total 10 s, no redirects, strict JSON (duplicate keys rejected).
 *
 * The transport is a `RawFetch` with the contract of `shared/net/safe-fetch.ts` (SSRF
 * rules, IP pinning), so the same code runs against real peers and loopback test servers.
 */
import { JsonParseError, parseStrictJson } from '../../shared/json/strict-parse.js';
import { safeFetch } from '../../shared/net/safe-fetch.js';
import { SvcError } from '../../shared/errors/base.js';

export const KIB = 1024;
/** Supplement §2.6 budgets. */
export const FETCH_BUDGETS = {
  capabilitiesBytes: 64 * KIB,
  jwksBytes: 64 * KIB,
  brandJsonBytes: 256 * KIB,
  adagentsBytes: 256 * KIB,
  revocationBytes: 256 * KIB,
  connectTimeoutMs: 5_000,
  totalTimeoutMs: 10_000,
} as const;

export interface RawFetchOptions {
  maxBytes: number;
  connectTimeoutMs?: number;
  totalTimeoutMs?: number;
  allowLoopback?: boolean;
  headers?: Record<string, string>;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** The transport: `safeFetch` by default (a seam for tests). Throws on network failure,
 * timeout, size or an SSRF refusal. */
export type RawFetch = (url: string, opts: RawFetchOptions) => Promise<RawResponse>;

export type FetchFailure =
  | 'scheme' // not https (nor loopback http when allowed)
  | 'network' // connect, timeout, size, SSRF refusal
  | 'status' // anything but 200 (or 304 when conditional)
  | 'malformed'; // not strict JSON, or not the expected shape

export class DocumentFetchError extends SvcError {
  static override readonly code = 'ERR_DOCUMENT_FETCH';

  declare readonly code: FetchFailure;
  readonly url: string;
  constructor(reason: FetchFailure, url: string, message: string, options?: { cause?: unknown }) {
    super(`${url}: ${message}`, { ...options, code: reason });
    this.url = url;
  }
}

export interface FetchJsonOptions {
  fetch?: RawFetch;
  maxBytes: number;
  allowLoopback?: boolean;
  connectTimeoutMs?: number;
  totalTimeoutMs?: number;
  /** Conditional request validators from a previous response. */
  etag?: string;
  lastModified?: string;
}

export type JsonDocument =
  | {
      notModified: false;
      value: unknown;
      raw: Buffer;
      etag?: string;
      lastModified?: string;
      /** `Cache-Control: max-age` in seconds, when given. */
      maxAgeSeconds?: number;
    }
  | { notModified: true };

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname) || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

/** https always; plain http only for a loopback host and only when allowed (tests). */
export function checkFetchableUrl(url: string, allowLoopback: boolean): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new DocumentFetchError('scheme', url, 'not an absolute URL');
  }
  if (u.username || u.password) throw new DocumentFetchError('scheme', url, 'credentials in URL');
  if (u.protocol === 'https:') return u;
  if (u.protocol === 'http:' && allowLoopback && isLoopbackHost(u.hostname)) return u;
  throw new DocumentFetchError(
    'scheme',
    url,
    u.protocol === 'http:' && isLoopbackHost(u.hostname)
      ? 'only https is allowed; plain http to a loopback host needs the opt-in --allow-http-loopback (SVC_RECEIVER_ALLOW_HTTP_LOOPBACK=1, local testing only)'
      : 'only https is allowed',
  );
}

function header(headers: RawResponse['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function maxAge(cacheControl: string | undefined): number | undefined {
  const m = cacheControl ? /(?:^|,)\s*max-age=(\d+)/i.exec(cacheControl) : null;
  return m ? Number(m[1]) : undefined;
}

export type RawDocument =
  | {
      notModified: false;
      raw: Buffer;
      etag?: string;
      lastModified?: string;
      /** `Cache-Control: max-age` in seconds, when given. */
      maxAgeSeconds?: number;
    }
  | { notModified: true };

/** Fetches one document's bytes within budget; throws DocumentFetchError with a reason. */
export async function fetchDocument(url: string, opts: FetchJsonOptions): Promise<RawDocument> {
  const allowLoopback = opts.allowLoopback ?? false;
  checkFetchableUrl(url, allowLoopback);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (opts.etag) headers['if-none-match'] = opts.etag;
  if (opts.lastModified) headers['if-modified-since'] = opts.lastModified;
  let res: RawResponse;
  try {
    res = await (opts.fetch ?? safeFetch)(url, {
      maxBytes: opts.maxBytes,
      connectTimeoutMs: opts.connectTimeoutMs ?? FETCH_BUDGETS.connectTimeoutMs,
      totalTimeoutMs: opts.totalTimeoutMs ?? FETCH_BUDGETS.totalTimeoutMs,
      allowLoopback,
      headers,
    });
  } catch (err) {
    throw new DocumentFetchError('network', url, (err as Error).message, { cause: err });
  }
  if (res.status === 304 && (opts.etag || opts.lastModified)) return { notModified: true };
  if (res.status !== 200) throw new DocumentFetchError('status', url, `HTTP ${res.status}`);
  return {
    notModified: false,
    raw: res.body,
    etag: header(res.headers, 'etag'),
    lastModified: header(res.headers, 'last-modified'),
    maxAgeSeconds: maxAge(header(res.headers, 'cache-control')),
  };
}

/** Fetches one JSON document within budget, parsed strictly (duplicate keys rejected). */
export async function fetchJson(url: string, opts: FetchJsonOptions): Promise<JsonDocument> {
  const doc = await fetchDocument(url, opts);
  if (doc.notModified) return doc;
  let value: unknown;
  try {
    value = parseStrictJson(doc.raw);
  } catch (err) {
    if (err instanceof JsonParseError) {
      throw new DocumentFetchError('malformed', url, `invalid JSON (${err.code})`, { cause: err });
    }
    throw err;
  }
  return { ...doc, value };
}
