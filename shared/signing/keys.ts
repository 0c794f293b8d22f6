/**
 * Signing keys: generation, import of private JWKs (for signers), import of public JWKs
 * (for verifiers, cached), the published JWK shape, and the step-8 purpose check.
 *
 * JWK handling goes through jose; the resulting CryptoKey is turned into a node KeyObject
 * once, because node:crypto's synchronous sign/verify is the fastest path per request.
 */
import { generateKeyPairSync, KeyObject, randomBytes } from 'node:crypto';
import { importJWK, type JWK } from 'jose';
import type { BrandProfile } from '../brand.js';
import { JWK_SHAPE, type SignatureAlg } from './algorithms.js';
import { SvcError } from '../errors/base.js';

export type { JWK };

export interface SigningKey {
  kid: string;
  alg: SignatureAlg;
  privateKey: KeyObject;
  /** Public JWK with kid and alg, without any purpose member (see publishedJwk). */
  publicJwk: JWK;
}

export class KeyImportError extends SvcError {
  static override readonly code = 'ERR_KEY_IMPORT';

  constructor(message: string) {
    super(message);
    this.name = 'KeyImportError';
  }
}

/** A key set that cannot be used: a malformed JWKS, or a key directory with a bad file. */
export class KeySetError extends SvcError {
  static override readonly code = 'ERR_KEY_SET';
}

/** Purpose values a webhook verifier accepts (`webhook-signing` is deprecated but valid). */
export const WEBHOOK_KEY_PURPOSES = ['request-signing', 'webhook-signing'] as const;

const KEY_MEMBERS = ['kty', 'crv', 'x', 'y', 'd'] as const;

/** Only the members a strict importer understands: custom ones (`<brand>_use`) stripped. */
function keyMaterial(jwk: JWK): JWK {
  const out: JWK = {};
  for (const m of KEY_MEMBERS) if (jwk[m] !== undefined) out[m] = jwk[m];
  return out;
}

function algForJwk(jwk: JWK): SignatureAlg {
  if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') return 'ed25519';
  if (jwk.kty === 'EC' && jwk.crv === 'P-256') return 'ecdsa-p256-sha256';
  throw new KeyImportError(`unsupported key type ${jwk.kty}/${jwk.crv}: use Ed25519 or P-256`);
}

async function toKeyObject(jwk: JWK, alg: SignatureAlg): Promise<KeyObject> {
  try {
    const key = await importJWK(keyMaterial(jwk), JWK_SHAPE[alg].alg);
    if (key instanceof Uint8Array) throw new KeyImportError('symmetric keys are not signing keys');
    return KeyObject.from(key);
  } catch (err) {
    if (err instanceof KeyImportError) throw err;
    throw new KeyImportError(`invalid ${JWK_SHAPE[alg].crv} JWK: ${(err as Error).message}`);
  }
}

function publicPart(jwk: JWK, kid: string, alg: SignatureAlg): JWK {
  const pub: JWK = { kid, kty: jwk.kty, crv: jwk.crv, alg: JWK_SHAPE[alg].alg, x: jwk.x };
  if (jwk.y !== undefined) pub.y = jwk.y;
  return pub;
}

export function defaultKid(alg: SignatureAlg): string {
  const day = new Date().toISOString().slice(0, 10).replaceAll('-', '');
  return `${alg === 'ed25519' ? 'ed25519' : 'es256'}-${day}-${randomBytes(4).toString('hex')}`;
}

export async function generateSigningKey(
  alg: SignatureAlg = 'ed25519',
  kid: string = defaultKid(alg),
): Promise<{ key: SigningKey; privateJwk: JWK }> {
  const { privateKey } =
    alg === 'ed25519'
      ? generateKeyPairSync('ed25519')
      : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const exported = privateKey.export({ format: 'jwk' }) as JWK;
  const privateJwk: JWK = {
    kid,
    alg: JWK_SHAPE[alg].alg,
    ...exported,
    use: 'sig',
    key_ops: ['sign'],
  };
  return { key: { kid, alg, privateKey, publicJwk: publicPart(exported, kid, alg) }, privateJwk };
}

