/**
 * The package as a user gets it: `npm pack`, then an offline install into a scratch app
 * (scratch-app.ts), and there, with plain `node` (no tsx) and the package's own
 * dependencies only:
 * - the tarball holds the build, the vectors, README, LICENSE and the part READMEs, and no
 *   tests, benches or CI;
 * - the README examples (examples/) compile with `tsc --strict` (moduleResolution nodenext)
 *   together with a consumer of every entry point, and run;
 * - the node:http receiver gets one webhook sent twice by `npx svc send`: both acknowledged,
 *   handed to its handler once;
 * - `npx svc conformance receiver <url>` grades it, every applicable check passing;
 * - the seller example delivers through NotificationCore to the Koa receiver example;
 * - the signing example verifies, and refuses the tampered bytes.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { cp, readdir, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { createPool, dropSchema } from '../../shared/infra/pg.js';
import { createRedis } from '../../shared/infra/redis.js';
import { DATABASE_URL, REDIS_URL, uniqueName } from '../helpers/db.js';
import { REPO, scratchApp, type ScratchApp } from './scratch-app.js';

// Packing builds dist/ and the install copies every dependency: minutes on a loaded machine.
t.setTimeout(540_000);

const execFileP = promisify(execFile);
const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx';
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

/** A user's environment: none of tap's loaders or coverage hooks, none of npm run's variables. */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(NODE_OPTIONS|NODE_V8_COVERAGE|TAP|npm_|_TAPJS)/i.test(k)) continue;
    env[k] = v;
  }
  return { ...env, DATABASE_URL, REDIS_URL, npm_config_offline: 'true', ...extra };
}

