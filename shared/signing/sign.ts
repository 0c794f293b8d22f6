/**
 * The webhook signer: RFC 9421 with the webhook-v1 profile. Every call makes a fresh
 * `created`, `expires` and nonce, so each retry of a delivery is signed anew over the same
 * body bytes (supplement §2.1).
 */
import { randomBytes } from 'node:crypto';
import type { BrandProfile } from '../brand.js';
import { canonicalTarget } from './target-cache.js';
import { signBytes } from './algorithms.js';
import { encodeWebhookBinary } from './base64.js';
import { contentDigestHeader } from './content-digest.js';
import type { SigningKey } from './keys.js';
import {
  buildSignatureBase,
  serializeSignatureParams,
  WEBHOOK_COMPONENTS,
} from './signature-base.js';
import { SvcError } from '../errors/base.js';

export interface SignOptions {
  key: SigningKey;
  profile: BrandProfile;
  /** Unix seconds; defaults to the clock. */
  now?: number;
  /** Unpadded base64url of ≥ 16 random bytes; defaults to 16 fresh CSPRNG bytes. */
  nonce?: string;
  /** expires − created, at most 300; default 300. */
  ttlSeconds?: number;
  /** Content-Type sent and covered; the webhook profile requires application/json. */
  contentType?: string;
}

export interface WebhookRequest {
  method: string;
  url: string;
  body: Uint8Array | string;
}

export class SignError extends SvcError {
  static override readonly code = 'ERR_SIGN';

  constructor(message: string) {
    super(message);
    this.name = 'SignError';
  }
}

const NONCE = /^[A-Za-z0-9_-]{22,}$/;
const SAFE_PARAM = /^[\x20-\x7e]{1,255}$/;

export function newNonce(): string {
  return randomBytes(16).toString('base64url');
}

/** Returns the four headers to send with the body: content-type, content-digest, signature-input, signature. */
export function signWebhook(req: WebhookRequest, opts: SignOptions): Record<string, string> {
  const ttl = opts.ttlSeconds ?? 300;
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > 300)
    throw new SignError('ttlSeconds must be 1-300');
  const nonce = opts.nonce ?? newNonce();
  if (!NONCE.test(nonce))
    throw new SignError('nonce must be unpadded base64url of at least 16 bytes');
  if (!SAFE_PARAM.test(opts.key.kid)) throw new SignError('kid must be printable ASCII');
  const created = opts.now ?? Math.floor(Date.now() / 1000);
  const body = typeof req.body === 'string' ? Buffer.from(req.body) : req.body;
  const target = canonicalTarget(req.url, false);
  const contentType = opts.contentType ?? 'application/json';
  const contentDigest = contentDigestHeader(body);
  const params = serializeSignatureParams(WEBHOOK_COMPONENTS, {
    created,
    expires: created + ttl,
    nonce,
    keyid: opts.key.kid,
    alg: opts.key.alg,
    tag: opts.profile.webhookTag,
  });
  const base = buildSignatureBase(
    [
      ['@method', req.method.toUpperCase()],
      ['@target-uri', target.targetUri],
      ['@authority', target.authority],
      ['content-type', contentType],
      ['content-digest', contentDigest],
    ],
    params,
  );
  const signature = signBytes(opts.key.alg, opts.key.privateKey, Buffer.from(base));
  return {
    'content-type': contentType,
    'content-digest': contentDigest,
    'signature-input': `sig1=${params}`,
    signature: `sig1=:${encodeWebhookBinary(signature)}:`,
  };
}
