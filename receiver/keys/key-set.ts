/**
 * A JWKS document as a map from kid to JWK. A document that repeats a kid is malformed as
 * a whole (which of the two would be "the" key is exactly the ambiguity an attacker wants),
 * so the caller keeps its previous good set instead.
 */
import { KeySetError, type JWK } from '../../shared/signing/keys.js';

export { KeySetError };

export type KeySet = ReadonlyMap<string, JWK>;

/** Keys per document: far above any real rotation overlap, low enough to bound work. */
export const MAX_KEYS_PER_SET = 100;

export function parseKeySet(value: unknown): KeySet {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new KeySetError('JWKS is not an object');
  }
  const keys = (value as { keys?: unknown }).keys;
  if (!Array.isArray(keys)) throw new KeySetError('JWKS has no "keys" array');
  if (keys.length > MAX_KEYS_PER_SET)
    throw new KeySetError(`JWKS has over ${MAX_KEYS_PER_SET} keys`);
  const out = new Map<string, JWK>();
  keys.forEach((k: unknown, i) => {
    if (typeof k !== 'object' || k === null || Array.isArray(k)) {
      throw new KeySetError(`keys[${i}] is not an object`);
    }
    const jwk = k as JWK;
    if (typeof jwk.kid !== 'string' || jwk.kid === '') {
      throw new KeySetError(`keys[${i}] has no kid`);
    }
    if (typeof jwk.kty !== 'string') throw new KeySetError(`keys[${i}] has no kty`);
    if (out.has(jwk.kid)) throw new KeySetError(`duplicate kid "${jwk.kid}"`);
    out.set(jwk.kid, Object.freeze({ ...jwk }));
  });
  return out;
}