async function inApp(
  app: ScratchApp,
  file: string,
  args: string[],
  env: Record<string, string> = {},
  timeout = 60_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileP(file, args, {
      cwd: app.dir,
      env: userEnv(env),
      timeout,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number | string; stdout?: string; stderr?: string };
    if (typeof e.code !== 'number') throw err;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

interface RunningApp {
  url: string;
  output: () => string;
}

/** Starts `node <script>` in the app and waits for its "listening on <url>" line. */
async function startApp(
  app: ScratchApp,
  script: string,
  env: Record<string, string>,
): Promise<RunningApp> {
  const child: ChildProcess = spawn(process.execPath, [script], {
    cwd: app.dir,
    env: userEnv({ PORT: '0', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (err += c));
  t.teardown(() => void child.kill('SIGKILL'));
  const url = await new Promise<string>((resolve, reject) => {
    const deadline = setTimeout(
      () => reject(new Error(`${script} did not listen: ${err}`)),
      30_000,
    );
    child.once('exit', (code) => reject(new Error(`${script} exited ${code}: ${err}`)));
    const check = () => {
      const m = /listening on (\S+)/.exec(out);
      if (m) {
        clearTimeout(deadline);
        resolve(m[1]!);
      } else setTimeout(check, 50);
    };
    check();
  });
  return { url, output: () => out };
}

const linesWith = (text: string, needle: string) =>
  text.split('\n').filter((l) => l.includes(needle));

const app = await scratchApp();
t.teardown(() => app.remove());
const pool = createPool({ connectionString: DATABASE_URL });
const schemas = ['pkg_rx', 'pkg_koa', 'pkg_tx'].map(uniqueName);
const [rxSchema, koaSchema, txSchema] = schemas as [string, string, string];
const prefix = `{${uniqueName('pkg')}}`;
t.teardown(async () => {
  for (const s of schemas) await dropSchema(pool, s).catch(() => {});
  await pool.end();
  const redis = createRedis(REDIS_URL);
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

t.test('the tarball: build, vectors, docs; no tests, benches or CI', async (t) => {
  const files = app.files;
  for (const f of [
    'package.json',
    'LICENSE',
    'README.md',
    'receiver/README.md',
    'sender/README.md',
    'bin/svc.js',
    'dist/receiver/index.js',
    'dist/receiver/index.d.ts',
    'dist/sender/index.d.ts',
    'dist/shared/signing/index.d.ts',
    'dist/conformance/index.d.ts',
    'dist/cli/main.js',
    'conformance-vectors/webhook-signing/keys.json',
    'examples/receiver-node-http.mjs',
  ]) {
    t.ok(files.includes(f), f);
  }
  t.same(
    files.filter(
      (f) =>
        /^(test|bench|\.ci|scripts)\//.test(f) ||
        (f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.startsWith('examples/')),
    ),
    [],
    'no tests, benches, CI, scripts or TypeScript sources (examples aside)',
  );
  // Modules load their JSON assets relative to import.meta.url: each ships beside its module.
  const config = JSON.parse(await readFile(join(REPO, 'tsconfig.build.json'), 'utf8')) as {
    include: string[];
  };
  const assets = config.include.flatMap((folder) =>
    readdirSync(join(REPO, folder), { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && e.name.endsWith('.json'))
      .map((e) => relative(REPO, join(e.parentPath, e.name)).replaceAll('\\', '/'))
      .filter((a) => !a.split('/').includes('test')),
  );
  t.same(
    assets.filter((a) => !files.includes(`dist/${a}`)),
    [],
    `the ${assets.length} JSON assets are in dist/`,
  );
  const manifest = JSON.parse(
    await readFile(join(app.dir, 'node_modules/svc-webhooks/package.json'), 'utf8'),
  );
  t.notOk(manifest.dependencies.tsx, 'tsx is not a dependency of users');
  t.notOk(manifest.private, 'publishable');
});

t.test('examples and a consumer of every entry point compile under tsc --strict', async (t) => {
  // The examples as the package ships them (the README links them).
  await cp(join(app.dir, 'node_modules/svc-webhooks/examples'), app.dir, { recursive: true });
  await writeFile(
    join(app.dir, 'consumer.ts'),
    `import { createReceiver, WebhookReceiver, nodeListener, webhookMiddleware, HandlerPublisher,
  ForwardPublisher, DurableQueue, loadTrustFile, parseTrust, IdempotencyStore, PgReplayStore,
  TrustedKeyResolver, type ReceivedEvent } from 'svc-webhooks/receiver';
import { NotificationCore, Outbox, DeliveryQueue, DeliveryWorker, KeySet, migrateSender,
  type TaskStatusChange } from 'svc-webhooks/sender';
import { signWebhook, verifyWebhookSignature, generateSigningKey, brandProfile,
  canonicalizeTargetUri, contentDigestHeader, WEBHOOK_ERROR_CODES } from 'svc-webhooks/signing';
import { gradeReceiver, gradeSender, type ConformanceReport } from 'svc-webhooks/conformance';
export type Used = [ReceivedEvent, TaskStatusChange, ConformanceReport];
export const used = [createReceiver, WebhookReceiver, nodeListener, webhookMiddleware,
  HandlerPublisher, ForwardPublisher, DurableQueue, loadTrustFile, parseTrust, IdempotencyStore,
  PgReplayStore, TrustedKeyResolver, NotificationCore, Outbox, DeliveryQueue, DeliveryWorker,
  KeySet, migrateSender, signWebhook, verifyWebhookSignature, generateSigningKey, brandProfile,
  canonicalizeTargetUri, contentDigestHeader, WEBHOOK_ERROR_CODES, gradeReceiver, gradeSender];
// An internal module is not part of the package's surface.
// @ts-expect-error not exported
import type {} from 'svc-webhooks/receiver/pipeline/receiver.js';
`,
  );
  const sources = (await readdir(app.dir)).filter((f) => f.endsWith('.ts'));
  await writeFile(
    join(app.dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        outDir: 'out',
      },
      files: sources,
    }),
  );
  const r = await inApp(app, process.execPath, [tsc, '-p', '.'], {}, 120_000);
  t.equal(r.code, 0, r.stdout + r.stderr);
  const internal = await inApp(app, process.execPath, [
    '--input-type=module',
    '-e',
    "import('svc-webhooks/receiver/pipeline/receiver.js').catch((e) => console.log(e.code))",
  ]);
  t.match(internal.stdout, /ERR_PACKAGE_PATH_NOT_EXPORTED/, 'internal modules unreachable');
});

t.test('npx svc --help', async (t) => {
  const r = await inApp(app, npx, ['svc', '--help']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /conformance/);
  t.match(r.stdout, /receiver/);
});

t.test('a plain node receiver, svc send, svc conformance receiver', async (t) => {
  const gen = await inApp(app, npx, ['svc', 'keys', 'generate', '--out', 'keys']);
  t.equal(gen.code, 0, gen.stderr);
  const jwks = await inApp(app, npx, ['svc', 'keys', 'jwks', 'keys']);
  t.equal(jwks.code, 0, jwks.stderr);
  const tester = await inApp(app, npx, [
    'svc',
    'conformance',
    'receiver',
    '--print-jwks',
    '--save-key',
    'tester.json',
  ]);
  t.equal(tester.code, 0, tester.stderr);
  await writeFile(
    join(app.dir, 'trust.json'),
    JSON.stringify({
      senders: [
        { id: 'seller', jwks: JSON.parse(jwks.stdout) },
        { id: 'tester', jwks: JSON.parse(tester.stdout) },
      ],
    }),
  );
  const rx = await startApp(app, 'receiver-node-http.mjs', { RECEIVER_SCHEMA: rxSchema });

  const key = `whk_${uniqueName('pkgtest')}`;
  await writeFile(
    join(app.dir, 'payload.json'),
    JSON.stringify({
      idempotency_key: key,
      operation_id: 'op_pkg',
      task_id: 'task_pkg',
      task_type: 'create_media_buy',
      status: 'completed',
      timestamp: new Date().toISOString(),
      result: { media_buy_id: 'mb_pkg' },
    }),
  );
  for (const round of ['first', 'again']) {
    const send = await inApp(
      app,
      npx,
      ['svc', 'send', rx.url, '--keys', 'keys', '--payload', 'payload.json', '--timeout', '30'],
      {},
      90_000,
    );
    t.equal(send.code, 0, `${round}: ${send.stdout}${send.stderr}`);
    t.match(send.stdout, /HTTP 200 .*delivered/, `${round}: acknowledged`);
  }
  const handed = linesWith(rx.output(), key);
  t.equal(handed.length, 1, 'handed to the handler once');
  t.match(JSON.parse(handed[0]!), { sender: 'seller', idempotency_key: key, status: 'completed' });

  const graded = await inApp(
    app,
    npx,
    ['svc', 'conformance', 'receiver', rx.url, '--key', 'tester.json', '--json', '--yes'],
    {},
    180_000,
  );
  t.notMatch(graded.stderr, /Generated tester keys/, 'no keys generated when --key is given');
  const report = JSON.parse(graded.stdout) as {
    summary: { passed: number; failed: number };
    checks: Array<{ id: string; status: string; detail?: string }>;
  };
  t.same(
    report.checks.filter((c) => c.status === 'failed'),
    [],
    'every applicable check passes',
  );
  t.ok(report.summary.passed >= 20, `${report.summary.passed} checks passed`);
  t.equal(graded.code, 0);
});

t.test('the seller example delivers to the Koa receiver example', async (t) => {
  const koa = await startApp(app, 'receiver-koa.mjs', { RECEIVER_SCHEMA: koaSchema });
  const seller = await inApp(
    app,
    process.execPath,
    ['out/seller-task-handler.js'],
    {
      WEBHOOK_URL: koa.url,
      SVC_KEYS_DIR: 'keys',
      SENDER_SCHEMA: txSchema,
      QUEUE_PREFIX: prefix,
      SVC_SENDER_ALLOW_HOSTS: '127.0.0.1',
    },
    90_000,
  );
  t.equal(seller.code, 0, seller.stdout + seller.stderr);
  const task = /(task_\d+): webhook delivered/.exec(seller.stdout)?.[1];
  t.ok(task, seller.stdout);
  const handed = linesWith(koa.output(), `"task_id":"${task}"`);
  t.equal(handed.length, 1, 'the Koa app handled it once');
  t.match(JSON.parse(handed[0]!), { sender: 'seller', status: 'completed' });
});

t.test('the signing example', async (t) => {
  const r = await inApp(app, process.execPath, ['out/sign-and-verify.js']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /verified: keyid ed25519-\S+, sender seller-a/);
  t.match(r.stdout, /tampered: webhook_\w+/);
});
