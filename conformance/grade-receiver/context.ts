/**
 * What every receiver check needs: the target, the brand, the keys the receiver trusts,
 * the optional hooks, and helpers that deliver a (possibly bent) signed request and
 * record the exchange.
 */
import type { BrandProfile } from '../../shared/brand.js';
import type { SigningKey } from '../../shared/signing/keys.js';
import type { SignatureAlg } from '../../shared/signing/algorithms.js';
import { forgeSignature, type ForgeOptions } from './forge.js';
import { send, type Answer, type OutgoingRequest } from './http-client.js';

export interface ReceiverGradeOptions {
  /** The receiver's webhook URL, as a sender would be given it. */
  target: string;
  profile: BrandProfile;
  protocolVersion: '3.1' | '3.2';
  /** Tester keys the receiver trusts (one per algorithm is enough). */
  keys: SigningKey[];
  /** A key the receiver resolves with a non-webhook purpose (negative 008). */
  wrongPurposeKey?: SigningKey;
  /** A key the receiver resolves with `key_ops: ["sign"]` (negative 020). */
  signOnlyKey?: SigningKey;
  /** The receiver trusts the vectors' own public test keys (keys.json). */
  trustVectorKeys?: boolean;
  /** Folder of the signing vectors (default beside the repository). */
  vectorsDir?: string;
  /** A legacy HMAC-SHA256 registration on the receiver: its secret and path. */
  hmac?: { secret: string; path: string };
  /** GET URL answering the receiver's dispatch count (a number or `{count}`). */
  countUrl?: string;
  /**
   * POST URL of a test harness that installs vector state (revoked kid, filled replay
   * cap, stale revocation list) before a delivery; without it 017-019 are not applicable.
   */
  harnessUrl?: string;
  /** Per request, milliseconds (default 10 000). */
  timeoutMs?: number;
  /** Unix seconds (default the clock). */
  now?: () => number;
}

export class ReceiverRun {
  readonly o: ReceiverGradeOptions;
  readonly timeoutMs: number;

  constructor(options: ReceiverGradeOptions) {
    if (options.keys.length === 0) throw new Error('at least one tester key is required');
    this.o = options;
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  get profile(): BrandProfile {
    return this.o.profile;
  }

  now(): number {
    return this.o.now ? this.o.now() : Math.floor(Date.now() / 1000);
  }

  /** The first tester key, or the first of the given algorithm. */
  key(alg?: SignatureAlg): SigningKey | undefined {
    return alg ? this.o.keys.find((k) => k.alg === alg) : this.o.keys[0];
  }

  get primaryKey(): SigningKey {
    return this.o.keys[0]!;
  }

  /** A POST of `body` to `url`, signed by `key` with the knobs given. */
  signed(
    body: Uint8Array,
    knobs: Partial<ForgeOptions> & { url?: string; key?: SigningKey } = {},
  ): OutgoingRequest {
    const url = knobs.url ?? this.o.target;
    const method = knobs.method ?? 'POST';
    const { headers } = forgeSignature({
      profile: this.profile,
      now: this.now(),
      ...knobs,
      key: knobs.key ?? this.primaryKey,
      method,
      url,
      body,
    });
    return { method, url, headers, body };
  }

  deliver(req: OutgoingRequest, label?: string): Promise<Answer> {
    return send(req, this.timeoutMs, label);
  }

  /** The receiver's dispatch count, or an error text when the count URL fails. */
  async dispatchCount(): Promise<number | string> {
    if (!this.o.countUrl) return 'no --count-url';
    const a = await send({ method: 'GET', url: this.o.countUrl, headers: {} }, this.timeoutMs);
    if (a.status !== 200) return `count URL answered ${a.status ?? a.exchange.error}`;
    try {
      const v = JSON.parse(a.text) as unknown;
      if (typeof v === 'number') return v;
      if (typeof v === 'object' && v !== null) {
        const n = (v as Record<string, unknown>).count ?? (v as Record<string, unknown>).dispatched;
        if (typeof n === 'number') return n;
      }
    } catch {
      // fall through
    }
    return `count URL body is not a number or {"count": n}: ${a.text.slice(0, 80)}`;
  }
}

export function is2xx(status: number | undefined): boolean {
  return status !== undefined && status >= 200 && status < 300;
}

/** The code of an exact `Signature error="<code>"` challenge, or null. */
export function challengeCode(headers: Record<string, string>): string | null {
  const m = /^Signature error="([a-z_]+)"$/.exec(headers['www-authenticate'] ?? '');
  return m ? m[1]! : null;
}

/**
 * "got 401 [Signature error=...]" or the transport error, for details; a 5xx adds the
 * error the receiver gave (`503 publication_failed: ... forward to <app> failed: ...`), so
 * the report says why the receiver could not take the event.
 */
export function describe(a: Answer): string {
  if (a.status === undefined) return `no response (${a.exchange.error})`;
  const www = a.headers['www-authenticate'];
  return `got ${a.status}${www ? ` with WWW-Authenticate: ${www}` : ''}${serverError(a)}`;
}

function serverError(a: Answer): string {
  if (a.status === undefined || a.status < 500) return '';
  try {
    const { error } = JSON.parse(a.text) as { error?: { code?: unknown; message?: unknown } };
    if (typeof error?.code !== 'string') return '';
    return ` ${error.code}${typeof error.message === 'string' ? `: ${error.message}` : ''}`;
  } catch {
    return '';
  }
}
