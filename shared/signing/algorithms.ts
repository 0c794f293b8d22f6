/**
 * The two signature algorithms of the webhook profile and their JWK counterparts.
 * ES256 signatures are IEEE P1363 `r || s` (64 bytes), as RFC 9421 §3.3.2 requires.
 */
import { sign as cryptoSign, verify as cryptoVerify, type KeyObject } from 'node:crypto';

export const SIGNATURE_ALGS = ['ed25519', 'ecdsa-p256-sha256'] as const;
export type SignatureAlg = (typeof SIGNATURE_ALGS)[number];

export function isSignatureAlg(value: unknown): value is SignatureAlg {
  return value === 'ed25519' || value === 'ecdsa-p256-sha256';
}

/** The JWK shape each algorithm requires: alg, kty and crv must all agree. */
export const JWK_SHAPE: Record<SignatureAlg, { alg: string; kty: string; crv: string }> = {
  ed25519: { alg: 'EdDSA', kty: 'OKP', crv: 'Ed25519' },
  'ecdsa-p256-sha256': { alg: 'ES256', kty: 'EC', crv: 'P-256' },
};

export function signBytes(alg: SignatureAlg, key: KeyObject, data: Uint8Array): Buffer {
  return alg === 'ed25519'
    ? cryptoSign(null, data, key)
    : cryptoSign('sha256', data, { key, dsaEncoding: 'ieee-p1363' });
}

export function verifyBytes(
  alg: SignatureAlg,
  key: KeyObject,
  data: Uint8Array,
  signature: Uint8Array,
): boolean {
  if (signature.length !== 64) return false;
  try {
    return alg === 'ed25519'
      ? cryptoVerify(null, data, key, signature)
      : cryptoVerify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, signature);
  } catch {
    return false;
  }
}

/**
 * The same check on libuv's thread pool: the event loop stays free while the curve math
 * runs, so a server verifying many requests at once uses more than one core.
 */
export function verifyBytesOffloaded(
  alg: SignatureAlg,
  key: KeyObject,
  data: Uint8Array,
  signature: Uint8Array,
): Promise<boolean> {
  if (signature.length !== 64) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (err: Error | null, ok: boolean) => resolve(!err && ok);
    try {
      if (alg === 'ed25519') cryptoVerify(null, data, key, signature, done);
      else cryptoVerify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, signature, done);
    } catch {
      resolve(false);
    }
  });
}
