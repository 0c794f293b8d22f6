/**
 * The request half of the receiver pipeline (supplement §5.1), one function per stage, each
 * taking what the previous one produced and returning its product or a `Halt` (the answer
 * that ends the delivery there): gate (405/415/413 before any crypto), authenticate (the
 * head, RFC 9421 steps 1-10 / Bearer / HMAC headers; no body read before it passes), verify
 * (the body under its cap, deadlines and budget, then the digest, nonce and HMAC), parse
 * (strict JSON, step 14) and envelope (which kind of webhook, its required members; 422).
 * The store half (claim, order, publish, acknowledge) is settle.ts; receiver.ts composes
 * both in `run()`.
 */
import type { BrandProfile } from '../../shared/brand.js';
import { WebhookVerificationError } from '../../shared/errors/webhook-codes.js';
import type { Logger } from '../../shared/infra/logger.js';
import { JsonParseError, parseStrictJson, sanitizeForLog } from '../../shared/json/strict-parse.js';
import type { KeyResolver, RevocationCheck } from '../../shared/signing/verify.js';
import type { KeyObserver } from '../admission/tracker.js';
import type { RouteDecision } from '../trust/trust-file.js';
import { authenticateHead, type Authenticated, type PendingAuth } from './auth.js';
import type { DeferredReplay } from './deferred-replay.js';
import { readEnvelope, type Envelope } from './envelope.js';
import {
  declaredTooLarge,
  headerValue,
  isJsonContentType,
  readBodyCapped,
  type BodyAccount,
  type BodyBudget,
  type Headers,
} from './gates.js';
import type { ReceiverMetrics } from './metrics.js';
import type { Seen } from './observation.js';
import { foreignOrigin } from './public-origins.js';
import {
  bodyRefusal,
  errorResponse,
  ok,
  payloadTooLarge,
  verificationFailure,
  type ReceiverResponse,
} from './responses.js';
import type { Readable } from 'node:stream';

export interface ReceiverRequest {
  method: string;
  /** The full URL as received: scheme://host[:port]/path?query (the signed @target-uri). */
  url: string;
  /** Lower-case names; repeated headers as arrays. */
  headers: Headers;
  body: Buffer | Readable;
}

/** What the stages need from the receiver: fixed at construction. */
export interface PipelineParts {
  log: Logger;
  metrics: ReceiverMetrics;
  profile: BrandProfile;
  keys: KeyResolver;
  revocation?: RevocationCheck;
  admission?: KeyObserver;
  route?: (path: string) => RouteDecision;
  maxBody: number;
  bodyIdleTimeoutMs?: number;
  bodyTimeoutMs: number;
  bodyBudget: BodyBudget;
  unauthenticatedBodyBudget: BodyBudget;
  clock: () => number;
  preferFormat?: 'mcp' | 'a2a';
  /** The receiver's own public origins; null accepts any Host as `@authority`. */
  origins: ReadonlySet<string> | null;
}

/** One delivery on its way through the stages. */
export interface Delivery {
  req: ReceiverRequest;
  seen: Seen;
  accounts: BodyAccount[];
  startedMs: number;
  /** Step 13's insert, held until the store (or `burn`) commits it. */
  replay: DeferredReplay;
}

/** The answer that ends a delivery at the stage that produced it. */
export class Halt {
  constructor(readonly res: ReceiverResponse) {}
}

export function refuse(
  p: PipelineParts,
  res: ReceiverResponse,
  code: string,
  fields: Record<string, unknown> = {},
): Halt {
  p.metrics.rejected.inc({ code });
  p.log.info({ event: 'webhook_rejected', code, status: res.status, ...fields });
  return new Halt(res);
}

function refuseVerification(p: PipelineParts, err: unknown): Halt {
  if (!(err instanceof WebhookVerificationError)) throw err;
  return refuse(p, verificationFailure(err), err.code, { step: err.step });
}

/**
 * Ends a delivery after verification: the deferred nonce insert is committed first (a
 * malformed body still burns its nonce), and a replay outranks the stage's own answer.
 */
export async function burn(
  p: PipelineParts,
  d: Delivery,
  res: ReceiverResponse,
  code: string,
  fields: Record<string, unknown> = {},
): Promise<Halt> {
  const replayed = await d.replay.commit();
  if (replayed) return refuseVerification(p, replayed);
  return code ? refuse(p, res, code, fields) : new Halt(res);
}

const RFC9421: RouteDecision = { mode: 'rfc9421' };

