import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseStrictJson } from '../../shared/json/strict-parse.js';
import { publishedJwk } from '../../shared/signing/keys.js';
import {
  runReceiverConformance,
  UsageError as ReceiverUsage,
  type ReceiverCommandFlags,
} from '../../conformance/grade-receiver/command.js';
import { TesterKeyError } from '../../conformance/grade-receiver/tester-keys.js';
import { VectorLoadError } from '../../conformance/grade-receiver/vectors.js';
import {
  runSenderConformance,
  UsageError as SenderUsage,
} from '../../conformance/grade-sender/command.js';
import type { ConformanceReport } from '../../conformance/report/report.js';
import { generateSigningKey } from '../../shared/signing/keys.js';
import {
  HMAC_PATH,
  HMAC_SECRET,
  profile,
  referenceReceiver,
  testerKeys,
  type TesterKeys,
} from './support/receivers.js';
import { ScriptedSender } from './support/senders.js';

const run = promisify(execFile);
const dir = await mkdtemp(join(tmpdir(), 'conf-cli-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (s: string) => out.push(s), err: (s: string) => err.push(s) } };
}

/** The receiver's tester keys as private JWK files, the way a tester passes them. */
async function keyFiles(
  keys: TesterKeys,
): Promise<{ main: string; wrong: string; signOnly: string }> {
  const write = async (name: string, ...ks: Array<TesterKeys['ed']>) => {
    const path = join(dir, `${name}-${ks[0]!.kid}.json`);
    const jwks = ks.map((k) => ({
      ...(k.privateKey.export({ format: 'jwk' }) as object),
      kid: k.kid,
    }));
    await writeFile(path, JSON.stringify(ks.length === 1 ? jwks[0] : { keys: jwks }));
    return path;
  };
  return {
    main: await write('main', keys.ed, keys.es),
    wrong: await write('wrong', keys.wrongPurpose),
    signOnly: await write('signonly', keys.signOnly),
  };
}

t.test(
  'receiver command: --json report, --junit file, exit 0 when all applicable pass',
  async (t) => {
    const keys = await testerKeys();
    const r = await referenceReceiver(t, keys);
    const files = await keyFiles(keys);
    const junit = join(dir, 'receiver.xml');
    const o = io();
    const flags: ReceiverCommandFlags = {
      key: [files.main],
      wrongPurposeKey: files.wrong,
      signOnlyKey: files.signOnly,
      hmacSecret: HMAC_SECRET,
      hmacPath: HMAC_PATH,
      countUrl: r.countUrl,
      json: true,
      junit,
      timeout: '5000',
    };
    const code = await runReceiverConformance(r.url, flags, o.io);
    const report = parseStrictJson(o.out.join('')) as ConformanceReport;
    t.equal(code, 0, JSON.stringify(report.checks.filter((c) => c.status === 'failed')));
    t.equal(report.graded, 'receiver');
    t.equal(report.summary.failed, 0);
    const xml = await readFile(junit, 'utf8');
    t.match(xml, /<testsuite name="conformance.receiver" tests="\d+" failures="0"/);
    t.match(
      xml,
      /<testcase classname="conformance.receiver.signing" name="vector.negative.009-content-digest-mismatch"\/>/,
    );
    t.match(xml, /<skipped message="[^"]*harness/);
  },
);

t.test('receiver command: a broken receiver exits 1 and the table names the check', async (t) => {
  const keys = await testerKeys();
  const r = await referenceReceiver(t, keys, { skipDigest: true });
  const files = await keyFiles(keys);
  const junit = join(dir, 'broken.xml');
  const o = io();
  const code = await runReceiverConformance(
    r.url,
    { key: [files.main], junit, timeout: '5000' },
    o.io,
  );
  t.equal(code, 1);
  const table = o.out.join('');
  t.match(table, /FAIL {2}vector\.negative\.009-content-digest-mismatch/);
  t.match(
    table,
    /expected: 401 with WWW-Authenticate: Signature error="webhook_signature_digest_mismatch"/,
  );
  t.match(table, /sent POST http:\/\/127\.0\.0\.1:\d+\/hooks/);
  t.match(table, /got 200/);
  t.match(await readFile(junit, 'utf8'), /<failure message="[^"]*got 200[^"]*" type="failed">/);
});

