/**
 * `npm run bench -- <suite> --base <rev> [--rounds N]`: the same suite on a base commit and on
 * this tree, alternating, then every figure side by side.
 *
 * Why alternating child processes: the machine's speed drifts (other load, thermal, caches), so
 * a figure is only comparable with one taken next to it. Each round runs the base first, then
 * this tree, each in a fresh process, and the table shows the range over the rounds.
 *
 * Why a generic table: the base's suites print plain text and cannot be changed. A line is a
 * figure when it holds numbers; two lines are the same figure when they read the same with
 * their numbers blanked out ("p99 # ms at #/s"). That matches every suite's output without
 * asking them for a format.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

export interface CompareOptions {
  suite: string;
  args: string[];
  base: string;
  rounds: number;
}

// A number stands on its own: digits inside a name ("p99", "ES256") are part of the label, and
// a minus is a sign only where it does not join two numbers ("2-3x" is a range of 2 and 3).
const NUMBER = /(?:(?<![\w)])-|(?<![\w.]))\d[\d,]*(?:\.\d+)?/g;

/** Splits `--base REV` and `--rounds N` off a suite's arguments; null when there is no --base. */
export function parseCompareArgs(suite: string, args: string[]): CompareOptions | null {
  const rest: string[] = [];
  let base: string | undefined;
  let rounds = 2;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--base' || a === '--rounds') {
      const v = args[++i];
      if (v === undefined || v.startsWith('--')) throw new Error(`bench: ${a} needs a value`);
      if (a === '--base') base = v;
      else {
        rounds = Number(v);
        if (!Number.isInteger(rounds) || rounds < 1 || rounds > 20) {
          throw new Error(`bench: --rounds takes a whole number from 1 to 20, got "${v}"`);
        }
      }
    } else rest.push(a);
  }
  return base === undefined ? null : { suite, args: rest, base, rounds };
}

const repoRoot = resolve(import.meta.dirname, '..');

/** A checkout of `rev` with its own node_modules, made once under .bench-base/ and reused. */
function baseCheckout(rev: string): { dir: string; sha: string } {
  let sha: string;
  try {
    sha = execFileSync('git', ['rev-parse', '--short=7', `${rev}^{commit}`], {
      cwd: repoRoot,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }).trim();
  } catch {
    throw new Error(`bench: --base "${rev}" is not a commit of this repository`);
  }
  const dir = join(repoRoot, '.bench-base', sha);
  if (!existsSync(join(dir, 'node_modules'))) {
    process.stdout.write(`bench: preparing a checkout of ${sha} in ${dir} (once)\n`);
    mkdirSync(dir, { recursive: true });
    execFileSync('sh', ['-c', `git archive ${sha} | tar -x -C "${dir}"`], { cwd: repoRoot });
    execFileSync('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], {
      cwd: dir,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  }
  return { dir, sha };
}

/** Runs one suite in `dir` as a child process; its output is streamed and also returned. */
function runSuite(dir: string, label: string, suite: string, args: string[]): Promise<string> {
  process.stdout.write(`\n### ${suite} @ ${label}\n`);
  return new Promise((done) => {
    const child = spawn(process.execPath, ['bin/bench.js', suite, ...args], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      process.stdout.write(chunk);
    });
    child.once('close', (code) => {
      if (code !== 0) process.stdout.write(`(${label}: exited ${code})\n`);
      done(out);
    });
  });
}

/** Figure lines keyed by their shape (numbers blanked), each with its numbers per round. */
export function figures(outputs: string[]): Map<string, number[][]> {
  const byShape = new Map<string, number[][]>();
  for (const out of outputs) {
    const seen = new Set<string>();
    for (const line of out.split('\n')) {
      const nums = line.match(NUMBER);
      if (!nums) continue;
      const shape = line.replace(NUMBER, '#').replace(/\s+/g, ' ').trim();
      if (seen.has(shape)) continue; // the first of repeated shapes in one run
      seen.add(shape);
      const values = nums.map((n) => Number(n.replace(/,/g, '')));
      const rows = byShape.get(shape) ?? [];
      rows.push(values);
      byShape.set(shape, rows);
    }
  }
  return byShape;
}

/** "3,713-3,752" style range per number position over the rounds. */
function ranges(rows: number[][] | undefined): string {
  if (!rows || rows.length === 0) return '-';
  const width = Math.max(...rows.map((r) => r.length));
  const cols: string[] = [];
  for (let i = 0; i < width; i++) {
    const vs = rows.map((r) => r[i]).filter((v): v is number => v !== undefined);
    const lo = Math.min(...vs);
    const hi = Math.max(...vs);
    const fmt = (v: number): string => v.toLocaleString('en-US', { maximumFractionDigits: 2 });
    cols.push(lo === hi ? fmt(lo) : `${fmt(lo)}-${fmt(hi)}`);
  }
  return cols.join(' | ');
}

export async function compare(opts: CompareOptions): Promise<void> {
  const { dir, sha } = baseCheckout(opts.base);
  const baseOut: string[] = [];
  const thisOut: string[] = [];
  for (let round = 1; round <= opts.rounds; round++) {
    process.stdout.write(`\n## round ${round} of ${opts.rounds}\n`);
    baseOut.push(await runSuite(dir, sha, opts.suite, opts.args));
    thisOut.push(await runSuite(repoRoot, 'this tree', opts.suite, opts.args));
  }
  const b = figures(baseOut);
  const t = figures(thisOut);
  process.stdout.write(
    `\n## ${opts.suite}: side by side (${sha} | this tree), ranges over ${opts.rounds} rounds\n`,
  );
  process.stdout.write('(# marks each number; values in the order they stand in the line)\n\n');
  for (const [shape, rows] of t) {
    process.stdout.write(
      `${shape}\n    ${sha}: ${ranges(b.get(shape))}\n    this: ${ranges(rows)}\n`,
    );
  }
  const onlyBase = [...b.keys()].filter((s) => !t.has(s));
  if (onlyBase.length > 0) {
    process.stdout.write(`\nonly at ${sha}:\n`);
    for (const s of onlyBase) process.stdout.write(`${s}\n    ${sha}: ${ranges(b.get(s))}\n`);
  }
}
