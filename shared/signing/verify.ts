/**
 * The webhook verifier: steps 1-13 of the checklist in supplement §1, in order, stopping at
 * the first failure with its exact code. Step 14 (duplicate keys in the body) belongs to the
 * caller, who parses the body after this returns.
 *
 * Two phases, so a server need not hold a body before it knows who sent it: steps 1-10 read
 * only the method, URL and headers (the signature covers the `Content-Digest` header, not the
 * body), steps 11-13 need the body. `verifySignatureHeaders` then `verifySignedBody` is the
 * same checklist in the same order as `verifyWebhookSignature`.
 *
 * Key lookup, revocation and the replay cache are pluggable (see the interfaces below): the
 * receiver supplies durable, shared implementations; the conformance vectors install theirs.
 */
import { serializeInnerList, Token, type InnerList, type Item } from 'structured-headers';
import type { BrandProfile } from '../brand.js';
import { WebhookVerificationError, type WebhookErrorCode } from '../errors/webhook-codes.js';
import {
  canonicalizeTargetUri,
  TargetUriError,
  type CanonicalTargetUri,
} from '../http/target-uri.js';
import {
  isSignatureAlg,
  verifyBytes,
  verifyBytesOffloaded,
  type SignatureAlg,
} from './algorithms.js';
import { canonicalAuthority, canonicalTarget } from './target-cache.js';
import type { BinaryProfile } from './base64.js';
import { contentDigestMatches, parseContentDigest } from './content-digest.js';
import { cachedVerifyKey, importVerifyKey, keyPurposeProblem, type JWK } from './keys.js';
import { buildSignatureBase, WEBHOOK_COMPONENTS } from './signature-base.js';
import {
  fieldValue,
  parseBytesMember,
  parseSignatureDictionary,
  StructuredFieldError,
  type MemberShape,
  type ParsedField,
} from './structured.js';

export interface ResolvedKey {
  /** Public JWK, including the `<brand>_use` member. */
  jwk: JWK;
  /** The sender (agent) whose key set held the kid: the authenticated identity. */
  senderId: string;
}

export interface KeyResolver {
  /**
   * Resolves a kid, refetching once on a miss as the resolver's policy allows; null if unknown.
   * `created` (Unix seconds) is the signature's, for pins that are revoked from a time on.
   */
  resolve(keyid: string, context?: { created: number }): Promise<ResolvedKey | null>;
}

export interface RevocationCheck {
  status(keyid: string, nowSeconds: number): 'ok' | 'revoked' | 'stale';
}

export interface ReplayStore {
  /** Step 9a, read-only: is this keyid's replay cache at its cap? */
  atCap(keyid: string): Promise<boolean>;
  /** Step 12: has this (keyid, nonce) been seen within its TTL? */
  seen(keyid: string, nonce: string): Promise<boolean>;
  /** Step 13: atomic insert with the cap check. */
  insert(
    keyid: string,
    nonce: string,
    ttlSeconds: number,
  ): Promise<'inserted' | 'replayed' | 'cap'>;
}

export interface VerifiedSignature {
  keyid: string;
  nonce: string;
  alg: SignatureAlg;
  created: number;
  expires: number;
  senderId: string;
  label: 'sig1';
}

export interface IncomingRequest {
  method: string;
  /** The full URL as received: scheme://host[:port]/path?query. */
  url: string;
  /** Lower-case header names. */
  headers: Record<string, string | string[] | undefined>;
  body: Uint8Array;
}

/** A request without its body yet: what steps 1-10 look at. */
export type IncomingHead = Omit<IncomingRequest, 'body'>;

/** Steps 1-10 passed: the signature over the covered components (digest header included) holds. */
export interface VerifiedHead extends VerifiedSignature {
  /** The `Content-Digest` members, checked against the body at step 11. */
  digests: Map<string, Buffer> | undefined;
  /** The clock of the verification (Unix seconds), reused for the nonce TTL at step 13. */
  now: number;
}

export interface VerifyOptions {
  profile: BrandProfile;
  keys: KeyResolver;
  revocation?: RevocationCheck;
  replay?: ReplayStore;
  /** Unix seconds; defaults to the clock. */
  now?: number;
  /** Webhook v1 keeps the lenient base64url profile through 3.x. */
  binary?: BinaryProfile;
  /** Clock skew allowed on `created` and `expires` (seconds). */
  skewSeconds?: number;
  /** Largest allowed expires − created (seconds). */
  maxWindowSeconds?: number;
  /**
   * Run the signature check on the thread pool (servers under concurrent load); the
   * synchronous check is faster for one request at a time.
   */
  offloadCrypto?: boolean;
}

const LABEL = 'sig1';
const REQUIRED_PARAMS = ['created', 'expires', 'nonce', 'keyid', 'alg', 'tag'] as const;
const NONCE = /^[A-Za-z0-9_-]{22,}$/;
const AUTHORITY_HEADERS = [':authority', 'host'] as const;

