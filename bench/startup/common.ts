/** What the startup sections share: the build, timing of repeated runs, the summary line. */
import { spawn, spawnSync, type SpawnOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const SVC = `${REPO}bin/svc.js`;

export interface StartupContext {
  runs: number;
  log: (line: string) => void;
}

export interface StartupSection {
  /** `--only` name. */
  name: string;
  description: string;
  run(ctx: StartupContext): Promise<void>;
}

/** The two ways bin/svc.js runs our code (bin/runtime.js). */
export const RUNTIMES = ['dist', 'source'] as const;
export type Runtime = (typeof RUNTIMES)[number];
export const RUNTIME_LABEL: Record<Runtime, string> = {
  dist: 'compiled (dist/)',
  source: 'sources through tsx',
};

export async function ensureBuilt(): Promise<void> {
  const r = spawnSync(process.execPath, [`${REPO}scripts/build.mjs`], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error('npm run build failed');
}

export interface Stats {
  min: number;
  median: number;
  max: number;
}

export function stats(samples: number[]): Stats {
  const s = [...samples].sort((a, b) => a - b);
  return { min: s[0]!, median: s[Math.floor((s.length - 1) / 2)]!, max: s[s.length - 1]! };
}

export function line(label: string, s: Stats, note = ''): string {
  const f = (n: number) => n.toFixed(0).padStart(5);
  return `${label.padEnd(28)} ${f(s.min)} / ${f(s.median)} / ${f(s.max)} ms${note ? `  ${note}` : ''}`;
}

export interface ProcessTime {
  wallMs: number;
  /** User + system CPU of the process, when GNU time is installed (load-independent). */
  cpuMs?: number;
}

const GNU_TIME = '/usr/bin/time';
const hasGnuTime = existsSync(GNU_TIME);

/** Wall (and CPU) time of one process from spawn to exit; rejects on a non-zero exit. */
export async function timeProcess(
  args: string[],
  options: SpawnOptions = {},
): Promise<ProcessTime> {
  const out = hasGnuTime ? join(tmpdir(), `startup-time-${randomBytes(4).toString('hex')}`) : '';
  const [file, argv] = hasGnuTime
    ? [GNU_TIME, ['-f', '%U %S', '-o', out, process.execPath, ...args]]
    : [process.execPath, args];
  const wallMs = await new Promise<number>((resolve, reject) => {
    const start = performance.now();
    const child = spawn(file, argv, { stdio: 'ignore', ...options });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(performance.now() - start);
      else reject(new Error(`${args.join(' ')} exited ${code ?? signal}`));
    });
  });
  if (!hasGnuTime) return { wallMs };
  try {
    const [user, sys] = (await readFile(out, 'utf8')).trim().split(/\s+/).map(Number);
    return { wallMs, cpuMs: ((user ?? 0) + (sys ?? 0)) * 1000 };
  } finally {
    await rm(out, { force: true });
  }
}

/** Wall line, and the CPU line when measured. */
export function timeLines(label: string, samples: ProcessTime[]): string[] {
  const lines = [line(label, stats(samples.map((s) => s.wallMs)), 'wall')];
  const cpu = samples.flatMap((s) => (s.cpuMs === undefined ? [] : [s.cpuMs]));
  if (cpu.length === samples.length) lines.push(line('', stats(cpu), 'CPU (user + sys)'));
  return lines;
}

/** The environment bin/svc.js gets for one runtime, without tsx loaders inherited from npm run bench. */
export function runtimeEnv(
  runtime: Runtime,
  extra: Record<string, string> = {},
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, SVC_RUNTIME: runtime, ...extra };
  delete env.NODE_OPTIONS;
  return env;
}
