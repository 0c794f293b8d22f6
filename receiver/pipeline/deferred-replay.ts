/**
 * Step 13's nonce insert, deferred so the pipeline can run it concurrently with the
 * delivery-key claim: two commits in parallel instead of in a row, which halves the time a
 * delivery waits on WAL flushes. The verifier still calls `insert` at step 13 and gets
 * "inserted"; the real, atomic insert runs right after verification (`commit`), and its
 * outcome is enforced before any 2xx, with the verifier's codes: a replayed nonce is
 * `webhook_signature_replayed`, an over-cap one `webhook_signature_rate_abuse`. Every path
 * after verification commits the insert (a malformed body still burns its nonce), so a
 * replayed request gets `webhook_signature_replayed` whatever its body.
 */
import { WebhookVerificationError } from '../../shared/errors/webhook-codes.js';
import type { ReplayStore } from '../../shared/signing/verify.js';

export class DeferredReplay implements ReplayStore {
  private pending: { keyid: string; nonce: string; ttl: number } | null = null;
  constructor(private readonly inner: ReplayStore) {}

  atCap(keyid: string): Promise<boolean> {
    return this.inner.atCap(keyid);
  }

  /**
   * Step 12 is answered by the atomic insert itself: every path after verification commits
   * it before answering, and a nonce already present comes back as `replayed` there, with
   * the same code. Skipping the separate read saves a round trip per delivery.
   */
  async seen(): Promise<boolean> {
    return false;
  }

  async insert(keyid: string, nonce: string, ttlSeconds: number): Promise<'inserted'> {
    this.pending = { keyid, nonce, ttl: ttlSeconds };
    return 'inserted';
  }

  /**
   * Hands the deferred insert to a delivery store that runs it in its own statement; the
   * store's answer then goes through `failure`. Null when there was none (legacy modes).
   */
  take(): { keyid: string; nonce: string; ttlSeconds: number } | null {
    const p = this.pending;
    this.pending = null;
    return p ? { keyid: p.keyid, nonce: p.nonce, ttlSeconds: p.ttl } : null;
  }

  /** Runs the deferred insert; resolves null when there was none (legacy modes). */
  async commit(): Promise<WebhookVerificationError | null> {
    const p = this.take();
    if (!p) return null;
    const outcome = await this.inner.insert(p.keyid, p.nonce, p.ttlSeconds);
    return outcome === 'inserted' ? null : this.failure(outcome);
  }

  /** The verifier's error for a nonce already seen, or a keyid over its cap. */
  failure(outcome: 'replayed' | 'cap'): WebhookVerificationError {
    if (outcome === 'replayed') {
      return new WebhookVerificationError('webhook_signature_replayed', 12, 'nonce already seen');
    }
    return new WebhookVerificationError('webhook_signature_rate_abuse', '9a', 'replay cap reached');
  }
}

/**
 * Shares one in-flight step 9a read per keyid among concurrent deliveries (it is a read of
 * the same state at the same moment; the insert re-checks the cap atomically anyway).
 */
export function coalesceAtCap(inner: ReplayStore): ReplayStore {
  const pending = new Map<string, Promise<boolean>>();
  return {
    atCap(keyid) {
      let p = pending.get(keyid);
      if (!p) {
        p = inner.atCap(keyid).finally(() => pending.delete(keyid));
        pending.set(keyid, p);
      }
      return p;
    },
    seen: (keyid, nonce) => inner.seen(keyid, nonce),
    insert: (keyid, nonce, ttl) => inner.insert(keyid, nonce, ttl),
  };
}
