/**
 * Operator authentication for the console: one token (from the credentials file or
 * `svc console --token`), exchanged at /login for a session cookie; or sent as a Bearer
 * token by scripts calling the JSON API. No anonymous access at all. Sessions carry a
 * CSRF token every state-changing request must echo. Every failed credential, whatever
 * its channel (the form, an OIDC callback, `Authorization: Bearer`), counts in one limiter
 * per client address (issue 21 item 7).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const SESSION_COOKIE = 'svc_console';

export interface Session {
  operator: string;
  csrf: string;
  expiresAt: number;
}

export interface AuthOptions {
  token: string;
  /** The identity actions are recorded under; default `operator`. */
  operator?: string;
  sessionTtlMs?: number;
  /** Failed sign-ins allowed per address per window; default 10 per 5 minutes. */
  loginAttempts?: number;
  loginWindowMs?: number;
  now?: () => number;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

export class ConsoleAuth {
  readonly operator: string;
  private readonly tokenDigest: Buffer;
  private readonly sessions = new Map<string, Session>();
  private readonly failures = new Map<string, number[]>();
  private readonly ttl: number;
  private readonly attempts: number;
  private readonly window: number;
  private readonly now: () => number;

  constructor(o: AuthOptions) {
    if (o.token.length < 16) throw new Error('the console token must be at least 16 characters');
    this.tokenDigest = digest(o.token);
    this.operator = o.operator ?? 'operator';
    this.ttl = o.sessionTtlMs ?? 12 * 3_600_000;
    this.attempts = o.loginAttempts ?? 10;
    this.window = o.loginWindowMs ?? 5 * 60_000;
    this.now = o.now ?? Date.now;
  }

  tokenMatches(candidate: string): boolean {
    return timingSafeEqual(digest(candidate), this.tokenDigest);
  }

  /** Seconds until `address` may try again, or 0. */
  retryAfter(address: string): number {
    const now = this.now();
    const recent = (this.failures.get(address) ?? []).filter((t) => t > now - this.window);
    if (recent.length === 0) this.failures.delete(address);
    else this.failures.set(address, recent);
    if (recent.length < this.attempts) return 0;
    return Math.max(1, Math.ceil((recent[0]! + this.window - now) / 1000));
  }

  /**
   * A bearer token on an API call: `ok`, `invalid` (counted against the address, as a
   * failed form sign-in is) or `locked` while the address waits (`retryAfter`).
   */
  bearer(address: string, token: string): 'ok' | 'invalid' | 'locked' {
    if (this.retryAfter(address) > 0) return 'locked';
    if (this.tokenMatches(token)) return 'ok';
    this.failed(address);
    return 'invalid';
  }

  /** A sign-in attempt: a new session id, or null (counted against the address). */
  login(address: string, token: string): string | null {
    if (!this.tokenMatches(token)) {
      this.failed(address);
      return null;
    }
    this.failures.delete(address);
    return this.open(this.operator);
  }

  /** A failed sign-in of any kind (token or OIDC callback), counted against the address. */
  failed(address: string): void {
    const list = this.failures.get(address) ?? [];
    list.push(this.now());
    this.failures.set(address, list);
    // Bound the table: a flood of addresses cannot grow it without limit.
    if (this.failures.size > 10_000) this.failures.delete(this.failures.keys().next().value!);
  }

  /** A session for an operator another way has authenticated (OIDC): its id. */
  open(operator: string): string {
    const id = randomBytes(32).toString('base64url');
    this.sessions.set(id, {
      operator,
      csrf: randomBytes(24).toString('base64url'),
      expiresAt: this.now() + this.ttl,
    });
    this.prune();
    return id;
  }

  session(id: string | undefined): Session | null {
    if (!id) return null;
    const s = this.sessions.get(id);
    if (!s) return null;
    if (s.expiresAt <= this.now()) {
      this.sessions.delete(id);
      return null;
    }
    return s;
  }

  logout(id: string | undefined): void {
    if (id) this.sessions.delete(id);
  }

  /** Constant-time comparison of the echoed CSRF token. */
  csrfMatches(session: Session, candidate: unknown): boolean {
    return (
      typeof candidate === 'string' && timingSafeEqual(digest(candidate), digest(session.csrf))
    );
  }

  private prune(): void {
    const now = this.now();
    for (const [id, s] of this.sessions) if (s.expiresAt <= now) this.sessions.delete(id);
  }
}
