/** Real published JWKs for resolver tests (brand adcp, as the vectors use). */
import { brandProfile } from '../../../shared/brand.js';
import { generateSigningKey, publishedJwk, type JWK } from '../../../shared/signing/keys.js';

export const profile = brandProfile('adcp');

export async function publicJwk(kid: string): Promise<JWK> {
  const { key } = await generateSigningKey('ed25519', kid);
  return publishedJwk(key, profile);
}

export async function jwks(...kids: string[]): Promise<{ keys: JWK[] }> {
  return { keys: await Promise.all(kids.map(publicJwk)) };
}

/** What a resolution came to: the sender id, `null`, or the error code it was refused with. */
export async function outcome(p: Promise<{ senderId: string } | null>): Promise<string | null> {
  try {
    return (await p)?.senderId ?? null;
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    throw err;
  }
}
