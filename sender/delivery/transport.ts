/**
 * One HTTP attempt: undici with a keep-alive pool per origin, connect and total
 * timeouts, no redirects, and at most a few KB of the response read. The connect step
 * resolves the host itself, refuses reserved addresses and connects to the checked IP,
 * so nothing can re-resolve in between. Hosts on the allow-list (local testing) may use
 * plain http and reserved addresses.
 */
import { lookup } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, buildConnector, request } from 'undici';
import type { AttemptResult } from './classify.js';
import { isReservedAddress } from '../../shared/net/ssrf.js';
import { SNIPPET_BYTES } from './snippet.js';
import { round, socketOpened, timed, type AttemptTiming } from './timing.js';
import { SvcError } from '../../shared/errors/base.js';

export interface TransportOptions {
  /** Host names or IPs exempt from the https-only and reserved-address rules. */
  allowHosts?: string[];
  connectTimeoutMs?: number;
  totalTimeoutMs?: number;
  /** Response bytes read at most; the rest is discarded. */
  maxResponseBytes?: number;
  /** Open connections per origin. */
  connectionsPerOrigin?: number;
}

export class TargetRefusedError extends SvcError {
  static override readonly code = 'TARGET_REFUSED';

  constructor(message: string) {
    super(message);
    this.name = 'TargetRefusedError';
  }
}

function bare(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
]);

export class Transport {
  private readonly agent: Agent;
  private readonly allow: Set<string>;
  private readonly totalTimeoutMs: number;
  private readonly maxResponseBytes: number;

  constructor(options: TransportOptions = {}) {
    this.allow = new Set((options.allowHosts ?? []).map((h) => bare(h.toLowerCase())));
    this.totalTimeoutMs = options.totalTimeoutMs ?? 30_000;
    this.maxResponseBytes = options.maxResponseBytes ?? 4096;
    const connectTimeout = options.connectTimeoutMs ?? 10_000;
    const base = buildConnector({ timeout: connectTimeout });
    const allow = this.allow;
    const connect: buildConnector.connector = (opts, callback) => {
      const host = bare(opts.hostname.toLowerCase());
      const allowed = allow.has(host);
      // Each new socket's DNS and connect time (timing.ts ties them to its first request).
      const go = (ip: string, dnsMs?: number) => {
        const started = performance.now();
        base(
          { ...opts, hostname: ip, servername: isIP(host) ? undefined : host } as Parameters<
            typeof base
          >[0],
          (err, socket) => {
            if (socket) socketOpened(socket, performance.now() - started, dnsMs);
            (callback as (e: Error | null, s: typeof socket) => void)(err, socket);
          },
        );
      };
      if (isIP(host)) {
        if (!allowed && isReservedAddress(host)) {
          callback(new TargetRefusedError('reserved address'), null);
          return;
        }
        go(host);
        return;
      }
      const looking = performance.now();
      lookup(host, { all: true }, (err, addrs) => {
        if (err || addrs.length === 0) {
          callback(err ?? new Error('no address'), null);
          return;
        }
        // Every address must pass: a name resolving to one public and one private
        // address is refused rather than gambled on.
        if (!allowed && addrs.some((a) => isReservedAddress(a.address))) {
          callback(new TargetRefusedError('reserved address'), null);
          return;
        }
        go(addrs[0]!.address, performance.now() - looking);
      });
    };
    this.agent = new Agent({
      connect,
      connections: options.connectionsPerOrigin ?? 16,
      keepAliveTimeout: 30_000,
      headersTimeout: this.totalTimeoutMs,
      bodyTimeout: this.totalTimeoutMs,
    });
  }

  /** Checks what can be checked before any I/O: scheme and allow-list. */
  refusal(url: URL): string | null {
    const host = bare(url.hostname.toLowerCase());
    if (this.allow.has(host)) {
      return url.protocol === 'https:' || url.protocol === 'http:' ? null : 'scheme';
    }
    if (url.protocol !== 'https:') return 'https_required';
    if (isIP(host) && isReservedAddress(host)) return 'reserved_address';
    return null;
  }

  async post(url: string, body: Buffer, headers: Record<string, string>): Promise<AttemptResult> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { kind: 'error', failure: 'target_refused', detail: 'invalid_url' };
    }
    const refused = this.refusal(parsed);
    if (refused) return { kind: 'error', failure: 'target_refused', detail: refused };
    const timing: AttemptTiming = {};
    const started = performance.now();
    try {
      const res = await timed(timing, () =>
        request(parsed, {
          method: 'POST',
          headers,
          body,
          dispatcher: this.agent,
          signal: AbortSignal.timeout(this.totalTimeoutMs),
        }),
      );
      timing.ttfbMs = round(performance.now() - started);
      const head = await this.drain(res.body);
      timing.totalMs = round(performance.now() - started);
      const www = res.headers['www-authenticate'];
      const ra = res.headers['retry-after'];
      return {
        kind: 'response',
        status: res.statusCode,
        ...(www !== undefined
          ? { wwwAuthenticate: Array.isArray(www) ? www.join(', ') : www }
          : {}),
        ...(ra !== undefined ? { retryAfter: Array.isArray(ra) ? ra[0] : ra } : {}),
        ...(head.length ? { head } : {}),
        headers: res.headers,
        timing,
      };
    } catch (err) {
      timing.totalMs = round(performance.now() - started);
      return { ...this.failure(err), timing };
    }
  }

  /**
   * Reads up to the cap; a larger response is cut off (the connection goes with it).
   * Returns the first bytes (at most SNIPPET_BYTES) for the attempt's record.
   */
  private async drain(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<Buffer> {
    let seen = 0;
    const kept: Buffer[] = [];
    let keptBytes = 0;
    for await (const chunk of body) {
      if (keptBytes < SNIPPET_BYTES) {
        const part = chunk.subarray(0, SNIPPET_BYTES - keptBytes);
        kept.push(part);
        keptBytes += part.length;
      }
      seen += chunk.length;
      if (seen > this.maxResponseBytes) {
        body.destroy();
        break;
      }
    }
    return Buffer.concat(kept, keptBytes);
  }

  private failure(err: unknown): AttemptResult {
    const e = err as { code?: string; name?: string; cause?: { code?: string } };
    if (err instanceof TargetRefusedError || e.cause instanceof TargetRefusedError) {
      return { kind: 'error', failure: 'target_refused', detail: 'reserved_address' };
    }
    const code = e.code ?? e.cause?.code;
    if (e.name === 'TimeoutError' || e.name === 'AbortError' || (code && TIMEOUT_CODES.has(code))) {
      return { kind: 'error', failure: 'timeout', detail: code ?? 'timeout' };
    }
    return { kind: 'error', failure: 'connection_error', detail: code ?? e.name ?? 'error' };
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
