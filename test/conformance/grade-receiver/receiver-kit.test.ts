import t from 'tap';
import { gradeReceiver } from '../../../conformance/grade-receiver/grade-receiver.js';
import { exitCodeOf, type ConformanceReport } from '../../../conformance/report/report.js';
import { testDatabase } from '../../helpers/db.js';
import {
  HMAC_PATH,
  HMAC_SECRET,
  profile,
  realReceiver,
  referenceReceiver,
  testerKeys,
  type GradedReceiver,
  type TesterKeys,
} from '../support/receivers.js';

const db = testDatabase(t, 'confr');

function grade(
  r: GradedReceiver,
  keys: TesterKeys,
  over: Partial<Parameters<typeof gradeReceiver>[0]> = {},
) {
  return gradeReceiver({
    target: r.url,
    profile,
    protocolVersion: '3.2',
    keys: [keys.ed, keys.es],
    wrongPurposeKey: keys.wrongPurpose,
    signOnlyKey: keys.signOnly,
    countUrl: r.countUrl,
    harnessUrl: r.harnessUrl,
    hmac: { secret: HMAC_SECRET, path: HMAC_PATH },
    timeoutMs: 5000,
    ...over,
  });
}

function byStatus(report: ConformanceReport, status: string): string[] {
  return report.checks.filter((c) => c.status === status).map((c) => c.id);
}

function explain(report: ConformanceReport): string {
  return report.checks
    .filter((c) => c.status === 'failed')
    .map((c) => `${c.id}: ${c.detail}`)
    .join('\n');
}

t.test('our WebhookReceiver scores every applicable check', async (t) => {
  const keys = await testerKeys();
  const r = await realReceiver(t, db, keys);
  const report = await grade(r, keys);
  t.same(byStatus(report, 'failed'), [], explain(report));
  t.same(
    byStatus(report, 'not_applicable'),
    ['vector.positive.004-default-port-stripped'],
    'only the default-port vector cannot run on a loopback port',
  );
  t.ok(report.summary.passed >= 40, `${report.summary.passed} checks passed`);
  const replay = report.checks.find((c) => c.id === 'vector.negative.016-replayed-nonce')!;
  t.equal(replay.exchanges.length, 2, 'the replay vector delivers twice');
  t.equal(
    replay.exchanges[1]?.received?.headers?.['www-authenticate'],
    'Signature error="webhook_signature_replayed"',
  );
});

t.test(
  'the reference receiver scores every applicable check (baseline of the broken ones)',
  async (t) => {
    const keys = await testerKeys();
    const r = await referenceReceiver(t, keys);
    const report = await grade(r, keys);
    t.same(byStatus(report, 'failed'), [], explain(report));
    // Its harness hook refuses state: 017-019 are not applicable, never passed.
    t.same(byStatus(report, 'not_applicable').sort(), [
      'vector.negative.017-key-revoked',
      'vector.negative.018-rate-abuse',
      'vector.negative.019-revocation-stale',
      'vector.positive.004-default-port-stripped',
    ]);
  },
);

t.test('a receiver that skips the digest check fails exactly the digest vector', async (t) => {
  const keys = await testerKeys();
  const r = await referenceReceiver(t, keys, { skipDigest: true });
  const report = await grade(r, keys);
  t.same(byStatus(report, 'failed'), ['vector.negative.009-content-digest-mismatch']);
  const c = report.checks.find((x) => x.id === 'vector.negative.009-content-digest-mismatch')!;
  t.match(c.detail, /got 200/);
  t.equal(c.exchanges[0]?.received?.status, 200, 'the report shows what came back');
  t.match(c.exchanges[0]?.sent?.headers?.['content-digest'], /^sha-256=:/, 'and what was sent');
});

t.test('a receiver that accepts any tag fails exactly the tag vector', async (t) => {
  const keys = await testerKeys();
  const r = await referenceReceiver(t, keys, { anyTag: true });
  const report = await grade(r, keys);
  t.same(byStatus(report, 'failed'), ['vector.negative.001-wrong-tag']);
});

t.test('a receiver answering 409 to exact duplicates fails the duplicate check', async (t) => {
  const keys = await testerKeys();
  const r = await referenceReceiver(t, keys, { conflictOnDuplicate: true });
  const report = await grade(r, keys);
  // Each kind's repeat is a duplicate too: every kind's dedup check fails with it.
  t.same(byStatus(report, 'failed'), [
    'dedup.exact-duplicate',
    'kind.property_list_changed.accepted',
    'kind.collection_list_changed.accepted',
    'kind.artifact.accepted',
    'kind.revocation_notification.accepted',
  ]);
  const c = report.checks.find((x) => x.id === 'dedup.exact-duplicate')!;
  t.match(c.detail, /duplicate got 409/);
  t.equal(
    report.checks.find((x) => x.id === 'dedup.not-dispatched-twice')?.status,
    'not_applicable',
    'the dispatch count is not judged once the duplicate was refused',
  );
});

t.test('3.1: a changed payload under the same key is acknowledged', async (t) => {
  const keys = await testerKeys();
  const r = await realReceiver(t, db, keys, '3.1');
  const report = await grade(r, keys, { protocolVersion: '3.1' });
  const c = report.checks.find((x) => x.id === 'dedup.changed-payload')!;
  t.equal(c.status, 'passed', c.detail ?? '');
  t.match(c.expected, /3\.1/);
  // Graded as 3.2, the same receiver fails it: the kit applies the version asked for.
  const strict = await grade(r, keys, { protocolVersion: '3.2' });
  t.equal(strict.checks.find((x) => x.id === 'dedup.changed-payload')?.status, 'failed');
});