/** Imports a private JWK (with `d`) for signing. */
export async function importSigningKey(privateJwk: JWK): Promise<SigningKey> {
  if (typeof privateJwk.kid !== 'string' || privateJwk.kid.length === 0) {
    throw new KeyImportError('a signing JWK needs a kid');
  }
  if (typeof privateJwk.d !== 'string')
    throw new KeyImportError(`JWK ${privateJwk.kid} has no private part (d)`);
  const alg = algForJwk(privateJwk);
  const privateKey = await toKeyObject(privateJwk, alg);
  return {
    kid: privateJwk.kid,
    alg,
    privateKey,
    publicJwk: publicPart(privateJwk, privateJwk.kid, alg),
  };
}

/** The JWK a seller publishes for webhook signing (supplement §2.6). */
export function publishedJwk(key: SigningKey, profile: BrandProfile): JWK {
  return {
    ...key.publicJwk,
    use: 'sig',
    key_ops: ['verify'],
    [profile.useMember]: 'request-signing',
  };
}

/**
 * Step 8: the JWK must be a verification key for request or webhook signing, and its
 * alg/kty/crv must agree with the signature's `alg`. Returns the reason it fails, or null.
 */
export function keyPurposeProblem(
  jwk: JWK,
  sigAlg: SignatureAlg,
  profile: BrandProfile,
): string | null {
  if (jwk.use !== 'sig') return 'JWK use is not "sig"';
  if (!Array.isArray(jwk.key_ops) || !jwk.key_ops.includes('verify'))
    return 'JWK key_ops lacks "verify"';
  const purpose = (jwk as Record<string, unknown>)[profile.useMember];
  if (
    typeof purpose !== 'string' ||
    !(WEBHOOK_KEY_PURPOSES as readonly string[]).includes(purpose)
  ) {
    return `JWK ${profile.useMember} is not request-signing or webhook-signing`;
  }
  const shape = JWK_SHAPE[sigAlg];
  if (jwk.kty !== shape.kty || jwk.crv !== shape.crv)
    return `JWK ${jwk.kty}/${jwk.crv} cannot verify ${sigAlg}`;
  if (jwk.alg !== undefined && jwk.alg !== shape.alg)
    return `JWK alg ${jwk.alg} contradicts ${sigAlg}`;
  if (jwk.d !== undefined) return 'published JWK carries a private part';
  return null;
}

// Imported verification keys, by their key material: a JWKS refetch that returns the same
// keys reuses the KeyObjects, a rotated key gets a new entry. Bounded: oldest dropped first.
const verifyKeyCache = new Map<string, KeyObject>();
const VERIFY_KEY_CACHE_MAX = 1024;

function verifyKeyId(jwk: JWK): string {
  return `${jwk.kty}|${jwk.crv}|${jwk.x}|${jwk.y ?? ''}`;
}

// The same, by JWK object: a resolver hands back the same object for every request of a
// sender, so the hot path compares four members instead of building and hashing the id.
// The members are compared on every hit, so a JWK object whose key changed is not matched.
const byJwkObject = new WeakMap<
  JWK,
  { kty?: string; crv?: string; x?: string; y?: string; key: KeyObject }
>();

/**
 * The KeyObject importVerifyKey made for this key material, if any: the verifier's per-request
 * path, synchronous, so a known key costs a lookup and no promise.
 */
export function cachedVerifyKey(jwk: JWK): KeyObject | undefined {
  const hit = byJwkObject.get(jwk);
  if (hit && hit.kty === jwk.kty && hit.crv === jwk.crv && hit.x === jwk.x && hit.y === jwk.y) {
    return hit.key;
  }
  const key = verifyKeyCache.get(verifyKeyId(jwk));
  if (key) byJwkObject.set(jwk, { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, key });
  return key;
}

export async function importVerifyKey(jwk: JWK, alg: SignatureAlg): Promise<KeyObject> {
  const id = verifyKeyId(jwk);
  const cached = verifyKeyCache.get(id);
  if (cached) return cached;
  const key = await toKeyObject({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }, alg);
  if (verifyKeyCache.size >= VERIFY_KEY_CACHE_MAX) {
    verifyKeyCache.delete(verifyKeyCache.keys().next().value as string);
  }
  verifyKeyCache.set(id, key);
  return key;
}