function pathOf(url: string): string {
  const m = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*([^?#]*)/.exec(url);
  return m?.[1] || '/';
}

/**
 * 1. Gate: addressed to this receiver at all (its public origins, public-origins.ts), then
 * method, media type and a declared length over the cap, before any crypto.
 */
export function gate(p: PipelineParts, req: ReceiverRequest): Halt | { declared: string | null } {
  const foreign = p.origins && foreignOrigin(req, p.origins);
  if (foreign) return refuse(p, verificationFailure(foreign), foreign.code, { step: 'origin' });
  if (req.method.toUpperCase() !== 'POST') {
    const res = errorResponse(405, 'method_not_allowed', 'webhooks are delivered with POST', {
      allow: 'POST',
    });
    return refuse(p, res, 'method_not_allowed');
  }
  if (!isJsonContentType(req.headers['content-type'])) {
    const res = errorResponse(
      415,
      'unsupported_media_type',
      'Content-Type must be application/json',
    );
    return refuse(p, res, 'unsupported_media_type');
  }
  const declared = headerValue(req.headers, 'content-length');
  if (declaredTooLarge(req.body, p.maxBody, declared)) {
    return refuse(p, payloadTooLarge(p.maxBody), 'payload_too_large');
  }
  return { declared };
}

/** 2. Authenticate the head in the route's mode; no byte of the body is read before. */
export async function authenticate(p: PipelineParts, d: Delivery): Promise<Halt | PendingAuth> {
  const { req } = d;
  try {
    return await authenticateHead(
      p.route ? p.route(pathOf(req.url)) : RFC9421,
      { method: req.method.toUpperCase(), url: req.url, headers: req.headers },
      {
        profile: p.profile,
        keys: p.keys,
        revocation: p.revocation,
        replay: d.replay,
        nowSeconds: Math.floor(p.clock() / 1000),
      },
    );
  } catch (err) {
    return refuseVerification(p, err);
  }
}

/** 3. Verify: read the body within its bounds, then the checks that need it. */
export async function verify(
  p: PipelineParts,
  d: Delivery,
  declared: string | null,
  pending: PendingAuth,
): Promise<Halt | { auth: Authenticated; body: Buffer }> {
  const account = (pending.headAuthenticated ? p.bodyBudget : p.unauthenticatedBodyBudget).open();
  d.accounts.push(account);
  let body: Buffer;
  try {
    body = await readBodyCapped(d.req.body, p.maxBody, declared, {
      idleMs: p.bodyIdleTimeoutMs,
      deadline: d.startedMs + p.bodyTimeoutMs,
      account,
    });
  } catch (err) {
    const refusal = bodyRefusal(err, p.maxBody);
    if (!refusal) throw err;
    return refuse(p, refusal.res, refusal.code);
  }
  let auth: Authenticated;
  try {
    auth = await pending.complete(body);
  } catch (err) {
    return refuseVerification(p, err);
  }
  p.metrics.verified.inc();
  d.seen.sender = auth.sender;
  d.seen.keyid = auth.keyid;
  if (auth.keyid !== null) p.admission?.observe(auth.keyid, auth.sender);
  return { auth, body };
}

/** 4. Parse strictly (step 14): the signature was valid, the body is ambiguous or broken. */
export async function parse(
  p: PipelineParts,
  d: Delivery,
  auth: Authenticated,
  body: Buffer,
): Promise<Halt | { value: unknown }> {
  try {
    return { value: parseStrictJson(body) };
  } catch (err) {
    if (!(err instanceof JsonParseError)) throw err;
    const e = new WebhookVerificationError('webhook_body_malformed', 14, err.code);
    return burn(p, d, verificationFailure(e), e.code, {
      sender: auth.sender,
      keyid: auth.keyid,
      nonce: auth.nonce,
      bytes: body.length,
      kind: err.code,
      duplicate_keys: sanitizeForLog(err.duplicateKeys),
    });
  }
}

/** 5. Envelope: which kind of webhook this is and its required members (422 otherwise). */
export async function envelope(
  p: PipelineParts,
  d: Delivery,
  auth: Authenticated,
  value: unknown,
): Promise<Halt | Envelope> {
  const read = readEnvelope(value, p.preferFormat);
  if ('error' in read) {
    const err = read.error;
    const res = errorResponse(err.status, err.code, 'invalid webhook envelope', {}, err.fields);
    return burn(p, d, res, err.code, { sender: auth.sender, fields: err.fields });
  }
  d.seen.event = read;
  // A bare A2A {message}: acknowledged, no task state change, nothing to publish.
  if (read.kind === 'a2a_message') return burn(p, d, ok('message'), '');
  return read;
}
