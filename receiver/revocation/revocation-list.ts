/**
 * A sender's revocation list (supplement §2.8): a JWS, flattened JSON or compact, whose
 * protected header carries `kid`, `alg` and `typ: "<brand>-gov-revocation+jws"`, signed by
 * a key of the same operator's JWKS; payload `{version: 1, issuer, updated, next_update,
 * revoked_jtis, revoked_kids}`. A snapshot whose `next_update` is not after `updated`, or
 * more than 7 days after it, is refused (a list that claims to stay fresh for weeks would
 * silence revocation for that long).
 */
import { compactVerify, flattenedVerify, importJWK, type FlattenedJWSInput } from 'jose';
import { z } from 'zod';
import type { BrandProfile } from '../../shared/brand.js';
import { JsonParseError, parseStrictJson } from '../../shared/json/strict-parse.js';
import type { JWK } from '../../shared/signing/keys.js';
import type { ResolvedKey } from '../../shared/signing/verify.js';
import { SvcError } from '../../shared/errors/base.js';

export const MAX_LIST_LIFETIME_SECONDS = 7 * 24 * 3600;
const ALGORITHMS = ['EdDSA', 'ES256'];

export interface RevocationSnapshot {
  issuer: string;
  /** Unix seconds. */
  updated: number;
  /** Unix seconds. */
  nextUpdate: number;
  revokedKids: ReadonlySet<string>;
  revokedJtis: ReadonlySet<string>;
  /** kid of the key that signed the list, and its sender. */
  signedBy: { kid: string; senderId: string };
}

export type RevocationListProblem =
  | 'malformed' // not a JWS, or the payload is not the list shape
  | 'typ' // wrong or missing typ
  | 'key' // signing kid unknown or not the sender's
  | 'signature'
  | 'issuer'
  | 'window'; // next_update <= updated, or too far ahead

export class RevocationListError extends SvcError {
  static override readonly code = 'ERR_REVOCATION_LIST';

  declare readonly code: RevocationListProblem;
  constructor(problem: RevocationListProblem, message: string, options?: { cause?: unknown }) {
    super(message, { ...options, code: problem });
  }
}

/** The header `typ` for a brand: built from the profile, e.g. `svc-gov-revocation+jws`. */
export function revocationTyp(profile: BrandProfile): string {
  return `${profile.brand}-gov-revocation+jws`;
}

const payloadSchema = z.strictObject({
  version: z.literal(1),
  issuer: z.string().min(1),
  updated: z.iso.datetime({ offset: true }),
  next_update: z.iso.datetime({ offset: true }),
  revoked_jtis: z.array(z.string()),
  revoked_kids: z.array(z.string()),
});

export interface VerifyListOptions {
  profile: BrandProfile;
  /** Finds a signing key by kid among the trusted senders (pins do not apply here). */
  keyFor: (kid: string) => Promise<ResolvedKey | null>;
  /** The sender whose list this is; undefined for a global list (any trusted sender's key). */
  senderId?: string;
  /** Where the list was fetched; its origin must be the issuer's. */
  sourceUrl: string;
}

/** Members a strict JWK importer must not see (the purpose member is ours). */
function importable(jwk: JWK): JWK {
  const { kty, crv, x, y, n, e } = jwk;
  return Object.fromEntries(
    Object.entries({ kty, crv, x, y, n, e }).filter(([, v]) => v !== undefined),
  ) as JWK;
}

function issuerMatches(issuer: string, sourceUrl: string): boolean {
  const source = new URL(sourceUrl);
  if (issuer === source.host || issuer === source.hostname) return true;
  try {
    return new URL(issuer).origin === source.origin;
  } catch {
    return false;
  }
}

export async function verifyRevocationList(
  body: Uint8Array | string,
  opts: VerifyListOptions,
): Promise<RevocationSnapshot> {
  const text = (typeof body === 'string' ? body : Buffer.from(body).toString('utf8')).trim();
  let signer: ResolvedKey | null = null;
  let signerKid = '';
  const getKey = async (header: { kid?: string; alg?: string; typ?: string }) => {
    if (header.typ !== revocationTyp(opts.profile)) {
      throw new RevocationListError('typ', `typ must be ${revocationTyp(opts.profile)}`);
    }
    if (typeof header.kid !== 'string' || typeof header.alg !== 'string') {
      throw new RevocationListError('malformed', 'protected header needs kid and alg');
    }
    signer = await opts.keyFor(header.kid);
    if (!signer || (opts.senderId !== undefined && signer.senderId !== opts.senderId)) {
      throw new RevocationListError('key', `kid "${header.kid}" is not a key of this sender`);
    }
    signerKid = header.kid;
    return importJWK(importable(signer.jwk), header.alg);
  };
  let payloadBytes: Uint8Array;
  try {
    if (text.startsWith('{')) {
      const jws = parseStrictJson(text) as FlattenedJWSInput;
      if (typeof jws !== 'object' || jws === null || typeof jws.protected !== 'string') {
        throw new RevocationListError('malformed', 'flattened JWS needs a protected header');
      }
      ({ payload: payloadBytes } = await flattenedVerify(jws, getKey, { algorithms: ALGORITHMS }));
    } else {
      ({ payload: payloadBytes } = await compactVerify(text, getKey, { algorithms: ALGORITHMS }));
    }
  } catch (err) {
    if (err instanceof RevocationListError) throw err;
    if (err instanceof JsonParseError) {
      throw new RevocationListError('malformed', `not JSON: ${err.code}`, { cause: err });
    }
    const code = (err as { code?: string }).code;
    const problem = code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' ? 'signature' : 'malformed';
    throw new RevocationListError(problem, (err as Error).message, { cause: err });
  }
  let value: unknown;
  try {
    value = parseStrictJson(payloadBytes);
  } catch (err) {
    throw new RevocationListError('malformed', `payload is not strict JSON`, { cause: err });
  }
  const parsed = payloadSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new RevocationListError('malformed', `payload ${issue.path.join('.')}: ${issue.message}`);
  }
  const p = parsed.data;
  if (!issuerMatches(p.issuer, opts.sourceUrl)) {
    throw new RevocationListError('issuer', `issuer ${p.issuer} does not govern ${opts.sourceUrl}`);
  }
  const updated = Date.parse(p.updated) / 1000;
  const nextUpdate = Date.parse(p.next_update) / 1000;
  if (nextUpdate <= updated) throw new RevocationListError('window', 'next_update <= updated');
  if (nextUpdate - updated > MAX_LIST_LIFETIME_SECONDS) {
    throw new RevocationListError('window', 'next_update is more than 7 days after updated');
  }
  const by = signer as ResolvedKey | null;
  return {
    issuer: p.issuer,
    updated,
    nextUpdate,
    revokedKids: new Set(p.revoked_kids),
    revokedJtis: new Set(p.revoked_jtis),
    signedBy: { kid: signerKid, senderId: by?.senderId ?? '' },
  };
}
