/**
 * The HTTP gates that run before any crypto (supplement §1 pre-checks): method, media type,
 * and the body cap enforced while the body streams in, so an oversized body is refused
 * without ever being held whole or digested.
 */
import type { Readable } from 'node:stream';
import { SvcError } from '../../shared/errors/base.js';

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

export type Headers = Record<string, string | string[] | undefined>;

/** The single value of a header, or null when absent; arrays of one are unwrapped. */
export function headerValue(headers: Headers, name: string): string | null {
  const v = headers[name];
  if (v === undefined) return null;
  if (Array.isArray(v)) return v.length === 1 ? (v[0] as string) : v.join(', ');
  return v;
}

/**
 * `application/json`, optionally with parameters (`; charset=utf-8`). A header sent twice
 * or listing two media types is refused: the signed value must be unambiguous.
 */
export function isJsonContentType(value: string | string[] | undefined): boolean {
  if (value === undefined) return false;
  if (Array.isArray(value)) {
    if (value.length !== 1) return false;
    value = value[0] as string;
  }
  if (value.includes(',')) return false;
  const [type, ...params] = value.split(';');
  if (type?.trim().toLowerCase() !== 'application/json') return false;
  for (const p of params) {
    const eq = p.indexOf('=');
    if (eq <= 0 || p.slice(0, eq).trim() === '') return false;
    if (p.slice(0, eq).trim().toLowerCase() === 'charset') {
      const cs = p
        .slice(eq + 1)
        .trim()
        .replace(/^"|"$/g, '')
        .toLowerCase();
      if (cs !== 'utf-8' && cs !== 'utf8') return false;
    }
  }
  return true;
}

export class BodyTooLargeError extends SvcError {
  static override readonly code = 'ERR_BODY_TOO_LARGE';

  constructor(limit: number) {
    super(`body larger than ${limit} bytes`);
    this.name = 'BodyTooLargeError';
  }
}

export class BodyReadError extends SvcError {
  static override readonly code = 'ERR_BODY_READ';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BodyReadError';
  }
}

/** The body did not arrive whole within its total deadline (a trickle). */
export class BodyDeadlineError extends SvcError {
  static override readonly code = 'ERR_BODY_DEADLINE';

  constructor() {
    super('body not received whole by its deadline');
    this.name = 'BodyDeadlineError';
  }
}

/** Taking the body would put the bytes in flight over the receiver's budget. */
export class BodyBudgetError extends SvcError {
  static override readonly code = 'ERR_BODY_BUDGET';

  constructor() {
    super('request bodies in flight would exceed the budget');
    this.name = 'BodyBudgetError';
  }
}

/** A declared Content-Length, or null when absent or not a plain decimal. */
function declaredBytes(declaredLength: string | null): number | null {
  if (declaredLength === null) return null;
  return /^\d{1,15}$/.test(declaredLength.trim()) ? Number(declaredLength) : null;
}

/** True when the body is known to be over the cap before reading a byte of it. */
export function declaredTooLarge(
  body: Buffer | Readable,
  limit: number,
  declaredLength: string | null,
): boolean {
  if (Buffer.isBuffer(body)) return body.length > limit;
  const n = declaredBytes(declaredLength);
  return n !== null && n > limit;
}

/**
 * The bytes of request bodies a receiver holds at once, across all its requests. Each
 * request takes from it through its own `BodyAccount` (its declared length up front, or
 * each chunk as it comes) and gives everything back when it is answered. A budget `within`
 * another is a share of it: bytes count against both.
 */
export class BodyBudget {
  private used = 0;
  constructor(
    readonly limitBytes: number,
    private readonly within?: BodyBudget,
  ) {
    if (!Number.isInteger(limitBytes) || limitBytes < 1) {
      throw new RangeError('the body budget is a positive number of bytes');
    }
  }

  /** Bytes currently held by requests in flight. */
  get inFlight(): number {
    return this.used;
  }

  private fits(n: number): boolean {
    return this.used + n <= this.limitBytes && (this.within?.fits(n) ?? true);
  }

  private add(n: number): void {
    this.used += n;
    this.within?.add(n);
  }

  open(): BodyAccount {
    let held = 0;
    return {
      take: (n) => {
        if (!this.fits(n)) return false;
        this.add(n);
        held += n;
        return true;
      },
      held: () => held,
      release: () => {
        this.add(-held);
        held = 0;
      },
    };
  }
}

/**
 * A receiver's budgets: the whole one, and the share of it for bodies read before their
 * sender is known (default a quarter, at least one maximal body).
 */
