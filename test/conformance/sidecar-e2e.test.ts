/**
 * The tester's whole flow with two binaries: `svc conformance receiver --print-jwks
 * --save-key` makes the keys, the buyer's `svc receiver` sidecar trusts them through its
 * trust file (plus a legacy HMAC path) and forwards to an app that counts, and
 * `svc conformance receiver` grades the sidecar from outside.
 */
import t from 'tap';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createPool, dropSchema } from '../../shared/infra/pg.js';
import { parseStrictJson } from '../../shared/json/strict-parse.js';
import type { ConformanceReport } from '../../conformance/report/report.js';
import { DATABASE_URL, uniqueName } from '../helpers/db.js';

const run = promisify(execFile);
const bin = join(import.meta.dirname, '..', '..', 'bin', 'svc.js');
const SECRET = 'sidecar-conformance-hmac-secret-0123456789-XYZ';

t.test('svc conformance receiver grades the svc receiver sidecar', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'conf-e2e-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const keyFile = join(dir, 'tester-keys.json');

  // 1. The tester's keys, as the tester makes them.
  const printed = await run(process.execPath, [
    bin,
    'conformance',
    'receiver',
    '--print-jwks',
    '--save-key',
    keyFile,
  ]);
  const jwks = parseStrictJson(printed.stdout) as { keys: unknown[] };
  t.equal(jwks.keys.length, 2);

  // 2. The buyer's app behind the sidecar: counts what it is handed.
  let count = 0;
  const app = createServer((req, res) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ count }));
      return;
    }
    req.resume();
    req.on('end', () => {
      count++;
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => app.close(() => r())));
  const appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;

  // 3. The sidecar, trusting the tester's JWKS and a legacy HMAC path.
  const trust = join(dir, 'trust.json');
  await writeFile(
    trust,
    JSON.stringify({
      senders: [{ id: 'conformance-tester', jwks }],
      legacy: [
        {
          path_prefix: '/legacy',
          sender: 'legacy-tester',
          scheme: 'HMAC-SHA256',
          secrets: [SECRET],
        },
      ],
    }),
  );
  const schema = uniqueName('confsc');
  const pool = createPool({ connectionString: DATABASE_URL });
  t.teardown(async () => {
    await dropSchema(pool, schema).catch(() => {});
    await pool.end();
  });
  const sidecar: ChildProcess = spawn(
    process.execPath,
    [bin, 'receiver', '--listen', '127.0.0.1:0', '--trust', trust, '--forward', `${appUrl}/events`],
    {
      env: { ...process.env, DATABASE_URL, SVC_RECEIVER_SCHEMA: schema, LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        if (sidecar.exitCode !== null) return resolve();
        sidecar.once('exit', () => resolve());
        sidecar.kill('SIGTERM');
      }),
  );
  const base = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`sidecar did not start: ${out}`)), 30_000);
    sidecar.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /receiver listening on (\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!.replace(/\/$/, ''));
      }
    });
    sidecar.once('exit', (code) => reject(new Error(`sidecar exited ${code}: ${out}`)));
  });

  // 4. The grading, from outside, as a CI job would run it.
  const junit = join(dir, 'report.xml');
  const graded = await run(process.execPath, [
    bin,
    'conformance',
    'receiver',
    `${base}/webhooks/svc`,
    '--key',
    keyFile,
    '--hmac-secret',
    SECRET,
    '--hmac-path',
    '/legacy/hooks',
    '--count-url',
    `${appUrl}/count`,
    '--json',
    '--junit',
    junit,
  ]).catch((e: { code: number; stdout: string }) => e);
  const report = parseStrictJson((graded as { stdout: string }).stdout) as ConformanceReport;
  const failed = report.checks.filter((c) => c.status === 'failed');
  t.same(
    failed.map((c) => `${c.id}: ${c.detail}`),
    [],
  );
  t.equal((graded as { code?: number }).code ?? 0, 0, 'exit 0');
  const na = report.checks.filter((c) => c.status === 'not_applicable').map((c) => c.id);
  t.ok(na.includes('dedup.not-dispatched-twice') === false, 'the dispatch count was graded');
  t.ok(report.checks.some((c) => c.id === 'legacy.hmac.good' && c.status === 'passed'));
  t.match(await readFile(junit, 'utf8'), /failures="0"/);
});
