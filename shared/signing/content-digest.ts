/**
 * Content-Digest (RFC 9530) over the exact body bytes. Webhook v1 signers emit
 * `sha-256=:<unpadded base64url>:`; the verifier decodes either pure alphabet (the shipped
 * vectors carry padded standard base64) and compares bytes, never strings.
 */
import { createHash, hash, timingSafeEqual } from 'node:crypto';
import { encodeBinary, type BinaryProfile } from './base64.js';
import { parseBytesMember, parseSignatureDictionary, StructuredFieldError } from './structured.js';

const ALGORITHMS: Record<string, string> = { 'sha-256': 'sha256', 'sha-512': 'sha512' };

export function contentDigestHeader(
  body: Uint8Array,
  profile: BinaryProfile = 'webhook-v1',
): string {
  const digest = createHash('sha256').update(body).digest();
  return `sha-256=:${encodeBinary(digest, profile)}:`;
}

/**
 * Parsed digests by algorithm name; throws StructuredFieldError when malformed, including
 * an algorithm listed twice.
 */
export function parseContentDigest(header: string, profile: BinaryProfile): Map<string, Buffer> {
  // The one-digest field every signer sends, without the dictionary round trip.
  const one = parseBytesMember(header, profile);
  if (one) return new Map([[one.key, one.bytes]]);
  const { dictionary } = parseSignatureDictionary(header, profile);
  const out = new Map<string, Buffer>();
  for (const [alg, member] of dictionary) {
    const value = member[0];
    if (!(value instanceof ArrayBuffer)) {
      throw new StructuredFieldError(`Content-Digest "${alg}" is not a byte sequence`);
    }
    out.set(alg, Buffer.from(value));
  }
  return out;
}

/**
 * True when at least one supported algorithm is present and every supported one matches
 * the body. Unknown algorithms are ignored, as RFC 9530 allows.
 */
export function contentDigestMatches(digests: Map<string, Buffer>, body: Uint8Array): boolean {
  let checked = 0;
  for (const [name, expected] of digests) {
    const alg = ALGORITHMS[name];
    if (!alg) continue;
    // One-shot hash(): about half createHash's cost for a 1 KB body.
    const actual = hash(alg, body, 'buffer') as unknown as Buffer;
    if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) return false;
    checked++;
  }
  return checked > 0;
}
