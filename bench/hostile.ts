/**
 * `npm run bench -- hostile`: N stalled, unauthenticated 1 MiB uploads against the sidecar
 * as `svc receiver` runs it (its own process, default flags), and the sidecar's RSS while
 * they are held and after they close. Targets: under 400 MB during, under 200 MB after.
 *
 * Each upload declares `Content-Length: 1048576`, sends all but the last byte and stalls.
 * Scenarios (`--kinds`, default all):
 * - `forged`: an RFC 9421 route, well-formed signature headers naming a key nobody trusts
 *   (refused at key resolution, before the body);
 * - `unsigned`: an RFC 9421 route with no signature at all;
 * - `hmac`: a legacy HMAC route with well-formed headers and a current timestamp: the body
 *   is needed before the MAC can be checked, so these are held against the body budget.
 *
 * Options: --uploads N (default 2000, at most 5000), --hold-seconds S (how long the uploads
 * are held, default 10), --kinds forged,unsigned,hmac. Bounded: each scenario takes at most
 * hold + 30 s. Loopback only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brandProfile } from '../shared/brand.js';
import { createPool, dropSchema, LOCAL_DATABASE_URL } from '../shared/infra/pg.js';
import { generateSigningKey, publishedJwk } from '../shared/signing/keys.js';

const SVC = fileURLToPath(new URL('../bin/svc.js', import.meta.url));
const KINDS = ['forged', 'unsigned', 'hmac'] as const;
type Kind = (typeof KINDS)[number];
const MIB = 1024 * 1024;
const SECRET = 'hostile-bench-secret-0123456789-abcdef';

interface Opts {
  uploads: number;
  holdSeconds: number;
  kinds: Kind[];
}

function parseArgs(args: string[]): Opts {
  const num = (name: string, dflt: number, max: number) => {
    const i = args.indexOf(`--${name}`);
    const v = i >= 0 ? Number(args[i + 1]) : dflt;
    if (!Number.isInteger(v) || v <= 0 || v > max) {
      throw new Error(`--${name} must be an integer 1-${max}`);
    }
    return v;
  };
  const k = args.indexOf('--kinds');
  const kinds = (k >= 0 ? String(args[k + 1] ?? '').split(',') : [...KINDS]) as Kind[];
  const bad = kinds.filter((x) => !KINDS.includes(x));
  if (bad.length) throw new Error(`--kinds takes a comma list of ${KINDS.join(', ')}`);
  return {
    uploads: num('uploads', 2000, 5000),
    holdSeconds: num('hold-seconds', 10, 120),
    kinds,
  };
}

function rssMb(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function startSidecar(
  trust: string,
  app: string,
  env: Record<string, string>,
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    process.execPath,
    [SVC, 'receiver', '--listen', '127.0.0.1:0', '--trust', trust, '--forward', app],
    {
      // The sidecar's own default is the embedded server of `svc start`: the bench names
      // the database it uses itself, so it runs on a machine where svc start never ran.
      env: {
        ...process.env,
        DATABASE_URL: process.env.DATABASE_URL ?? LOCAL_DATABASE_URL,
        LOG_LEVEL: 'warn',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (err += d));
  const deadline = Date.now() + 30_000;
  for (;;) {
    const m = /listening on (\S+)/.exec(out);
    if (m) return { child, url: m[1] as string };
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(
        `the sidecar did not start (exit ${child.exitCode}): ${(err + out).slice(0, 500)}`,
      );
    }
    await sleep(50);
  }
}

function head(kind: Kind, host: string): string {
  const lines = [`Host: ${host}`, 'Content-Type: application/json', `Content-Length: ${MIB}`];
  if (kind === 'forged') {
    const now = Math.floor(Date.now() / 1000);
    lines.push(
      `Signature-Input: sig1=("@method" "@target-uri" "@authority" "content-type" "content-digest");created=${now};expires=${now + 300};nonce="AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";keyid="nobody-trusts-this";alg="ed25519";tag="svc/webhook-signing/v1"`,
      `Signature: sig1=:${Buffer.alloc(64, 1).toString('base64')}:`,
      `Content-Digest: sha-256=:${Buffer.alloc(32, 2).toString('base64')}:`,
    );
  }
  if (kind === 'hmac') {
    lines.push(
      `X-SVC-Signature: sha256=${'0'.repeat(64)}`,
      `X-SVC-Timestamp: ${Math.floor(Date.now() / 1000)}`,
    );
  }
  const path = kind === 'hmac' ? '/legacy/hmac/hook' : '/webhooks/bench';
  return `POST ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`;
}

interface Upload {
  sock: Socket;
  status: string | null;
  closed: boolean;
}

/** Opens the uploads in waves of 100; each sends all but its last byte and stalls. */
async function openUploads(kind: Kind, port: number, n: number): Promise<Upload[]> {
  const body = Buffer.alloc(MIB - 1, 0x20); // shared by every socket: no copy per upload
  const out: Upload[] = [];
  for (let i = 0; i < n; i += 100) {
    const wave = Array.from({ length: Math.min(100, n - i) }, () => {
      const u: Upload = { sock: connect(port, '127.0.0.1'), status: null, closed: false };
      u.sock.on('data', (d) => {
        u.status ??= /^HTTP\/1\.1 (\d{3})/.exec(String(d))?.[1] ?? '?';
      });
      u.sock.on('error', () => {});
      u.sock.on('close', () => (u.closed = true));
      u.sock.once('connect', () => {
        u.sock.write(head(kind, `127.0.0.1:${port}`));
        u.sock.write(body);
      });
      return u;
    });
    out.push(...wave);
    await sleep(20);
  }
  return out;
}

