/**
 * The first hour, as a new user lives it, with DATABASE_URL unset and every step a child
 * process: `svc start` comes up on the embedded PostgreSQL (its data directory in a temp
 * dir), the printed example commands work as pasted, a create_media_buy whose webhook
 * points at a local receiver is refused naming SVC_SENDER_ALLOW_HOSTS, and with only that
 * setting (restart: the warm start) the local `svc receiver` sidecar gets the task
 * webhooks, verified with the keys it discovered from the local agent after its logged
 * `--allow-http-loopback` opt-in; `svc conformance receiver` against that sidecar passes.
 */
import { demoBuy } from './demo-buy.js';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import type { ConformanceReport } from '../../../conformance/report/report.js';

// Cold tsx starts, initdb and the grading, on a shared machine: bounded, but generously.
t.setTimeout(540_000);

const ROOT = join(import.meta.dirname, '../../..');
const BIN = join(ROOT, 'bin/svc.js');
const exec = promisify(execFile);

interface Proc {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  waitFor(re: RegExp, ms: number): Promise<RegExpExecArray>;
  stop(): Promise<number | null>;
}

function startProc(args: string[], env: NodeJS.ProcessEnv): Proc {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return {
    child,
    out: () => out,
    err: () => err,
    async waitFor(re, ms) {
      const end = Date.now() + ms;
      for (;;) {
        const m = re.exec(out);
        if (m) return m;
        if (child.exitCode !== null || Date.now() > end) {
          throw new Error(`no ${re} (exit ${child.exitCode}):\n${out}\n${err}`);
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

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** A pasted command line: single-quoted words as a POSIX shell reads them. */
async function paste(line: string, env: NodeJS.ProcessEnv) {
  return exec('sh', ['-c', line], { cwd: ROOT, env, timeout: 120_000 }).catch(
    (e: { code: number; stdout: string; stderr: string }) => e,
  );
}

t.test('the first hour on a fresh data directory, DATABASE_URL unset', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'first-hour-'));
  // As root, the embedded server runs as the postgres user, which must enter the dir.
  await chmod(dir, 0o755);
  const dataDir = join(dir, 'data');
  const procs: Proc[] = [];
  t.teardown(async () => {
    for (const p of procs.reverse()) await p.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const env: NodeJS.ProcessEnv = { ...process.env, SVC_DATA_DIR: dataDir, LOG_LEVEL: 'info' };
  delete env.DATABASE_URL;
  delete env.SVC_SENDER_ALLOW_HOSTS;
  delete env.NODE_OPTIONS;
  // Fixed free ports: the agents keep their URLs across the restart below.
  const [salesPort, creativePort, signalsPort] = await Promise.all([
    freePort(),
    freePort(),
    freePort(),
  ]);
  const startEnv = {
    ...env,
    SVC_SALES_PORT: String(salesPort),
    SVC_CREATIVE_PORT: String(creativePort),
    SVC_SIGNALS_PORT: String(signalsPort),
    SVC_AGENTS_APPROVAL: '2',
  };

  // 1. svc start, first run: the embedded PostgreSQL is created under the data dir.
  let start = startProc(['start'], startEnv);
  procs.push(start);
  await start.waitFor(/^next: /m, 180_000);
  t.match(start.out(), /"event":"embedded_postgres_init"/, 'the cluster was created');
  t.match(start.out(), /postgres embedded, .*first-hour-.*postgres on 127\.0\.0\.1:\d+/);
  const sales = (await start.waitFor(/^sales\s+(http:\/\/127\.0\.0\.1:\d+)/m, 1000))[1]!;

  // 2. The printed examples work as pasted.
  const examples = [...start.out().matchAll(/^ {2}((?:SVC_DATA_DIR=\S+ )?npx svc call .*)$/gm)]
    .map((m) => m[1]!.replace(/\s+\(every task.*$/, ''))
    .filter((l) => !l.includes('--list') && !l.includes(' create_media_buy '));
  t.equal(examples.length, 3, 'one per agent');
  // The local-webhook buy: printed with the setting it needs, which is not set yet.
  t.match(
    start.out(),
    /^ {2}(?:SVC_DATA_DIR=\S+ )?npx svc call \S+ create_media_buy '\{.*\}' --as demo-buyer$/m,
  );
  t.match(start.out(), /need it allowed: restart with `npx svc start --allow-hosts 127\.0\.0\.1`/);
  t.match(start.out(), /^approval automatic after 2 s/m);
  const ran = await Promise.all(examples.map((line) => paste(line, env)));
  ran.forEach((r, i) => {
    t.equal((r as { code?: number }).code ?? 0, 0, `${examples[i]}: ${r.stderr}`);
    t.match(JSON.parse(r.stdout), { status: 'completed' });
  });

  // 3. The buyer's app and its sidecar, which discovers the local agent's keys over http.
  const events: Array<Record<string, unknown>> = [];
  const app = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.method === 'POST') events.push(JSON.parse(body) as Record<string, unknown>);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"count":0}');
    });
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => app.close(() => r())));
  const appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
  const keyFile = join(dir, 'tester-keys.json');
  const printed = await exec(
    process.execPath,
    [BIN, 'conformance', 'receiver', '--print-jwks', '--save-key', keyFile],
    { cwd: ROOT, env },
  );
  const trust = join(dir, 'trust.json');
  await writeFile(
    trust,
    JSON.stringify({
      senders: [
        { id: 'local-seller', agent_url: sales },
        { id: 'conformance-tester', jwks: JSON.parse(printed.stdout) },
      ],
    }),
  );
  const sidecar = startProc(
    [
      'receiver',
      '--listen',
      '127.0.0.1:0',
      '--trust',
      trust,
      '--forward',
      `${appUrl}/events`,
      '--allow-http-loopback',
    ],
    env,
  );
  procs.push(sidecar);
  const base = (await sidecar.waitFor(/receiver listening on (\S+)/, 120_000))[1]!.replace(
    /\/$/,
    '',
  );
  t.match(sidecar.out(), /"event":"http_loopback_discovery_allowed"/, 'the opt-in is logged');

  // 4. A buy whose webhooks go to the sidecar: refused, naming the one setting that allows it.
  const buy = (ref: string) =>
    JSON.stringify(
      demoBuy(ref, Date.now() + 7 * 86400_000, {
        push_notification_config: { url: `${base}/webhooks`, operation_id: ref },
      }),
    );
  const call = (args: string[]) =>
    exec(process.execPath, [BIN, 'call', sales, ...args, '--as', 'demo-buyer'], {
      cwd: ROOT,
      env,
    }).catch((e: { code: number; stdout: string; stderr: string }) => e);
  const refused = await call(['create_media_buy', buy('fh-refused')]);
  t.equal((refused as { code?: number }).code, 1);
  t.match(
    refused.stdout,
    /must use https \(for local testing, allow the host with SVC_SENDER_ALLOW_HOSTS=127\.0\.0\.1: restart `svc start --allow-hosts 127\.0\.0\.1`\)/,
  );

  // 5. Only that setting, on a restart (the warm start): the task webhooks arrive, verified.
  t.equal(await start.stop(), 0, 'svc start stops cleanly on SIGTERM');
  // Manual approval: `svc approve` below, without the setting, must deliver it too.
  start = startProc(['start'], {
    ...startEnv,
    SVC_SENDER_ALLOW_HOSTS: '127.0.0.1',
    SVC_AGENTS_APPROVAL: 'manual',
  });
  procs.push(start);
  await start.waitFor(/^next: /m, 180_000);
  t.notMatch(start.out(), /embedded_postgres_init/, 'warm: the cluster is reused');
  t.match(start.out(), /webhooks to 127\.0\.0\.1: allowed/);
  t.match(start.out(), /^approval manual: pending buys wait for `npx svc approve <task_id>`/m);
  t.match(start.out(), new RegExp(`^sales\\s+${sales}`, 'm'), 'same agent URL');
  const statuses = () =>
    events
      .map((e) => JSON.stringify(e))
      .filter((e) => e.includes('fh-buy'))
      .map((e) => /"status":"([a-z-]+)"/.exec(e)?.[1] ?? '?');
  const accepted = await exec(
    process.execPath,
    [BIN, 'call', sales, 'create_media_buy', buy('fh-buy'), '--as', 'demo-buyer'],
    { cwd: ROOT, env },
  );
  const created = JSON.parse(accepted.stdout) as { status: string; task_id: string };
  t.match(created, { status: 'submitted' });
  const end = Date.now() + 120_000;
  while (!statuses().includes('working') && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 200));
  }
  // The operator's approval from another process, with none of svc start's variables.
  const approved = await exec(process.execPath, [BIN, 'approve', created.task_id], {
    cwd: ROOT,
    env,
  }).catch((e: { code: number; stdout: string; stderr: string }) => e);
  t.equal((approved as { code?: number }).code ?? 0, 0, approved.stderr);
  while (!statuses().includes('completed') && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 200));
  }
  t.ok(statuses().includes('completed'), `task webhooks reached the app: ${statuses().join(', ')}`);
  t.match(
    start.out(),
    /"event":"webhook_attempt".*"state":"delivered"/,
    'one info line per attempt',
  );
  t.notMatch(start.out(), /fh-buy/, 'never a body in the log');
  t.notMatch(sidecar.out(), /key_discovery_failed/, 'discovery of the local agent worked');

  // 6. The conformance kit against that sidecar passes.
  const graded = await exec(
    process.execPath,
    [BIN, 'conformance', 'receiver', `${base}/webhooks`, '--key', keyFile, '--json'],
    { cwd: ROOT, env, timeout: 240_000, maxBuffer: 16 << 20 },
  ).catch((e: { code: number; stdout: string }) => e);
  const report = JSON.parse(graded.stdout) as ConformanceReport;
  t.same(
    report.checks.filter((c) => c.status === 'failed').map((c) => `${c.id}: ${c.detail}`),
    [],
  );
  t.equal((graded as { code?: number }).code ?? 0, 0, 'exit 0');
  t.equal(await start.stop(), 0);
});
