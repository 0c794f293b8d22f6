/**
 * `svc receiver`: spawn until GET /healthz answers 200 (PostgreSQL reached, tables migrated,
 * listening). One throwaway schema for all runs; the first run, which creates the tables, is
 * reported on its own.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brandProfile } from '../../shared/brand.js';
import { createPool, dropSchema, LOCAL_DATABASE_URL } from '../../shared/infra/pg.js';
import { generateSigningKey, publishedJwk } from '../../shared/signing/keys.js';
import {
  line,
  RUNTIME_LABEL,
  RUNTIMES,
  runtimeEnv,
  stats,
  SVC,
  type Runtime,
  type StartupSection,
} from './common.js';

const DATABASE_URL = process.env.DATABASE_URL ?? LOCAL_DATABASE_URL;

async function healthy(url: string): Promise<boolean> {
  try {
    const r = await fetch(`${url}/healthz`);
    await r.arrayBuffer();
    return r.status === 200;
  } catch {
    return false;
  }
}

/** One sidecar start: ms from spawn to the first 200 from /healthz. */
async function oneStart(runtime: Runtime, trust: string, schema: string): Promise<number> {
  const start = performance.now();
  const child = spawn(
    process.execPath,
    [
      SVC,
      'receiver',
      '--trust',
      trust,
      '--listen',
      '127.0.0.1:0',
      '--forward',
      'http://127.0.0.1:9/app',
    ],
    {
      env: runtimeEnv(runtime, { DATABASE_URL, SVC_RECEIVER_SCHEMA: schema, LOG_LEVEL: 'warn' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (err += c));
  try {
    const deadline = Date.now() + 60_000;
    let url: string | undefined;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`svc receiver exited ${child.exitCode}: ${err}`);
      url ??= /receiver listening on (http:\/\/\S+)/.exec(out)?.[1];
      if (url && (await healthy(url))) return performance.now() - start;
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error(`svc receiver not healthy within 60 s: ${err}`);
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    child.kill('SIGKILL');
  }
}

export const sidecarReady: StartupSection = {
  name: 'sidecar',
  description: '`svc receiver` spawn until /healthz answers 200',
  async run(ctx) {
    const dir = await mkdtemp(join(tmpdir(), 'bench-startup-'));
    const pool = createPool({ connectionString: DATABASE_URL });
    const schema = `bench_start_${randomBytes(4).toString('hex')}`;
    try {
      const profile = brandProfile('svc');
      const { key } = await generateSigningKey('ed25519');
      const trust = join(dir, 'trust.json');
      await writeFile(
        trust,
        JSON.stringify({
          senders: [{ id: 'bench', jwks: { keys: [publishedJwk(key, profile)] } }],
        }),
      );
      const first = await oneStart('dist', trust, schema);
      ctx.log(line('first start (creates tables)', stats([first]), 'compiled'));
      for (const runtime of RUNTIMES) {
        const samples = [];
        for (let i = 0; i < ctx.runs; i++) samples.push(await oneStart(runtime, trust, schema));
        ctx.log(line(RUNTIME_LABEL[runtime], stats(samples)));
      }
    } finally {
      await dropSchema(pool, schema).catch(() => {});
      await pool.end();
      await rm(dir, { recursive: true, force: true });
    }
  },
};
