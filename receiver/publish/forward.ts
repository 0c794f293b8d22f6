/**
 * Publication by POST to the app's URL (the sidecar case): the verified body bytes as the
 * JSON body, with headers naming the sender and the idempotency key. Only the app's 2xx
 * counts as published. Plain http is refused unless the target is a loopback address.
 */
import { connect, isIP } from 'node:net';
import { Pool } from 'undici';
import { eventHeaders, type Publisher, type ReceivedEvent } from './types.js';
import { SvcError } from '../../shared/errors/base.js';

export class ForwardError extends SvcError {
  static override readonly code = 'ERR_FORWARD';

  readonly status: number | null;
  constructor(message: string, status: number | null = null, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ForwardError';
    this.status = status;
  }
}

export interface ForwardPublisherOptions {
  url: string;
  brand: string;
  connections?: number;
  connectTimeoutMs?: number;
  /** Time for the app to answer (headers and body). */
  timeoutMs?: number;
}

export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || h === '0:0:0:0:0:0:0:1';
  return false;
}

/** Checks a forward target: http(s) URL, no credentials, http only on loopback. */
export function checkForwardUrl(input: string): URL {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new ForwardError(`forward target "${input}" is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ForwardError(`forward target must be http(s), got ${url.protocol}`);
  }
  if (url.username || url.password)
    throw new ForwardError('forward target must not carry credentials');
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    throw new ForwardError('plain http forward targets are accepted only on loopback addresses');
  }
  return url;
}

/** An error's message with its code (undici's "connect ECONNREFUSED ..." has both). */
function describeError(err: unknown): string {
  const e = err as { message?: string; code?: string };
  const message = e.message || String(err);
  return e.code && !message.includes(e.code) ? `${e.code} ${message}` : message;
}

/**
 * Whether something accepts connections at the forward target, for the start-up warning:
 * null when a TCP connection opens within timeoutMs, else why not.
 */
export function probeForwardTarget(target: string, timeoutMs = 2000): Promise<string | null> {
  const url = new URL(target);
  const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    const done = (why: string | null) => {
      socket.destroy();
      resolve(why);
    };
    socket.once('connect', () => done(null));
    socket.once('timeout', () => done(`no answer within ${timeoutMs} ms`));
    socket.once('error', (err) => done(describeError(err)));
  });
}

export class ForwardPublisher implements Publisher {
  readonly url: URL;
  private readonly pool: Pool;
  private readonly brand: string;
  private readonly path: string;

  constructor(options: ForwardPublisherOptions) {
    this.url = checkForwardUrl(options.url);
    this.path = `${this.url.pathname}${this.url.search}`;
    this.brand = options.brand;
    const timeout = options.timeoutMs ?? 10_000;
    this.pool = new Pool(this.url.origin, {
      connections: options.connections ?? 64,
      connect: { timeout: options.connectTimeoutMs ?? 5_000 },
      headersTimeout: timeout,
      bodyTimeout: timeout,
      keepAliveTimeout: 10_000,
    });
  }

  async publish(e: ReceivedEvent): Promise<void> {
    let res;
    try {
      res = await this.pool.request({
        method: 'POST',
        path: this.path,
        headers: { 'content-type': 'application/json', ...eventHeaders(e, this.brand) },
        body: e.body,
      });
    } catch (err) {
      throw new ForwardError(`forward to ${this.url.href} failed: ${describeError(err)}`, null, {
        cause: err,
      });
    }
    // Drain so the connection returns to the pool; the app's answer is not read further.
    await res.body.dump().catch(() => {});
    if (res.statusCode < 200 || res.statusCode > 299) {
      throw new ForwardError(
        `forward to ${this.url.href}: the app answered ${res.statusCode}`,
        res.statusCode,
      );
    }
  }

  async close(): Promise<void> {
    await this.pool.close();
  }
}