function fail(code: WebhookErrorCode, step: number | string, message: string): never {
  throw new WebhookVerificationError(code, step, message);
}

function single(headers: IncomingRequest['headers'], name: string): string | undefined {
  return fieldValue(headers[name]);
}

export async function verifyWebhookSignature(
  req: IncomingRequest,
  opts: VerifyOptions,
): Promise<VerifiedSignature> {
  const head = await verifySignatureHeaders(req, opts);
  return verifySignedBody(head, req.body, opts);
}

/** Step 1's outcome: the sig1 member of both headers, its covered components and the digests. */
interface Sig1 {
  /** The Signature-Input member: the covered components and their parameters. */
  member: InnerList;
  /** How that member arrived on the wire (parameter keys in order, its canonical text). */
  shape: MemberShape;
  signature: Buffer;
  components: string[];
  digests: Map<string, Buffer> | undefined;
}

/** Steps 2-6 passed: the signature parameters, typed. */
interface Sig1Params {
  created: number;
  expires: number;
  nonce: string;
  keyid: string;
  alg: SignatureAlg;
}

/** Steps 1-10: everything that does not need the body, in the checklist's order. */
export async function verifySignatureHeaders(
  req: IncomingHead,
  opts: VerifyOptions,
): Promise<VerifiedHead> {
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  const sig1 = parseSig1(req, opts.binary ?? 'webhook-v1');
  const p = checkParams(sig1, opts, now);
  const resolved = await resolveSender(p, opts, now);
  await checkSignature(req, sig1, p, resolved.jwk, opts);
  return {
    keyid: p.keyid,
    nonce: p.nonce,
    alg: p.alg,
    created: p.created,
    expires: p.expires,
    senderId: resolved.senderId,
    label: LABEL,
    digests: sig1.digests,
    now,
  };
}

/** Step 1: parse both headers; process only the label named sig1. */
function parseSig1(req: IncomingHead, binary: BinaryProfile): Sig1 {
  const inputHeader = single(req.headers, 'signature-input');
  const signatureHeader = single(req.headers, 'signature');
  if (inputHeader === undefined || signatureHeader === undefined) {
    fail(
      'webhook_signature_header_malformed',
      1,
      'Signature and Signature-Input must both be present',
    );
  }
  let input, signatures, digests: Map<string, Buffer> | undefined;
  try {
    input = parseSignatureDictionary(inputHeader, binary);
    // The one-member Signature signers send, without a dictionary; any other shape in full.
    signatures = parseBytesMember(signatureHeader, binary) ?? {
      key: LABEL,
      bytes: signatureBytes(parseSignatureDictionary(signatureHeader, binary)),
    };
    const cd = single(req.headers, 'content-digest');
    if (cd !== undefined) digests = parseContentDigest(cd, binary);
  } catch (err) {
    // Only parse errors are the sender's fault; anything else is a bug and must surface.
    if (!(err instanceof StructuredFieldError)) throw err;
    fail('webhook_signature_header_malformed', 1, `signature headers: ${err.message}`);
  }
  const ct = req.headers['content-type'];
  if (Array.isArray(ct) && ct.length > 1) {
    fail('webhook_signature_header_malformed', 1, 'Content-Type has several values');
  }
  const member = input.dictionary.get(LABEL);
  if (!member || !Array.isArray(member[0])) {
    fail(
      'webhook_signature_header_malformed',
      1,
      'Signature-Input has no inner list labelled sig1',
    );
  }
  if (signatures.key !== LABEL || signatures.bytes === undefined) {
    fail('webhook_signature_header_malformed', 1, 'Signature has no byte sequence labelled sig1');
  }
  const components: string[] = [];
  for (const [value, itemParams] of member[0] as Item[]) {
    if (typeof value !== 'string' || itemParams.size > 0) {
      fail('webhook_signature_header_malformed', 1, 'covered components must be plain strings');
    }
    // A handful of components: a scan is cheaper than a Set per request.
    if (components.includes(value)) {
      fail('webhook_signature_header_malformed', 1, 'a component is covered twice');
    }
    components.push(value);
  }
  return {
    member: member as InnerList,
    shape: input.members.length === 1 ? input.members[0]! : input.members.find(isSig1)!,
    signature: signatures.bytes,
    components,
    digests,
  };
}

function isSig1(m: MemberShape): boolean {
  return m.key === LABEL;
}

/** The sig1 member of a Signature dictionary when it is a byte sequence, else undefined. */
function signatureBytes(field: ParsedField): Buffer | undefined {
  const value = field.dictionary.get(LABEL)?.[0];
  return value instanceof ArrayBuffer ? Buffer.from(value) : undefined;
}

