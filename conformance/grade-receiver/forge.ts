/**
 * A signer with knobs: it signs like `shared/signing/sign.ts`, but each part of the
 * signature can be bent on purpose, so a negative vector is rebuilt as a fresh, valid
 * signature by the tester's key with exactly the vector's defect applied (wrong tag,
 * expired window, a missing component or parameter, a digest over other bytes...).
 */
import { randomBytes } from 'node:crypto';
import { serializeString } from 'structured-headers';
import type { BrandProfile } from '../../shared/brand.js';
import { canonicalizeTargetUri } from '../../shared/http/target-uri.js';
import { signBytes } from '../../shared/signing/algorithms.js';
import { encodeWebhookBinary } from '../../shared/signing/base64.js';
import { contentDigestHeader } from '../../shared/signing/content-digest.js';
import type { SigningKey } from '../../shared/signing/keys.js';
import { buildSignatureBase, WEBHOOK_COMPONENTS } from '../../shared/signing/signature-base.js';

export interface ForgeOptions {
  key: SigningKey;
  profile: BrandProfile;
  /** HTTP method; `@method` covers it. */
  method?: string;
  /** The URL signed as `@target-uri` (and `@authority`). */
  url: string;
  body: Uint8Array;
  /** Unix seconds. */
  now: number;
  contentType?: string;
  // The knobs. `null` omits a parameter; undefined keeps the valid value.
  tag?: string;
  alg?: string;
  keyid?: string;
  created?: number | null;
  expires?: number | null;
  nonce?: string | null;
  components?: readonly string[];
  /** Content-Digest computed over these bytes instead of the body. */
  digestOver?: Uint8Array;
  /** Leave the Content-Digest header out of the request. */
  omitContentDigest?: boolean;
  /** A second signature under another label (relays append; receivers must use `sig1`). */
  extraLabel?: { label: string; tag: string };
}

export interface ForgedSignature {
  headers: Record<string, string>;
  /** The signature base that was signed. */
  base: string;
}

export function freshNonce(): string {
  return randomBytes(16).toString('base64url');
}

function params(o: {
  components: readonly string[];
  created: number | null;
  expires: number | null;
  nonce: string | null;
  keyid: string;
  alg: string;
  tag: string;
}): string {
  let out = `(${o.components.map((c) => serializeString(c)).join(' ')})`;
  if (o.created !== null) out += `;created=${o.created}`;
  if (o.expires !== null) out += `;expires=${o.expires}`;
  if (o.nonce !== null) out += `;nonce=${serializeString(o.nonce)}`;
  out += `;keyid=${serializeString(o.keyid)};alg=${serializeString(o.alg)}`;
  out += `;tag=${serializeString(o.tag)}`;
  return out;
}

function signOne(
  o: ForgeOptions,
  contentDigest: string,
  tag: string,
): { params: string; signature: string; base: string } {
  const target = canonicalizeTargetUri(o.url, { rejectRawNonAscii: false });
  const components = o.components ?? WEBHOOK_COMPONENTS;
  const created = o.created === undefined ? o.now : o.created;
  const expires = o.expires === undefined ? (created ?? o.now) + 300 : o.expires;
  const p = params({
    components,
    created,
    expires,
    nonce: o.nonce === undefined ? freshNonce() : o.nonce,
    keyid: o.keyid ?? o.key.kid,
    alg: o.alg ?? o.key.alg,
    tag,
  });
  const values: Record<string, string> = {
    '@method': (o.method ?? 'POST').toUpperCase(),
    '@target-uri': target.targetUri,
    '@authority': target.authority,
    'content-type': o.contentType ?? 'application/json',
    'content-digest': contentDigest,
  };
  const base = buildSignatureBase(
    components.map((c) => [c, values[c] ?? ''] as const),
    p,
  );
  const signature = encodeWebhookBinary(signBytes(o.key.alg, o.key.privateKey, Buffer.from(base)));
  return { params: p, signature, base };
}

/** Signs the request with the knobs applied; returns the headers to send. */
export function forgeSignature(o: ForgeOptions): ForgedSignature {
  const contentDigest = contentDigestHeader(o.digestOver ?? o.body);
  const main = signOne(o, contentDigest, o.tag ?? o.profile.webhookTag);
  let input = `sig1=${main.params}`;
  let signature = `sig1=:${main.signature}:`;
  if (o.extraLabel) {
    const extra = signOne({ ...o, nonce: undefined }, contentDigest, o.extraLabel.tag);
    input += `, ${o.extraLabel.label}=${extra.params}`;
    signature += `, ${o.extraLabel.label}=:${extra.signature}:`;
  }
  const headers: Record<string, string> = {
    'content-type': o.contentType ?? 'application/json',
    'signature-input': input,
    signature,
  };
  if (!o.omitContentDigest) headers['content-digest'] = contentDigest;
  return { headers, base: main.base };
}

/** The sig1 token of a Signature header with its first byte flipped: still well-formed. */
export function corruptSignature(header: string): string {
  return header.replace(/sig1=:([A-Za-z0-9_-]+):/, (_, token: string) => {
    const bytes = Buffer.from(token, 'base64url');
    bytes[0] = (bytes[0] ?? 0) ^ 0xff;
    return `sig1=:${bytes.toString('base64url')}:`;
  });
}

/**
 * The sig1 token re-spelled with both base64 alphabets at once (a `+` from the standard
 * alphabet beside a `-` or `_` from the URL-safe one): the decoder must refuse it.
 */
export function mixAlphabets(header: string): string {
  return header.replace(/sig1=:([A-Za-z0-9_-]+):/, (_, token: string) => {
    let t = token;
    if (!/[-_]/.test(t)) t = `-${t.slice(1)}`;
    const i = t.search(/[A-Za-z0-9]/);
    t = `${t.slice(0, i)}+${t.slice(i + 1)}`;
    return `sig1=:${t}:`;
  });
}
