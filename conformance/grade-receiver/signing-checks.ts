/**
 * Every signing vector replayed against the receiver under test, black-box: the vector's
 * request cannot be sent as-is (it is signed for buyer.example.com, at a fixed time, by
 * keys the receiver does not trust), so each is rebuilt for the target URL, now, with a
 * key the receiver trusts, keeping exactly what the vector tests. Positives must be
 * accepted (2xx); negatives answered 401 with the vector's code in `WWW-Authenticate`.
 */
import { randomBytes } from 'node:crypto';
import { CheckRecorder, type CheckResult } from '../report/report.js';
import {
  generateSigningKey,
  importSigningKey,
  type SigningKey,
} from '../../shared/signing/keys.js';
import type { SignatureAlg } from '../../shared/signing/algorithms.js';
import { WEBHOOK_COMPONENTS } from '../../shared/signing/signature-base.js';
import { challengeCode, describe, is2xx, type ReceiverRun } from './context.js';
import { corruptSignature, mixAlphabets, type ForgeOptions } from './forge.js';
import type { OutgoingRequest } from './http-client.js';
import { bytesOf, taskEnvelope } from './payloads.js';
import { loadSigningVectors, loadVectorKeys, vectorsDir, type SigningVector } from './vectors.js';

type Knobs = Partial<ForgeOptions> & { url?: string; key?: SigningKey };

interface Plan {
  /** Requests to send in order; the last one is graded (016 sends two). */
  knobs: Knobs;
  body?: Uint8Array;
  /** Header edits after signing (malformed input, corrupted token...). */
  edit?: (h: Record<string, string>) => void;
  deliverTwice?: boolean;
  note?: string;
}

type Planned = Plan | { notApplicable: string };

const VECTOR_ALG = /;alg="([^"]+)"/;

function vectorAlg(v: SigningVector): SignatureAlg {
  const m = VECTOR_ALG.exec(v.request.headers['Signature-Input'] ?? '');
  return m?.[1] === 'ecdsa-p256-sha256' ? 'ecdsa-p256-sha256' : 'ed25519';
}

function withPath(target: string, suffix: string): string {
  const u = new URL(target);
  u.pathname = `${u.pathname.replace(/\/$/, '')}/${suffix}`;
  // URL would re-encode; keep the suffix's own spelling (lowercase hex) by splicing.
  return `${u.origin}${u.pathname.replace(encodeURI(suffix), suffix)}${u.search}`;
}

function withQuery(target: string, query: string): string {
  const hash = target.indexOf('#');
  const base = hash === -1 ? target : target.slice(0, hash);
  return `${base}${base.includes('?') ? '&' : '?'}${query}`;
}

/** The vector key's private half, when `--trust-vector-keys` says the receiver trusts them. */
async function vectorKeys(run: ReceiverRun, dir: string): Promise<Map<string, SigningKey>> {
  const out = new Map<string, SigningKey>();
  if (!run.o.trustVectorKeys) return out;
  for (const k of loadVectorKeys(dir)) {
    const { _private_d_for_test_only: d, ...pub } = k;
    if (typeof d !== 'string' || typeof pub.kid !== 'string') continue;
    out.set(
      pub.kid,
      await importSigningKey({ kty: pub.kty, crv: pub.crv, x: pub.x, y: pub.y, d, kid: pub.kid }),
    );
  }
  return out;
}

function positivePlan(v: SigningVector, run: ReceiverRun, vkeys: Map<string, SigningKey>): Planned {
  const alg = vectorAlg(v);
  const own = vkeys.get(v.jwks_ref[0] ?? '');
  const key = own ?? run.key(alg);
  if (!key) {
    const algName = alg === 'ed25519' ? 'Ed25519' : 'ES256';
    return {
      notApplicable: `needs an ${algName} key the receiver trusts (--key with an ${algName} JWK, or --trust-vector-keys)`,
    };
  }
  const signer = own ? `vector key ${key.kid}` : `tester key ${key.kid}`;
  switch (v.number) {
    case '001':
    case '002':
      return { knobs: { key }, note: `signed by ${signer}` };
    case '003':
      return {
        knobs: { key, extraLabel: { label: 'relay', tag: run.profile.requestTag } },
        note: `sig1 by ${signer} plus a relay label with the request tag`,
      };
    case '004': {
      const u = new URL(run.o.target);
      if (u.port !== '') {
        return { notApplicable: `the target listens on a non-default port (${u.port})` };
      }
      const port = u.protocol === 'https:' ? 443 : 80;
      return {
        knobs: { key, url: run.o.target },
        edit: (h) => {
          h.host = `${u.host}:${port}`;
        },
        note: `Host sent as ${u.host}:${port}`,
      };
    }
    case '005':
      return {
        knobs: { key, url: withPath(run.o.target, 'op_%e2%98%83') },
        note: 'lowercase percent-encoding in the path (receivers routing on the exact path answer 404: not applicable)',
      };
    case '006':
      return {
        knobs: { key, url: withQuery(run.o.target, 'b=2&a=1&c=3') },
        note: 'query kept byte for byte',
      };
    case '007': {
      const body = taskEnvelope();
      delete body.idempotency_key;
      return {
        knobs: { key },
        body: bytesOf(body),
        note: 'signature valid, body without idempotency_key: rejected by the payload layer',
      };
    }
    case '008':
      return {
        knobs: { key },
        note: own
          ? `signed by the request-signing vector key ${key.kid}`
          : `signed by tester key ${key.kid} (published with request-signing purpose)`,
      };
    default:
      return { notApplicable: `no black-box recipe for positive vector ${v.slug}` };
  }
}

