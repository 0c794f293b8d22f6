/**
 * Authentication of one delivery, in the mode its registration names (never the mode the
 * request looks like): RFC 9421 by default, legacy HMAC-SHA256 or Bearer only where the
 * operator registered them for the path. A request carrying the other mode's credentials
 * is `webhook_mode_mismatch`; there is no "try one, then the other".
 *
 * Two phases (`authenticateHead`, then `complete(body)`), so the pipeline reads a body only
 * for a request whose head passed: RFC 9421 steps 1-10 and a Bearer token need no body; for
 * HMAC only the MAC itself does (headers, timestamp window and signature form come first).
 */
import type { BrandProfile } from '../../shared/brand.js';
import { WebhookVerificationError } from '../../shared/errors/webhook-codes.js';
import { verifyBearer } from '../../shared/legacy/bearer.js';
import { checkHmacHeaders, verifyHmac } from '../../shared/legacy/hmac.js';
import {
  verifySignatureHeaders,
  verifySignedBody,
  type KeyResolver,
  type ReplayStore,
  type RevocationCheck,
} from '../../shared/signing/verify.js';
import type { RouteDecision } from '../trust/trust-file.js';
import { headerValue, type Headers } from './gates.js';

export interface Authenticated {
  sender: string;
  mode: 'rfc9421' | 'hmac' | 'bearer';
  keyid: string | null;
  nonce: string | null;
}

export interface AuthContext {
  profile: BrandProfile;
  keys: KeyResolver;
  revocation?: RevocationCheck;
  replay: ReplayStore;
  nowSeconds: number;
}

function mismatch(message: string): never {
  throw new WebhookVerificationError('webhook_mode_mismatch', 0, message);
}

function has(headers: Headers, name: string): boolean {
  return headers[name] !== undefined;
}

/** A request whose head passed; `complete` runs the checks that need its body. */
export interface PendingAuth {
  /**
   * True when the head alone proves the sender (RFC 9421 signature, Bearer token); false for
   * HMAC, whose MAC needs the body: anyone can send such a body, so it gets a smaller budget.
   */
  headAuthenticated: boolean;
  complete(body: Buffer): Promise<Authenticated>;
}

export type RequestHead = { method: string; url: string; headers: Headers };

export async function authenticateHead(
  route: RouteDecision,
  req: RequestHead,
  ctx: AuthContext,
): Promise<PendingAuth> {
  const h = req.headers;
  const hmacSig = ctx.profile.hmacSignatureHeader.toLowerCase();
  const hmacTs = ctx.profile.hmacTimestampHeader.toLowerCase();
  const has9421 = has(h, 'signature') || has(h, 'signature-input');
  const hasHmac = has(h, hmacSig) || has(h, hmacTs);
  const hasBearer = /^\s*bearer\s/i.test(headerValue(h, 'authorization') ?? '');

  if (route.mode === 'rfc9421') {
    if (hasHmac) mismatch('legacy HMAC headers on an RFC 9421 route');
    if (!has9421 && hasBearer) mismatch('Bearer credential on an RFC 9421 route');
    const head = await verifySignatureHeaders(req, {
      profile: ctx.profile,
      keys: ctx.keys,
      revocation: ctx.revocation,
      replay: ctx.replay,
      now: ctx.nowSeconds,
      // Many deliveries are in flight at once: keep the curve math off the event loop.
      offloadCrypto: true,
    });
    return {
      headAuthenticated: true,
      complete: async (body) => {
        const v = await verifySignedBody(head, body, { replay: ctx.replay });
        return { sender: v.senderId, mode: 'rfc9421', keyid: v.keyid, nonce: v.nonce };
      },
    };
  }

  const reg = route.registration;
  if (has9421) mismatch('RFC 9421 signature on a legacy route');
  if (route.mode === 'hmac' && reg.scheme === 'HMAC-SHA256') {
    if (!hasHmac && hasBearer) mismatch('Bearer credential on an HMAC route');
    const signature = headerValue(h, hmacSig) ?? undefined;
    const timestamp = headerValue(h, hmacTs) ?? undefined;
    checkHmacHeaders({ signature, timestamp, now: ctx.nowSeconds });
    return {
      headAuthenticated: false,
      complete: async (body) => {
        verifyHmac({ secrets: reg.secrets, signature, timestamp, body, now: ctx.nowSeconds });
        return { sender: reg.sender, mode: 'hmac', keyid: null, nonce: null };
      },
    };
  }
  if (route.mode === 'bearer' && reg.scheme === 'Bearer') {
    if (hasHmac) mismatch('HMAC headers on a Bearer route');
    verifyBearer({ tokens: [reg.token], authorization: h.authorization });
    return {
      headAuthenticated: true,
      complete: async () => ({ sender: reg.sender, mode: 'bearer', keyid: null, nonce: null }),
    };
  }
  throw new WebhookVerificationError('webhook_mode_mismatch', 0, 'registration and mode disagree');
}
