import t, { type Test } from 'tap';
import { generateSigningKey, publishedJwk } from '../../../shared/signing/keys.js';
import {
  gradeSender,
  type SenderGradeOptions,
} from '../../../conformance/grade-sender/grade-sender.js';
import { McpAgentDriver, type SenderDriver } from '../../../conformance/grade-sender/driver.js';
import type { ConformanceReport } from '../../../conformance/report/report.js';
import { profile } from '../support/receivers.js';
import { publishKeys, ScriptedSender, type Behaviour, type Flaws } from '../support/senders.js';

const FAST = { stepTimeoutMs: 8000, quietMs: 1200 };

function failed(report: ConformanceReport): string[] {
  return report.checks.filter((c) => c.status === 'failed').map((c) => c.id);
}

function explain(report: ConformanceReport): string {
  return report.checks
    .filter((c) => c.status !== 'passed')
    .map((c) => `${c.id} [${c.status}]: ${c.detail}`)
    .join('\n');
}

async function gradeScripted(
  t: Test,
  flaws: Behaviour = {},
  over: Partial<SenderGradeOptions> = {},
) {
  const { key } = await generateSigningKey('ed25519');
  const pub = await publishKeys(t, [publishedJwk(key, profile)]);
  const driver: SenderDriver = new ScriptedSender(key, flaws);
  return gradeSender({
    profile,
    protocolVersion: '3.2',
    driver,
    keys: { agentUrl: pub.agentUrl, allowLoopback: true },
    ...FAST,
    ...over,
  });
}

t.test('a sender written to the spec scores every check', async (t) => {
  const report = await gradeScripted(t);
  t.same(failed(report), [], explain(report));
  t.equal(report.summary.notApplicable, 0, explain(report));
  t.ok(report.summary.passed >= 14);
  const retry = report.checks.find((c) => c.id === 'retry.deliveries')!;
  t.equal(retry.exchanges.length, 4, '503 three times, then 200');
  t.same(
    retry.exchanges.map((x) => x.sent?.status),
    [503, 503, 503, 200],
  );
});

t.test('a sender reusing its nonce across retries is named', async (t) => {
  const report = await gradeScripted(t, { reuseNonce: true });
  t.ok(failed(report).includes('retry.fresh-nonces'), explain(report));
  t.ok(failed(report).includes('signature.every-delivery'));
  const c = report.checks.find((x) => x.id === 'retry.fresh-nonces')!;
  t.equal(c.code, 'signature_replayed');
  t.match(
    report.checks.find((x) => x.id === 'signature.every-delivery')?.detail ?? '',
    /webhook_signature_replayed/,
  );
});

t.test('a sender drawing a new key on every retry is named', async (t) => {
  const report = await gradeScripted(t, { newKeyOnRetry: true });
  t.same(failed(report), ['retry.key-stable'], explain(report));
  t.equal(report.checks.find((x) => x.id === 'retry.key-stable')?.code, 'idempotency_key_rotated');
});

t.test('a sender changing the body on retry is named', async (t) => {
  const report = await gradeScripted(t, { changeBodyOnRetry: true });
  t.same(failed(report), ['retry.body-stable'], explain(report));
  t.equal(
    report.checks.find((x) => x.id === 'retry.body-stable')?.code,
    'payload_changed_on_retry',
  );
});

t.test('other flaws, each named by its check', async (t) => {
  const cases: Array<[Flaws, string, string]> = [
    [{ webhookOnTerminal: true }, 'terminal-initial.no-webhook', 'unexpected_webhook_received'],
    [{ retryAfter409: true }, 'conflict.stops-retries', 'retried_after_conflict'],
    [{ dropContext: true }, 'envelope.context-echo', 'context_mismatch'],
    [{ timestampKeys: true }, 'idempotency-key.randomness', 'idempotency_key_not_random'],
  ];
  for (const [flaws, id, code] of cases) {
    const report = await gradeScripted(t, flaws);
    t.ok(failed(report).includes(id), `${id}: ${explain(report)}`);
    t.equal(report.checks.find((c) => c.id === id)?.code, code);
  }
});