function harnessPlan(v: SigningVector, run: ReceiverRun): Planned {
  if (!run.o.harnessUrl) {
    return {
      notApplicable: `needs receiver-side state (${Object.keys(v.test_harness_state ?? {}).join(', ') || 'harness'}); no --harness-url`,
    };
  }
  return { knobs: {}, note: 'state installed through the harness hook' };
}

async function negativePlan(
  v: SigningVector,
  run: ReceiverRun,
  vkeys: Map<string, SigningKey>,
): Promise<Planned> {
  if (v.number === '017' || v.number === '018' || v.number === '019') return harnessPlan(v, run);
  return (
    negativeParamsPlan(v, run) ??
    negativeWirePlan(v) ??
    (await negativeKeyPlan(v, run, vkeys)) ?? {
      notApplicable: `no black-box recipe for negative vector ${v.slug}`,
    }
  );
}

/** Negative vectors on the signature's parameters and covered set: the signer's knobs. */
function negativeParamsPlan(v: SigningVector, run: ReceiverRun): Planned | null {
  const now = run.now();
  switch (v.number) {
    case '001':
      return { knobs: { tag: run.profile.requestTag }, note: 'tag is the request-signing tag' };
    case '002':
      return { knobs: { created: now - 400, expires: now - 100 }, note: 'expired 100 s ago' };
    case '003':
      return { knobs: { created: now, expires: now + 600 }, note: 'window of 600 s' };
    case '004':
      return { knobs: { alg: 'rsa-pss-sha512' }, note: 'alg rsa-pss-sha512' };
    case '005':
      return {
        knobs: { components: WEBHOOK_COMPONENTS.filter((c) => c !== '@authority') },
        note: '@authority not covered',
      };
    case '006':
      return {
        knobs: {
          components: WEBHOOK_COMPONENTS.filter((c) => c !== 'content-digest'),
          omitContentDigest: true,
        },
        note: 'content-digest neither covered nor sent',
      };
    case '012':
      return { knobs: { expires: null }, note: 'expires parameter left out' };
    case '013':
      return { knobs: { created: now, expires: now }, note: 'expires equal to created' };
    case '014':
      return { knobs: { nonce: null }, note: 'nonce parameter left out' };
    default:
      return null;
  }
}

/** Negative vectors on the bytes on the wire: the digest, the headers, a second delivery. */
function negativeWirePlan(v: SigningVector): Planned | null {
  switch (v.number) {
    case '009':
      return {
        knobs: { digestOver: Buffer.from('{"not":"the body"}') },
        note: 'Content-Digest of other bytes, signature valid over it',
      };
    case '010':
      return {
        knobs: {},
        edit: (h) => {
          h['signature-input'] = 'sig1=this-is-not-valid-structured-fields';
        },
        note: 'Signature-Input not a structured field',
      };
    case '011':
      return {
        knobs: {},
        edit: (h) => {
          delete h['signature-input'];
        },
        note: 'Signature without Signature-Input',
      };
    case '015':
      return {
        knobs: {},
        edit: (h) => {
          h.signature = corruptSignature(h.signature!);
        },
        note: 'first signature byte flipped',
      };
    case '016':
      return {
        knobs: {},
        deliverTwice: true,
        note: 'the same signed request delivered twice (black-box deliver_twice)',
      };
    case '021':
      return {
        knobs: {},
        edit: (h) => {
          h.signature = mixAlphabets(h.signature!);
        },
        note: 'Signature token mixes base64 and base64url alphabets',
      };
    default:
      return null;
  }
}

/** Negative vectors on the key: unknown, of the wrong purpose, or without "verify". */
async function negativeKeyPlan(
  v: SigningVector,
  run: ReceiverRun,
  vkeys: Map<string, SigningKey>,
): Promise<Planned | null> {
  switch (v.number) {
    case '007': {
      // A kid nobody published: a throwaway key, so the receiver cannot hold it.
      const kid = `conformance-unknown-${randomBytes(6).toString('hex')}`;
      const { key } = await generateSigningKey('ed25519', kid);
      return { knobs: { key }, note: `keyid ${kid} (fresh, unpublished)` };
    }
    case '008': {
      const key = run.o.wrongPurposeKey ?? vkeys.get('test-response-purpose-2026');
      if (!key) {
        return {
          notApplicable:
            'needs a key the receiver resolves with a non-webhook purpose (--wrong-purpose-key, or --trust-vector-keys)',
        };
      }
      return { knobs: { key }, note: `signed by ${key.kid} (response-signing purpose)` };
    }
    case '020': {
      const key = run.o.signOnlyKey;
      if (!key) {
        return {
          notApplicable:
            'needs a key the receiver resolves with key_ops ["sign"] (--sign-only-key); the vector overrides its JWK, which a black-box receiver cannot take',
        };
      }
      return { knobs: { key }, note: `signed by ${key.kid} (published without "verify")` };
    }
    default:
      return null;
  }
}