/** Steps 2-6: the parameters' presence and types, then tag, alg, window and covered set. */
function checkParams(sig1: Sig1, opts: VerifyOptions, now: number): Sig1Params {
  // Step 2: all six parameters present, tag exactly once, each of its type.
  const params = sig1.member[1];
  const { paramKeys } = sig1.shape;
  for (const p of REQUIRED_PARAMS) {
    if (!params.has(p)) fail('webhook_signature_params_incomplete', 2, `parameter ${p} is missing`);
  }
  // params holds each key once, so fewer keys than paramKeys means one was repeated.
  if (params.size !== paramKeys.length) {
    if (paramKeys.indexOf('tag') !== paramKeys.lastIndexOf('tag')) {
      fail('webhook_signature_params_incomplete', 2, 'tag must appear exactly once');
    }
    fail('webhook_signature_header_malformed', 2, 'a signature parameter appears twice');
  }
  const created = params.get('created');
  const expires = params.get('expires');
  const nonce = params.get('nonce');
  const keyid = params.get('keyid');
  const alg = params.get('alg');
  const tag = params.get('tag');
  if (!Number.isInteger(created) || !Number.isInteger(expires)) {
    fail('webhook_signature_header_malformed', 2, 'created and expires must be integers');
  }
  checkStringParam('nonce', nonce);
  checkStringParam('keyid', keyid);
  checkStringParam('alg', alg);
  checkStringParam('tag', tag);
  if (!NONCE.test(nonce)) {
    fail(
      'webhook_signature_header_malformed',
      2,
      'nonce must be unpadded base64url of at least 16 bytes',
    );
  }
  const c = created as number;
  const e = expires as number;

  // Step 3: the tag, byte for byte.
  if (tag !== opts.profile.webhookTag)
    fail('webhook_signature_tag_invalid', 3, 'tag is not the webhook tag');

  // Step 4: the algorithm allow-list, enforced here, not by library defaults.
  if (!isSignatureAlg(alg))
    fail('webhook_signature_alg_not_allowed', 4, `alg ${String(alg)} is not allowed`);

  // Step 5: the validity window.
  const skew = opts.skewSeconds ?? 60;
  if (e <= c || c > now + skew || e < now - skew || e - c > (opts.maxWindowSeconds ?? 300)) {
    fail('webhook_signature_window_invalid', 5, 'outside the validity window');
  }

  // Step 6: the fixed covered set.
  for (const required of WEBHOOK_COMPONENTS) {
    if (!sig1.components.includes(required)) {
      fail('webhook_signature_components_incomplete', 6, `${required} is not covered`);
    }
  }
  return { created: c, expires: e, nonce, keyid, alg };
}

/** Step 2, per string parameter: a quoted string (a token is a common sender slip). */
function checkStringParam(name: string, v: unknown): asserts v is string {
  if (typeof v !== 'string') {
    const kind = v instanceof Token ? 'an unquoted token' : 'not a string';
    fail('webhook_signature_header_malformed', 2, `${name} is ${kind}`);
  }
}

/** Steps 7-9a: the key resolves to a sender, fits its purpose, is not revoked or capped. */
async function resolveSender(
  p: Sig1Params,
  opts: VerifyOptions,
  now: number,
): Promise<ResolvedKey> {
  // Step 7: resolve the key to a sender.
  const resolved = await opts.keys.resolve(p.keyid, { created: p.created });
  if (!resolved) fail('webhook_signature_key_unknown', 7, 'keyid is not in the sender key set');

  // Step 8: the key's purpose and shape.
  const problem = keyPurposeProblem(resolved.jwk, p.alg, opts.profile);
  if (problem) fail('webhook_signature_key_purpose_invalid', 8, problem);

  // Step 9: revocation; 9a: the per-keyid replay cap (read-only, before crypto).
  const revocation = opts.revocation?.status(p.keyid, now) ?? 'ok';
  if (revocation === 'revoked') fail('webhook_signature_key_revoked', 9, 'key is revoked');
  if (revocation === 'stale')
    fail('webhook_signature_revocation_stale', 9, 'revocation list is stale');
  if (opts.replay && (await opts.replay.atCap(p.keyid))) {
    fail('webhook_signature_rate_abuse', '9a', 'replay cache for this keyid is at its cap');
  }
  return resolved;
}

/** Step 10: rebuild the base from the request as received and check the signature. */
async function checkSignature(
  req: IncomingHead,
  sig1: Sig1,
  p: Sig1Params,
  jwk: JWK,
  opts: VerifyOptions,
): Promise<void> {
  const target = requestTarget(req);
  const lines = coveredLines(req, sig1.components, target);
  const base = buildSignatureBase(
    lines,
    sig1.shape.canonicalText ?? serializeInnerList(sig1.member),
  );
  // Step 8 checked kty and crv against alg, so the cached key (by key material) fits alg.
  const key = cachedVerifyKey(jwk) ?? (await importVerifyKey(jwk, p.alg));
  const valid = opts.offloadCrypto
    ? await verifyBytesOffloaded(p.alg, key, Buffer.from(base), sig1.signature)
    : verifyBytes(p.alg, key, Buffer.from(base), sig1.signature);
  if (!valid) {
    fail('webhook_signature_invalid', 10, 'signature does not verify');
  }
}

