/**
 * The webhook-signing conformance vectors (brand adcp) through the receiver's own key
 * resolver (JWKS served over real HTTP), PostgreSQL replay store and revocation check:
 * the stateful negatives 016-019 with each vector's `test_harness_state` installed, 016
 * also black-box (delivered twice), and every positive.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { TrustedKeyResolver } from '../../receiver/keys/trusted-key-resolver.js';
import { PolledRevocationCheck } from '../../receiver/revocation/revocation-check.js';
import { PgReplayStore } from '../../receiver/replay/pg-replay-store.js';
import { parseTrust } from '../../receiver/trust/trust-file.js';
import { brandProfile } from '../../shared/brand.js';
import { WebhookVerificationError } from '../../shared/errors/webhook-codes.js';
import type { JWK } from '../../shared/signing/keys.js';
import { verifyWebhookSignature, type IncomingRequest } from '../../shared/signing/verify.js';
import { testDatabase } from '../helpers/db.js';
import { docServer } from './keys/doc-server.js';

// The repository's copy of the shared vectors (conformance-vectors/).
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const VECTORS = resolve(REPO_ROOT, 'conformance-vectors', 'webhook-signing');
const profile = brandProfile('adcp');

interface Vector {
  name: string;
  reference_now: number;
  request: { method: string; url: string; headers: Record<string, string>; body: string };
  jwks_ref: string[];
  jwks_override?: JWK;
  expected_outcome: { success: boolean; error_code?: string };
  test_harness_state?: {
    replay_cache_entries?: Array<{ keyid: string; nonce: string }>;
    revoked_kids?: string[];
    per_keyid_cap_filled_for?: string;
    revocation_list_stale_seconds?: number;
  };
  black_box_behavior?: string;
}

const publicKeys: JWK[] = (
  JSON.parse(readFileSync(join(VECTORS, 'keys.json'), 'utf8')) as { keys: JWK[] }
).keys.map((k) => {
  const { _private_d_for_test_only: _d, $comment: _c, ...pub } = k as Record<string, unknown>;
  return pub as JWK;
});

function load(dir: 'positive' | 'negative'): Array<[string, Vector]> {
  return readdirSync(join(VECTORS, dir))
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => [f, JSON.parse(readFileSync(join(VECTORS, dir, f), 'utf8')) as Vector]);
}

function request(v: Vector): IncomingRequest {
  const headers: Record<string, string> = {};
  for (const [k, val] of Object.entries(v.request.headers)) headers[k.toLowerCase()] = val;
  return {
    method: v.request.method,
    url: v.request.url,
    headers,
    body: Buffer.from(v.request.body, 'utf8'),
  };
}

function keySet(v: Vector): { keys: JWK[] } {
  return {
    keys: v.jwks_ref.map((kid) => {
      if (v.jwks_override && v.jwks_override.kid === kid) return v.jwks_override;
      const k = publicKeys.find((p) => p.kid === kid);
      if (!k) throw new Error(`${v.name}: no key ${kid} in keys.json`);
      return k;
    }),
  };
}

/** The receiver's parts for one vector: fresh replay schema, fresh revocation state. */
async function receiverParts(t: { teardown(fn: () => unknown): void }, v: Vector) {
  const srv = await docServer(t);
  srv.json('/.well-known/jwks.json', keySet(v));
  const trust = parseTrust({
    senders: [{ id: 'vector-seller', jwks_uri: srv.url('/.well-known/jwks.json') }],
  });
  const keys = new TrustedKeyResolver(trust, { allowLoopback: true });
  const { pool, schema } = testDatabase(t, 'vec');
  const replay = new PgReplayStore(pool, { schema });
  await replay.migrate();
  const revocation = new PolledRevocationCheck({ profile, keys });
  return { keys, replay, revocation };
}

async function outcome(
  v: Vector,
  parts: Awaited<ReturnType<typeof receiverParts>>,
): Promise<string> {
  try {
    const verified = await verifyWebhookSignature(request(v), {
      profile,
      keys: parts.keys,
      revocation: parts.revocation,
      replay: parts.replay,
      now: v.reference_now,
    });
    return `ok:${verified.senderId}`;
  } catch (err) {
    if (err instanceof WebhookVerificationError) return err.code;
    throw err;
  }
}

t.test('vectors are where the repository expects them', async (t) => {
  t.equal(load('positive').length, 8);
  t.equal(load('negative').length, 21);
});

for (const [file, v] of load('negative').filter(([f]) => /^01[6-9]-/.test(f))) {
  t.test(`negative ${file} with harness state`, async (t) => {
    const parts = await receiverParts(t, v);
    const state = v.test_harness_state;
    t.ok(state, 'vector carries harness state');
    if (state?.replay_cache_entries) {
      await parts.replay.harnessInstallEntries(state.replay_cache_entries);
    }
    if (state?.revoked_kids) parts.revocation.harnessRevoke(state.revoked_kids);
    if (state?.per_keyid_cap_filled_for) {
      await parts.replay.harnessFillCap(state.per_keyid_cap_filled_for);
    }
    if (state?.revocation_list_stale_seconds !== undefined) {
      parts.revocation.harnessStale(state.revocation_list_stale_seconds, v.reference_now);
    }
    t.equal(await outcome(v, parts), v.expected_outcome.error_code, v.name);
  });

  t.test(`negative ${file} without its state verifies`, async (t) => {
    // Proves the harness state, not something else in the request, causes the rejection.
    const parts = await receiverParts(t, v);
    t.equal(await outcome(v, parts), 'ok:vector-seller');
  });
}

t.test('negative 016 black-box: delivered twice, the second is replayed', async (t) => {
  const [, v] = load('negative').find(([f]) => f.startsWith('016-'))!;
  t.equal(v.black_box_behavior, 'deliver_twice');
  const parts = await receiverParts(t, v);
  t.equal(await outcome(v, parts), 'ok:vector-seller');
  t.equal(await outcome(v, parts), 'webhook_signature_replayed');
});

t.test(
  'negative 018: the cap rejects before crypto (a forged signature gets rate_abuse)',
  async (t) => {
    const [, v] = load('negative').find(([f]) => f.startsWith('018-'))!;
    const parts = await receiverParts(t, v);
    await parts.replay.harnessFillCap(v.test_harness_state!.per_keyid_cap_filled_for!);
    const forged: Vector = {
      ...v,
      request: { ...v.request, headers: { ...v.request.headers, Signature: 'sig1=:AAAA:' } },
    };
    t.equal(await outcome(forged, parts), 'webhook_signature_rate_abuse');
  },
);

for (const [file, v] of load('positive')) {
  t.test(`positive ${file} through the resolver`, async (t) => {
    const parts = await receiverParts(t, v);
    t.equal(await outcome(v, parts), 'ok:vector-seller', v.name);
    t.equal(await outcome(v, parts), 'webhook_signature_replayed', 'its nonce is now burnt');
  });
}