t.test('receiver command: --print-jwks with --save-key, then the saved key grades', async (t) => {
  const saved = join(dir, 'generated.json');
  const o = io();
  t.equal(await runReceiverConformance('', { printJwks: true, saveKey: saved }, o.io), 0);
  const jwks = parseStrictJson(o.out.join('')) as { keys: Array<Record<string, unknown>> };
  t.equal(jwks.keys.length, 2, 'one Ed25519 and one ES256 key');
  for (const k of jwks.keys) {
    t.equal(k.svc_use, 'request-signing');
    t.same(k.key_ops, ['verify']);
    t.notOk('d' in k, 'no private part printed');
  }
  const priv = parseStrictJson(await readFile(saved, 'utf8')) as {
    keys: Array<Record<string, unknown>>;
  };
  t.ok(
    priv.keys.every((k) => typeof k.d === 'string'),
    'private keys saved',
  );
  // Run again: the saved keys (which a receiver may trust by now) are kept and printed
  // again, unless --force.
  const before = await readFile(saved, 'utf8');
  const again = io();
  t.equal(await runReceiverConformance('', { printJwks: true, saveKey: saved }, again.io), 0);
  t.equal(again.out.join(''), o.out.join(''), 'the same JWKS');
  t.match(
    again.err.join(''),
    `${saved} exists: using the tester keys saved in it (--force makes new ones)`,
  );
  t.equal(await readFile(saved, 'utf8'), before, 'the saved keys are untouched');
  const forced = io();
  t.equal(
    await runReceiverConformance('', { printJwks: true, saveKey: saved, force: true }, forced.io),
    0,
  );
  t.not(await readFile(saved, 'utf8'), before, '--force replaces them');
  t.not(forced.out.join(''), o.out.join(''), 'and prints the new ones');
  await writeFile(saved, before);
  // A receiver trusting the printed JWKS accepts the saved keys.
  const keys = await testerKeys();
  const r = await referenceReceiver(t, {
    ...keys,
    jwks: [...keys.jwks, ...(jwks.keys as never[])],
  });
  const run2 = io();
  const code = await runReceiverConformance(r.url, { key: [saved], timeout: '5000' }, run2.io);
  t.match(run2.out.join(''), /PASS {2}vector\.positive\.002-es256-post/);
  t.equal(code, 0, run2.out.join(''));
});

t.test('receiver command: generated keys are announced on stderr', async (t) => {
  const keys = await testerKeys();
  const r = await referenceReceiver(t, keys);
  const o = io();
  const code = await runReceiverConformance(r.url, { timeout: '3000', json: true }, o.io);
  t.equal(code, 1, 'a receiver that does not trust fresh keys fails');
  t.match(o.err.join(''), /Generated tester keys\. The receiver must trust this JWKS/);
  const report = parseStrictJson(o.out.join('')) as ConformanceReport;
  t.match(
    report.checks.find((c) => c.id === 'vector.positive.001-basic-post')?.detail,
    /webhook_signature_key_unknown/,
  );
});

t.test('receiver command: missing vectors fail before any key is announced', async (t) => {
  const o = io();
  await t.rejects(
    runReceiverConformance('http://127.0.0.1:1/x', { vectors: join(dir, 'nowhere') }, o.io),
    VectorLoadError,
  );
  t.same(o.err, [], 'no generated keys printed');
  t.same(o.out, []);
});

