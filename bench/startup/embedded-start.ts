/**
 * `npm start` time to ready on the embedded PostgreSQL (DATABASE_URL unset): `svc start`
 * as a child process on a fresh data directory (cold: initdb, then the first migration and
 * seed), then again on the same one (warm), `--runs N` times each (default 3). Ready is
 * the banner's last line. CPU is the child's user+system time to ready (from /proc).
 */
import type { StartupContext, StartupSection } from './common.js';
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'svc.js');

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });
}

/** User+system CPU seconds of a process and its exited children (Linux /proc). */
async function cpuSeconds(pid: number): Promise<number | null> {
  try {
    const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
    // utime, stime, cutime, cstime: fields 14-17 (1-based), here offset by the 2 skipped.
    const ticks = [11, 12, 13, 14].reduce((s, i) => s + Number(stat[i]), 0);
    return ticks / 100;
  } catch {
    return null;
  }
}

export async function startOnce(
  dataDir: string,
): Promise<{ readyMs: number; cpuS: number | null; stopMs: number }> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SVC_DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    SVC_SALES_PORT: String(await freePort()),
    SVC_CREATIVE_PORT: String(await freePort()),
    SVC_SIGNALS_PORT: String(await freePort()),
  };
  delete env.DATABASE_URL;
  const started = performance.now();
  const child = spawn(process.execPath, [BIN, 'start'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready in 180 s: ${out}${err}`)), 180_000);
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (/^next: /m.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`svc start exited ${code}: ${err}`)));
  });
  const readyMs = performance.now() - started;
  const cpuS = await cpuSeconds(child.pid!);
  const stopAt = performance.now();
  child.kill('SIGTERM');
  await exited;
  return { readyMs, cpuS, stopMs: performance.now() - stopAt };
}

/** `npm start` to ready on the embedded PostgreSQL: cold (first run, initdb) and warm. */
export const embeddedStart: StartupSection = {
  name: 'embedded-start',
  description:
    'svc start with DATABASE_URL unset, to ready on the embedded PostgreSQL (cold, warm)',
  async run(ctx: StartupContext): Promise<void> {
    // Each run starts PostgreSQL twice (seconds each): at most 3 runs.
    const runs = Math.min(ctx.runs, 3);
    const fmt = (r: { readyMs: number; cpuS: number | null; stopMs: number }) =>
      `ready ${(r.readyMs / 1000).toFixed(2)} s (svc process CPU ${r.cpuS === null ? '?' : r.cpuS.toFixed(2)} s), stop ${(r.stopMs / 1000).toFixed(2)} s`;
    for (let n = 0; n < runs; n++) {
      const dir = await mkdtemp(join(tmpdir(), 'bench-startup-'));
      // As root the embedded server runs as the postgres user, which must enter the dir.
      await chmod(dir, 0o755);
      const dataDir = join(dir, 'data');
      try {
        const cold = await startOnce(dataDir);
        const warm = await startOnce(dataDir);
        ctx.log(`run ${n + 1}: cold (first run) ${fmt(cold)}; warm ${fmt(warm)}`);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
  },
};