/** Step 10: the canonical target URI, and each authority header present agrees with it. */
function requestTarget(req: IncomingHead): CanonicalTargetUri {
  let target;
  try {
    target = canonicalTarget(req.url, true);
  } catch (err) {
    if (!(err instanceof TargetUriError)) throw err;
    fail('webhook_target_uri_malformed', 10, `target URI: ${err.message}`);
  }
  // @authority comes from HTTP/2 :authority, else the HTTP/1.1 Host as received; each that
  // is present must equal the target URI's authority after canonicalisation.
  for (const name of AUTHORITY_HEADERS) {
    const value = single(req.headers, name);
    if (value === undefined) continue;
    let authority: string;
    try {
      authority = canonicalAuthority(value, target.scheme);
    } catch (err) {
      if (!(err instanceof TargetUriError)) throw err;
      fail('webhook_target_uri_malformed', 10, `${name} is malformed`);
    }
    if (authority !== target.authority) {
      fail('webhook_target_uri_malformed', 10, `${name} does not match the target URI`);
    }
  }
  return target;
}

/** Step 10: each covered component's value as received, in the order covered. */
function coveredLines(
  req: IncomingHead,
  components: string[],
  target: CanonicalTargetUri,
): Array<readonly [string, string]> {
  const lines: Array<readonly [string, string]> = [];
  for (const name of components) {
    let value: string | undefined;
    if (name === '@method') value = req.method;
    else if (name === '@target-uri') value = target.targetUri;
    else if (name === '@authority') value = target.authority;
    else if (name.startsWith('@')) {
      fail('webhook_signature_header_malformed', 10, `derived component ${name} is not supported`);
    } else value = single(req.headers, name)?.trim();
    if (value === undefined)
      fail('webhook_signature_invalid', 10, `covered header ${name} is absent`);
    lines.push([name, value]);
  }
  return lines;
}

/**
 * Steps 11-13 over the body of a request whose head passed `verifySignatureHeaders`. The nonce
 * is inserted only once the digest matched, so a request with a wrong body never burns it.
 */
export async function verifySignedBody(
  head: VerifiedHead,
  body: Uint8Array,
  opts: Pick<VerifyOptions, 'replay'>,
): Promise<VerifiedSignature> {
  const { digests, now } = head;
  // Step 11: the digest of the bytes received.
  if (!digests || !contentDigestMatches(digests, body)) {
    fail('webhook_signature_digest_mismatch', 11, 'Content-Digest does not match the body');
  }

  // Steps 12 and 13: replay check, then the insert (only now, so forgeries never fill the cache).
  if (opts.replay) {
    if (await opts.replay.seen(head.keyid, head.nonce))
      fail('webhook_signature_replayed', 12, 'nonce replayed');
    const ttl = Math.max(head.expires - now, 0) + 60;
    const inserted = await opts.replay.insert(head.keyid, head.nonce, ttl);
    if (inserted === 'replayed') fail('webhook_signature_replayed', 13, 'nonce replayed');
    if (inserted === 'cap') fail('webhook_signature_rate_abuse', 13, 'replay cache at its cap');
  }
  // The verified fields only (an object literal, cheaper than a rest spread per request).
  return {
    keyid: head.keyid,
    nonce: head.nonce,
    alg: head.alg,
    created: head.created,
    expires: head.expires,
    senderId: head.senderId,
    label: head.label,
  };
}

/** The signature base the verifier would rebuild (for tests and the conformance kit's reports). */
export function signatureBaseFor(
  req: IncomingRequest,
  binary: BinaryProfile = 'webhook-v1',
): string {
  const { dictionary } = parseSignatureDictionary(
    single(req.headers, 'signature-input') ?? '',
    binary,
  );
  const member = dictionary.get(LABEL) as InnerList | undefined;
  if (!member) throw new StructuredFieldError('no sig1');
  const target = canonicalizeTargetUri(req.url, { rejectRawNonAscii: true });
  const lines = member[0].map(([name]) => {
    const n = String(name);
    if (n === '@method') return [n, req.method] as const;
    if (n === '@target-uri') return [n, target.targetUri] as const;
    if (n === '@authority') return [n, target.authority] as const;
    return [n, single(req.headers, n)?.trim() ?? ''] as const;
  });
  return buildSignatureBase(lines, serializeInnerList(member));
}