/** Installs a vector's receiver-side state through the harness hook, kid rewritten to ours. */
async function installHarnessState(
  run: ReceiverRun,
  v: SigningVector,
  kid: string,
  rec: CheckRecorder,
): Promise<string | null> {
  const original = JSON.stringify(v.test_harness_state ?? {});
  const state = JSON.parse(original.replaceAll(`"${v.jwks_ref[0]}"`, `"${kid}"`)) as unknown;
  const body = JSON.stringify({ vector: v.slug, keyid: kid, state });
  const a = await run.deliver(
    {
      method: 'POST',
      url: run.o.harnessUrl!,
      headers: { 'content-type': 'application/json' },
      body,
    },
    'harness',
  );
  rec.add(a.exchange);
  return is2xx(a.status) ? null : `harness hook refused the state (${describe(a)})`;
}

async function resetHarness(run: ReceiverRun): Promise<void> {
  await run.deliver({
    method: 'POST',
    url: run.o.harnessUrl!,
    headers: { 'content-type': 'application/json' },
    body: '{"reset":true}',
  });
}

async function gradeVector(
  v: SigningVector,
  run: ReceiverRun,
  vkeys: Map<string, SigningKey>,
): Promise<CheckResult> {
  const code = v.expected_outcome.error_code;
  const expected = v.expected_outcome.success
    ? v.number === '007'
      ? 'signature accepted (no 401), then the body rejected by the payload layer (non-2xx)'
      : '2xx'
    : `401 with WWW-Authenticate: Signature error="${code}"`;
  const rec = new CheckRecorder(`vector.${v.kind}.${v.slug}`, 'signing', v.name, expected);
  const plan =
    v.kind === 'positive' ? positivePlan(v, run, vkeys) : await negativePlan(v, run, vkeys);
  if ('notApplicable' in plan) return rec.notApplicable(plan.notApplicable);

  const harness = ['017', '018', '019'].includes(v.number) && v.kind === 'negative';
  if (harness) {
    const refused = await installHarnessState(run, v, (plan.knobs.key ?? run.primaryKey).kid, rec);
    if (refused) return rec.notApplicable(refused);
  }
  try {
    const body = plan.body ?? bytesOf(taskEnvelope());
    const req: OutgoingRequest = run.signed(body, plan.knobs);
    plan.edit?.(req.headers);
    const note = plan.note ? `${plan.note}; ` : '';
    if (plan.deliverTwice) {
      const first = await run.deliver(req, 'first');
      rec.add(first.exchange);
      if (!is2xx(first.status)) {
        return rec.fail(`${note}the first delivery must be accepted, ${describe(first)}`);
      }
    }
    const a = await run.deliver(req, plan.deliverTwice ? 'replay' : undefined);
    rec.add(a.exchange);
    if (v.kind === 'positive') {
      if (v.number === '005' && a.status === 404) {
        return rec.notApplicable(
          `${note}the receiver does not route sub-paths of the target (404)`,
        );
      }
      if (v.number === '007') {
        if (a.status === 401) return rec.fail(`${note}signature layer rejected it: ${describe(a)}`);
        if (is2xx(a.status)) return rec.fail(`${note}accepted a body without idempotency_key`);
        if (a.status === undefined) return rec.fail(`${note}${describe(a)}`);
        return rec.pass(`${note}${describe(a)}`);
      }
      return is2xx(a.status)
        ? rec.pass(`${note}${describe(a)}`)
        : rec.fail(`${note}${describe(a)}`);
    }
    const got = challengeCode(a.headers);
    if (a.status === 401 && got === code) return rec.pass(`${note}${describe(a)}`);
    if (a.status === 401 && got === null && a.headers['www-authenticate']) {
      return rec.fail(
        `${note}WWW-Authenticate is not exactly Signature error="${code}": ${describe(a)}`,
      );
    }
    return rec.fail(`${note}${describe(a)}`, got ?? undefined);
  } finally {
    if (harness) await resetHarness(run);
  }
}

export async function signingVectorChecks(run: ReceiverRun): Promise<CheckResult[]> {
  const dir = vectorsDir(run.o.vectorsDir);
  const vectors = loadSigningVectors(dir);
  const vkeys = await vectorKeys(run, dir);
  const out: CheckResult[] = [];
  for (const v of vectors) out.push(await gradeVector(v, run, vkeys));
  return out;
}