t.test('keys the sender does not publish: every delivery fails to verify', async (t) => {
  const { key } = await generateSigningKey('ed25519');
  const { key: other } = await generateSigningKey('ed25519');
  const pub = await publishKeys(t, [publishedJwk(other, profile)]);
  const report = await gradeSender({
    profile,
    protocolVersion: '3.2',
    driver: new ScriptedSender(key),
    keys: { brandJsonUrl: pub.brandJsonUrl, allowLoopback: true },
    ...FAST,
  });
  const sig = report.checks.find((c) => c.id === 'signature.every-delivery')!;
  t.equal(sig.status, 'failed');
  t.match(sig.detail, /webhook_signature_key_unknown/);
  t.equal(
    report.checks.find((c) => c.id === 'keys.published')?.status,
    'passed',
    'what is published is fine',
  );
});

t.test('published keys with the wrong purpose are named', async (t) => {
  const { key } = await generateSigningKey('ed25519');
  const pub = await publishKeys(t, [
    { ...publishedJwk(key, profile), [profile.useMember]: 'response-signing' },
  ]);
  const report = await gradeSender({
    profile,
    protocolVersion: '3.2',
    driver: new ScriptedSender(key),
    keys: { agentUrl: pub.agentUrl, allowLoopback: true },
    ...FAST,
  });
  const keys = report.checks.find((c) => c.id === 'keys.published')!;
  t.equal(keys.status, 'failed');
  t.equal(keys.code, 'webhook_signing_keys_wrong_purpose');
  t.match(
    report.checks.find((c) => c.id === 'signature.every-delivery')?.detail ?? '',
    /key_purpose_invalid/,
  );
});

t.test('an agent that cannot be reached: driven checks not applicable, never passed', async (t) => {
  const { key } = await generateSigningKey('ed25519');
  const pub = await publishKeys(t, [publishedJwk(key, profile)]);
  const report = await gradeSender({
    profile,
    protocolVersion: '3.2',
    driver: new McpAgentDriver('http://127.0.0.1:9/mcp', { timeoutMs: 1000 }),
    keys: { agentUrl: pub.agentUrl, allowLoopback: true },
    ...FAST,
  });
  const driven = report.checks.filter((c) => c.id !== 'keys.published');
  t.ok(driven.length >= 12);
  for (const c of driven) t.equal(c.status, 'not_applicable', c.id);
  t.match(driven[0]?.detail, /cannot be driven over MCP/);
  t.equal(report.checks.find((c) => c.id === 'keys.published')?.status, 'passed');
});

t.test('a brand.json that is not there is named', async (t) => {
  const { key } = await generateSigningKey('ed25519');
  const report = await gradeSender({
    profile,
    protocolVersion: '3.2',
    driver: new ScriptedSender(key),
    keys: { agentUrl: 'http://127.0.0.1:9/mcp', allowLoopback: true },
    ...FAST,
  });
  const keys = report.checks.find((c) => c.id === 'keys.published')!;
  t.equal(keys.status, 'failed');
  t.equal(keys.code, 'brand_json_unreachable');
});

t.test('bad grading options are refused', async (t) => {
  const { key } = await generateSigningKey('ed25519');
  await t.rejects(
    gradeSender({
      profile,
      protocolVersion: '3.2',
      driver: new ScriptedSender(key),
      keys: { jwksFile: 'x' },
      retryCount: 11,
    }),
    RangeError,
  );
  await t.rejects(
    gradeSender({
      profile,
      protocolVersion: '3.2',
      driver: new ScriptedSender(key),
      keys: { jwksFile: 'x' },
      retryStatus: 400,
    }),
    RangeError,
  );
  await t.rejects(
    gradeSender({ profile, protocolVersion: '3.2', driver: new ScriptedSender(key), keys: {} }),
    /exactly one key source/,
  );
});

t.test(
  'two events per operation (working, then completed) are not taken for retries',
  async (t) => {
    const report = await gradeScripted(t, { workingFirst: true });
    t.same(failed(report), [], explain(report));
    const retry = report.checks.find((c) => c.id === 'retry.deliveries')!;
    t.same(
      retry.exchanges.map((x) => x.sent?.status),
      [503, 503, 503, 200],
      'only the first event is held back',
    );
    t.equal(report.checks.find((c) => c.id === 'retry.key-stable')?.status, 'passed');
    // With key rotation on top, the re-keyed retries are still recognised as one event.
    const rotating = await gradeScripted(t, { workingFirst: true, newKeyOnRetry: true });
    t.same(failed(rotating), ['retry.key-stable'], explain(rotating));
  },
);