t.test('receiver command: malformed input is a usage error, never a run', async (t) => {
  const keys = await testerKeys();
  const files = await keyFiles(keys);
  const bad = join(dir, 'bad.json');
  await writeFile(bad, '{"kty":"OKP","crv":"Ed25519","x":"abc"}');
  const notJson = join(dir, 'not.json');
  await writeFile(notJson, 'nope');
  const cases: Array<[string, ReceiverCommandFlags, unknown]> = [
    ['ftp://x/y', { key: [files.main] }, ReceiverUsage],
    ['', { key: [files.main] }, ReceiverUsage],
    ['http://127.0.0.1:1/x', { key: [files.main], brand: 'acme' }, ReceiverUsage],
    ['http://127.0.0.1:1/x', { key: [files.main], protocolVersion: '4.0' }, ReceiverUsage],
    ['http://127.0.0.1:1/x', { key: [files.main], hmacSecret: 's' }, ReceiverUsage],
    ['http://127.0.0.1:1/x', { key: [files.main], hmacSecret: 's', hmacPath: 'x' }, ReceiverUsage],
    ['http://127.0.0.1:1/x', { key: [files.main], timeout: 'soon' }, ReceiverUsage],
    ['http://127.0.0.1:1/x', { key: [files.main], countUrl: 'nope' }, ReceiverUsage],
    ['http://127.0.0.1:1/x', { key: [files.main], wrongPurposeKey: files.main }, ReceiverUsage],
    ['http://127.0.0.1:1/x', { key: [bad] }, TesterKeyError],
    ['http://127.0.0.1:1/x', { key: [notJson] }, TesterKeyError],
    ['http://127.0.0.1:1/x', { key: [join(dir, 'missing.json')] }, TesterKeyError],
    ['http://127.0.0.1:1/x', { key: [files.main], vectors: dir }, VectorLoadError],
  ];
  for (const [url, flags, type] of cases) {
    await t.rejects(
      runReceiverConformance(url, flags, io().io),
      type as never,
      JSON.stringify(flags),
    );
  }
});

t.test('sender command: JWKS file, scripted sender, --json and --junit', async (t) => {
  const { key } = await generateSigningKey('ed25519');
  const jwks = join(dir, 'sender-jwks.json');
  await writeFile(jwks, JSON.stringify({ keys: [publishedJwk(key, profile)] }));
  const junit = join(dir, 'sender.xml');
  const o = io();
  const code = await runSenderConformance(
    { jwks, json: true, junit, stepTimeout: '8', quiet: '1' },
    o.io,
    new ScriptedSender(key),
  );
  const report = parseStrictJson(o.out.join('')) as ConformanceReport;
  t.equal(code, 0, JSON.stringify(report.checks.filter((c) => c.status === 'failed')));
  t.equal(report.graded, 'sender');
  t.equal(
    report.checks.find((c) => c.id === 'keys.published')?.status,
    'not_applicable',
    'a JWKS file says nothing about publication',
  );
  t.match(await readFile(junit, 'utf8'), /name="conformance.sender"/);
});

t.test('sender command: a flawed sender exits 1', async (t) => {
  const { key } = await generateSigningKey('ed25519');
  const jwks = join(dir, 'sender-jwks-2.json');
  await writeFile(jwks, JSON.stringify({ keys: [publishedJwk(key, profile)] }));
  const o = io();
  const code = await runSenderConformance(
    { jwks, stepTimeout: '8', quiet: '1' },
    o.io,
    new ScriptedSender(key, { reuseNonce: true }),
  );
  t.equal(code, 1);
  t.match(o.out.join(''), /FAIL {2}retry\.fresh-nonces/);
  t.match(o.out.join(''), /got POST http:\/\/127\.0\.0\.1:\d+\/step\/retry\/cap_/);
  t.match(o.out.join(''), /answered 503/);
});