export function bodyBudgets(
  maxBody: number,
  total: number,
  unauthenticated?: number,
): { all: BodyBudget; unauthenticated: BodyBudget } {
  if (!(total >= maxBody)) {
    throw new RangeError(`bodyBudgetBytes (${total}) must be at least maxBodyBytes`);
  }
  const share = unauthenticated ?? Math.max(maxBody, Math.floor(total / 4));
  if (!(share >= maxBody && share <= total)) {
    throw new RangeError(
      `unauthenticatedBodyBudgetBytes (${share}) must be between maxBodyBytes and bodyBudgetBytes`,
    );
  }
  const all = new BodyBudget(total);
  return { all, unauthenticated: new BodyBudget(share, all) };
}

export interface BodyAccount {
  /** Takes n more bytes; false (and nothing taken) when the budget would be exceeded. */
  take(n: number): boolean;
  held(): number;
  release(): void;
}

export interface ReadBodyOptions {
  /** Longest wait for the next chunk (default 10 s). */
  idleMs?: number;
  /** Deadline of the whole body, ms since the epoch: a trickle cannot outlive it. */
  deadline?: number;
  /** The request's share of the in-flight budget. */
  account?: BodyAccount;
}

/**
 * Reads a body up to `limit` bytes. A declared Content-Length over the limit fails at
 * once; a stream that crosses it fails at the chunk that crosses, and reading stops there.
 * `idleMs` bounds the wait for each chunk, `deadline` the whole body, so neither a stalled
 * nor a trickling sender can hold the request; `account` refuses bytes over the budget
 * (the declared length is taken before reading, so a refused request holds nothing).
 */
export async function readBodyCapped(
  body: Buffer | Readable,
  limit: number,
  declaredLength: string | null,
  options: ReadBodyOptions = {},
): Promise<Buffer> {
  if (declaredTooLarge(body, limit, declaredLength)) throw new BodyTooLargeError(limit);
  if (Buffer.isBuffer(body)) return body;
  const { account } = options;
  const idleMs = options.idleMs ?? 10_000;
  const declared = declaredBytes(declaredLength);
  if (account && declared !== null && !account.take(declared)) {
    throw new BodyBudgetError();
  }
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // With a declared length the bytes go straight into one buffer of that size: no second
    // copy at the end, and no socket read buffers kept alive by slices while a body is held.
    let whole: Buffer | null =
      declared !== null && declared > 0 ? Buffer.allocUnsafe(declared) : null;
    let timer: NodeJS.Timeout | null = null;
    let deadlineTimer: NodeJS.Timeout | null = null;
    const arm = () => {
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => finish(new BodyReadError('body stalled')), idleMs);
    };
    const finish = (err: Error | null) => {
      if (timer) clearTimeout(timer);
      if (deadlineTimer) clearTimeout(deadlineTimer);
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onError);
      body.off('close', onClose);
      if (err) {
        body.pause();
        reject(err);
      } else if (whole) resolve(size === whole.length ? whole : whole.subarray(0, size));
      else resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer | string) => {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      size += buf.length;
      if (size > limit) {
        finish(new BodyTooLargeError(limit));
        return;
      }
      // Bytes past the declared length (none for HTTP/1.1: the parser enforces it) or a body
      // of unknown length are taken chunk by chunk.
      const extra =
        declared === null
          ? buf.length
          : Math.max(0, size - declared) - Math.max(0, size - buf.length - declared);
      if (account && extra > 0 && !account.take(extra)) {
        finish(new BodyBudgetError());
        return;
      }
      if (whole && size <= whole.length) buf.copy(whole, size - buf.length);
      else {
        if (whole) {
          // More than declared (only a non-HTTP stream can do that): back to a chunk list.
          chunks.push(whole.subarray(0, size - buf.length));
          whole = null;
        }
        chunks.push(buf);
      }
      arm();
    };
    const onEnd = () => finish(null);
    const onError = (err: Error) => finish(new BodyReadError(err.message, { cause: err }));
    const onClose = () => finish(new BodyReadError('connection closed before the body ended'));
    body.on('data', onData);
    body.once('end', onEnd);
    body.once('error', onError);
    body.once('close', onClose);
    arm();
    if (options.deadline !== undefined) {
      const left = Math.max(0, options.deadline - Date.now());
      deadlineTimer = setTimeout(() => finish(new BodyDeadlineError()), left);
    }
    if (body.readableEnded) finish(null);
  });
}