t.test('without optional keys and hooks the checks needing them are not applicable', async (t) => {
  const keys = await testerKeys();
  const r = await referenceReceiver(t, keys);
  const report = await gradeReceiver({
    target: r.url,
    profile,
    protocolVersion: '3.2',
    keys: [keys.ed],
    timeoutMs: 5000,
  });
  const na = byStatus(report, 'not_applicable');
  for (const id of [
    'vector.positive.002-es256-post',
    'vector.negative.008-wrong-adcp-use',
    'vector.negative.020-key-ops-missing-verify',
    'vector.negative.017-key-revoked',
    'dedup.not-dispatched-twice',
    'legacy.hmac.good',
  ]) {
    t.ok(na.includes(id), `${id} not applicable`);
  }
  t.same(byStatus(report, 'failed'), [], explain(report));
  t.match(
    report.checks.find((c) => c.id === 'vector.positive.002-es256-post')?.detail ?? '',
    /ES256/,
  );
});

t.test('an unreachable receiver fails, it does not pass', async (t) => {
  const keys = await testerKeys();
  const report = await gradeReceiver({
    target: 'http://127.0.0.1:9/nothing',
    profile,
    protocolVersion: '3.2',
    keys: [keys.ed],
    timeoutMs: 2000,
  });
  t.equal(report.summary.passed, 0);
  t.same(report.checks, [], 'said once, not as every check failing the same way');
  t.match(report.undriven, /^the receiver at http:\/\/127\.0\.0\.1:9\/nothing cannot be reached: /);
  t.match(report.undriven, /ECONNREFUSED|connect/i);
  t.equal(exitCodeOf(report), 1);
});

t.test('the wrong brand fails at the tag step, as the vectors README says', async (t) => {
  const keys = await testerKeys();
  const r = await referenceReceiver(t, keys);
  const { brandProfile } = await import('../../../shared/brand.js');
  const report = await grade(r, keys, { profile: brandProfile('adcp') });
  const positive = report.checks.find((c) => c.id === 'vector.positive.001-basic-post')!;
  t.equal(positive.status, 'failed');
  t.match(positive.detail, /webhook_signature_tag_invalid/);
});

t.test(
  '--trust-vector-keys: vectors signed by their own keys where the receiver trusts them',
  async (t) => {
    const { brandProfile } = await import('../../../shared/brand.js');
    const { loadKeys, publicJwk } = await import('../../helpers/vectors.js');
    const adcp = brandProfile('adcp');
    const keys = await testerKeys(adcp);
    const trusted = { ...keys, jwks: [...keys.jwks, ...loadKeys().map(publicJwk)] };
    const r = await realReceiver(t, db, trusted, '3.2', adcp);
    const report = await gradeReceiver({
      target: r.url,
      profile: adcp,
      protocolVersion: '3.2',
      keys: [keys.ed],
      trustVectorKeys: true,
      countUrl: r.countUrl,
      harnessUrl: r.harnessUrl,
      timeoutMs: 5000,
    });
    t.same(byStatus(report, 'failed'), [], explain(report));
    const detail = (id: string) => report.checks.find((c) => c.id === id)?.detail ?? '';
    t.match(detail('vector.positive.002-es256-post'), /vector key test-es256-webhook-2026/);
    t.match(detail('vector.positive.008-request-signing-key-reuse'), /test-wrong-purpose-2026/);
    t.match(detail('vector.negative.008-wrong-adcp-use'), /test-response-purpose-2026/);
    t.equal(
      report.checks.find((c) => c.id === 'vector.negative.020-key-ops-missing-verify')?.status,
      'not_applicable',
      'a JWK override cannot be installed black-box',
    );
  },
);

t.test('--vectors: another folder; a vector without a recipe is not applicable', async (t) => {
  const { cp, mkdtemp, rm, writeFile } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { DEFAULT_VECTORS_DIR } = await import('../../../conformance/grade-receiver/vectors.js');
  const root = await mkdtemp(join(tmpdir(), 'vectors-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  await cp(DEFAULT_VECTORS_DIR, join(root, 'webhook-signing'), { recursive: true });
  await writeFile(
    join(root, 'webhook-signing', 'negative', '099-future-defect.json'),
    JSON.stringify({
      name: 'a defect this kit does not know',
      reference_now: 1776520800,
      request: { method: 'POST', url: 'https://x.example/', headers: {}, body: '{}' },
      jwks_ref: ['test-ed25519-webhook-2026'],
      expected_outcome: { success: false, error_code: 'webhook_signature_invalid' },
    }),
  );
  const keys = await testerKeys();
  const r = await referenceReceiver(t, keys);
  const report = await grade(r, keys, { vectorsDir: root });
  const c = report.checks.find((x) => x.id === 'vector.negative.099-future-defect')!;
  t.equal(c.status, 'not_applicable');
  t.match(c.detail, /no black-box recipe/);
  t.equal(report.summary.failed, 0, explain(report));
});

t.test('a count URL that does not answer a count: not applicable, with the reason', async (t) => {
  const keys = await testerKeys();
  const r = await referenceReceiver(t, keys);
  const report = await grade(r, keys, { countUrl: r.url });
  const c = report.checks.find((x) => x.id === 'dedup.not-dispatched-twice')!;
  t.equal(c.status, 'not_applicable');
  t.match(c.detail, /count URL answered 405/);
  t.equal(report.summary.failed, 0, explain(report));
});