t.test('sender command: malformed input is a usage error', async (t) => {
  const cases: Array<Record<string, unknown>> = [
    {},
    { jwks: 'x', brand: 'acme' },
    { jwks: 'x', protocolVersion: '9' },
    { jwks: 'x', listen: 'nowhere' },
    { jwks: 'x', listen: '127.0.0.1:70000' },
    { jwksUrl: 'file:///etc/passwd' },
    { jwks: 'x', agent: 'not a url' },
    { jwks: 'x', agent: 'http://127.0.0.1:1/mcp', agentHeader: ['no-colon'] },
    { jwks: 'x', stepTimeout: '0' },
    { jwks: 'x', quiet: 'a while' },
    { jwks: 'x', retryCount: '11' },
  ];
  const arrayArgs = join(dir, 'args-array.json');
  await writeFile(arrayArgs, '[1]');
  const dupArgs = join(dir, 'args-dup.json');
  await writeFile(dupArgs, '{"a":1,"a":2}');
  cases.push(
    { jwks: 'x', agent: 'http://127.0.0.1:1/mcp', agentArgs: arrayArgs },
    { jwks: 'x', agent: 'http://127.0.0.1:1/mcp', agentArgs: dupArgs },
    { jwks: 'x', agent: 'http://127.0.0.1:1/mcp', agentArgs: join(dir, 'no-args.json') },
  );
  for (const flags of cases) {
    await t.rejects(runSenderConformance(flags, io().io), SenderUsage, JSON.stringify(flags));
  }
  await t.rejects(
    runSenderConformance({ jwks: 'x', jwksUrl: 'http://127.0.0.1:1/j' }, io().io),
    /exactly one key source/,
  );
  const { SenderKeyError } = await import('../../conformance/grade-sender/sender-keys.js');
  const notJwks = join(dir, 'not-jwks.json');
  await writeFile(notJwks, '{"keys": [{"kid": "a", "kty": "OKP"}, {"kid": "a", "kty": "OKP"}]}');
  for (const jwks of [join(dir, 'absent.json'), notJwks]) {
    await t.rejects(runSenderConformance({ jwks }, io().io), SenderKeyError, jwks);
  }
});

t.test('the svc binary runs both commands', async (t) => {
  const keys = await testerKeys();
  const r = await referenceReceiver(t, keys);
  const files = await keyFiles(keys);
  const bin = join(import.meta.dirname, '..', '..', 'bin', 'svc.js');
  const ok = await run(process.execPath, [
    bin,
    'conformance',
    'receiver',
    r.url,
    '--key',
    files.main,
    '--json',
    '--timeout',
    '5000',
  ]);
  const report = parseStrictJson(ok.stdout) as ConformanceReport;
  t.equal(report.summary.failed, 0);
  const usage = await run(process.execPath, [
    bin,
    'conformance',
    'receiver',
    r.url,
    '--key',
    join(dir, 'missing.json'),
  ]).catch((e: { code: number; stderr: string }) => e);
  t.equal((usage as { code: number }).code, 2);
  t.match((usage as { stderr: string }).stderr, /svc conformance receiver: .*missing\.json/);
  const sender = await run(process.execPath, [bin, 'conformance', 'sender']).catch(
    (e: { code: number; stderr: string }) => e,
  );
  t.equal((sender as { code: number }).code, 2);
  t.match((sender as { stderr: string }).stderr, /name the sender keys/);
});

t.test(
  'receiver command: a target that cannot be reached exits 1 with its whole error',
  async (t) => {
    const keys = await testerKeys();
    const files = await keyFiles(keys);
    // A port where nothing listens: bound, then released.
    const { createServer } = await import('node:net');
    const port = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, '127.0.0.1', () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    });
    const target = `http://127.0.0.1:${port}/hooks`;
    const text = io();
    t.equal(
      await runReceiverConformance(target, { key: [files.main], timeout: '3000' }, text.io),
      1,
    );
    const table = text.out.join('');
    t.match(table, `COULD NOT GRADE: the receiver at ${target} cannot be reached: `);
    t.match(table, /ECONNREFUSED/);
    const json = io();
    const code = await runReceiverConformance(
      target,
      { key: [files.main], timeout: '3000', json: true },
      json.io,
    );
    t.equal(code, 1);
    const report = parseStrictJson(Buffer.from(json.out.join(''))) as ConformanceReport;
    t.match(report.undriven, /cannot be reached: .*ECONNREFUSED/);
    t.same(report.checks, [], 'no check pretends to have graded it');
  },
);
