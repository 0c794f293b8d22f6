/**
 * Proof of control for account- and agent-level webhook subscribers (supplement §7.4):
 * before a new or changed active subscriber takes effect, the seller POSTs a signed
 * `webhook.challenge` to the candidate URL and expects the challenge back. Entries whose
 * binding (URL, delivery auth, event types) is unchanged are not challenged again;
 * paused entries and dry runs send nothing.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { BrandProfile } from '../../shared/brand.js';
import { canonicalJson } from '../../shared/json/canonical.js';
import { safeFetch } from '../../shared/net/safe-fetch.js';
import type { SigningKey } from '../../shared/signing/keys.js';
import { signWebhook } from '../../shared/signing/sign.js';
import { taskError } from '../runtime/errors.js';

export interface SubscriberEntry {
  subscriber_id: string;
  url: string;
  event_types: string[];
  authentication?: { schemes: string[]; credentials: string };
  active?: boolean;
  [member: string]: unknown;
}

export interface ProofRequest {
  scope: 'account' | 'agent';
  accountId?: string;
  sellerAgentUrl: string;
  entry: SubscriberEntry;
}

/** Resolves when the receiver proved control; throws (any error) otherwise. */
export interface SubscriberVerifier {
  verify(request: ProofRequest): Promise<void>;
}

function deliveryAuth(entry: SubscriberEntry): Record<string, string> {
  if (!entry.authentication) return { mode: 'rfc9421' };
  return {
    mode: entry.authentication.schemes[0] ?? 'Bearer',
    credential_fingerprint: createHash('sha256')
      .update(entry.authentication.credentials)
      .digest('hex'),
  };
}

/** What a proof covers: a change to any of it needs a fresh proof. */
function binding(entry: SubscriberEntry): string {
  return canonicalJson({
    url: entry.url,
    auth: deliveryAuth(entry),
    event_types: [...new Set(entry.event_types)].sort(),
  });
}

/**
 * Challenges every active entry of `next` that is new or whose binding changed since
 * `previous`. A failure is VALIDATION_ERROR naming `<fieldPrefix>[j].url`.
 */
export async function proveSubscribers(
  verifier: SubscriberVerifier | undefined,
  input: {
    scope: 'account' | 'agent';
    accountId?: string;
    sellerAgentUrl: string;
    previous: SubscriberEntry[];
    next: SubscriberEntry[];
    fieldPrefix: string;
  },
): Promise<void> {
  if (!verifier) return;
  const before = new Map(input.previous.map((e) => [e.subscriber_id, binding(e)]));
  for (const [j, entry] of input.next.entries()) {
    if (entry.active === false) continue;
    if (before.get(entry.subscriber_id) === binding(entry)) continue;
    try {
      await verifier.verify({
        scope: input.scope,
        ...(input.accountId ? { accountId: input.accountId } : {}),
        sellerAgentUrl: input.sellerAgentUrl,
        entry,
      });
    } catch (err) {
      throw taskError(
        'VALIDATION_ERROR',
        `subscriber ${entry.subscriber_id} did not prove control of its URL: ${(err as Error).message}`,
        { field: `${input.fieldPrefix}[${j}].url` },
      );
    }
  }
}

export interface ChallengeVerifierOptions {
  key: SigningKey;
  profile: BrandProfile;
  /** Hosts reachable over http / at reserved addresses (local testing). */
  allowHosts?: string[];
  /** Connect and read bounds (default 10 s each). */
  timeoutMs?: number;
}

/** The seller side of the challenge, signed with the webhook profile (RFC 9421). */
export class ChallengeVerifier implements SubscriberVerifier {
  constructor(private readonly options: ChallengeVerifierOptions) {}

  async verify(request: ProofRequest): Promise<void> {
    const { entry } = request;
    const challenge = randomBytes(32).toString('base64url');
    const body = JSON.stringify({
      type: 'webhook.challenge',
      challenge,
      ...(request.scope === 'agent' ? { scope: 'agent' } : { account_id: request.accountId }),
      subscriber_id: entry.subscriber_id,
      seller_agent_url: request.sellerAgentUrl,
      delivery_auth: deliveryAuth(entry),
      event_types: entry.event_types,
    });
    const timeout = this.options.timeoutMs ?? 10_000;
    const attempt = async () => {
      const headers = signWebhook(
        { method: 'POST', url: entry.url, body },
        { key: this.options.key, profile: this.options.profile, ttlSeconds: 300 },
      );
      return safeFetch(entry.url, {
        method: 'POST',
        headers,
        body,
        maxBytes: 16 * 1024,
        connectTimeoutMs: timeout,
        totalTimeoutMs: timeout * 2,
        ...(this.options.allowHosts ? { allowHosts: this.options.allowHosts } : {}),
      });
    };
    let res;
    try {
      res = await attempt();
    } catch {
      res = await attempt(); // one retry of a transient network failure, same challenge
    }
    if (res.status < 200 || res.status >= 300) throw new Error(`challenge answered ${res.status}`);
    let answer: unknown;
    try {
      answer = JSON.parse(res.body.toString('utf8'));
    } catch {
      throw new Error('challenge answer is not JSON');
    }
    const a = answer as { challenge?: unknown; token?: unknown };
    if (a?.challenge !== challenge && a?.token !== challenge) {
      throw new Error('challenge answer does not echo the challenge');
    }
  }
}