function tally(uploads: Upload[]): string {
  const by = new Map<string, number>();
  for (const u of uploads) {
    const k = u.status ?? (u.closed ? 'closed' : 'open');
    by.set(k, (by.get(k) ?? 0) + 1);
  }
  return [...by.entries()]
    .sort()
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ');
}

async function scenario(kind: Kind, o: Opts, trust: string, app: string, schema: string) {
  const { child, url } = await startSidecar(trust, app, { SVC_RECEIVER_SCHEMA: schema });
  const pid = child.pid as number;
  try {
    await sleep(1000);
    const idle = rssMb(pid);
    const uploads = await openUploads(kind, Number(new URL(url).port), o.uploads);
    let peak = 0;
    const until = Date.now() + o.holdSeconds * 1000;
    while (Date.now() < until) {
      peak = Math.max(peak, rssMb(pid) ?? 0);
      await sleep(250);
    }
    const during = tally(uploads);
    for (const u of uploads) u.sock.destroy();
    // Let the sidecar notice the closes and its heap shrink (bounded).
    let after = rssMb(pid) ?? 0;
    for (let i = 0; i < 20; i++) {
      await sleep(500);
      after = rssMb(pid) ?? after;
    }
    process.stdout.write(
      `| ${kind} | ${o.uploads} | ${idle ?? '-'} | ${peak} | ${after} | ${during} |\n`,
    );
  } finally {
    child.kill('SIGKILL');
  }
}

export async function run(args: string[]): Promise<void> {
  const o = parseArgs(args);
  const profile = brandProfile('svc');
  const key = await generateSigningKey('ed25519', 'hostile-bench');
  const dir = mkdtempSync(join(tmpdir(), 'hostile-'));
  const trust = join(dir, 'trust.json');
  writeFileSync(
    trust,
    JSON.stringify({
      senders: [{ id: 'bench', jwks: { keys: [publishedJwk(key.key, profile)] } }],
      legacy: [
        { path_prefix: '/legacy/hmac', sender: 'legacy', scheme: 'HMAC-SHA256', secrets: [SECRET] },
      ],
    }),
  );
  const app: Server = createServer((_, res) => res.end('ok'));
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  const appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}/events`;
  const pool = createPool({ connectionString: process.env.DATABASE_URL ?? LOCAL_DATABASE_URL });
  const schema = `bench_hostile_${process.pid}`;
  process.stdout.write(
    `sidecar RSS (MB) with ${o.uploads} stalled unauthenticated 1 MiB uploads held ${o.holdSeconds} s ` +
      `(default flags: 1024 connections, 64 MiB body budget); target < 400 during, < 200 after\n\n` +
      '| kind | uploads | idle | peak during | 10 s after close | answers while held |\n' +
      '| --- | --- | --- | --- | --- | --- |\n',
  );
  try {
    for (const kind of o.kinds) await scenario(kind, o, trust, appUrl, schema);
  } finally {
    await dropSchema(pool, schema).catch(() => {});
    await pool.end();
    await new Promise<void>((r) => app.close(() => r()));
  }
}
