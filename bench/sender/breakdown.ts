/**
 * The latency scenario's diagnosis: where each delivery spent its time between the
 * enqueue call and the receiver (per stage, p50/p99, the slowest 1 %), what ran around
 * the slow ones (GC pauses, event-loop delay), and how busy the machine was.
 */
import { readFileSync } from 'node:fs';

/** Stage times (Unix ms) the bench's queue notes for each row. */
export interface QueueTrace {
  committed: Map<string, number>;
  added: Map<string, number>;
}

export interface WorkerTrace {
  stages: Record<string, { active?: number; claimed?: number; sent?: number }>;
  gcs: Array<{ at: number; ms: number; kind: number }>;
  loop: { p99: number; max: number };
}

const STAGES = [
  ['insert+commit', 'committed'],
  ['addBulk', 'added'],
  ['job picked', 'active'],
  ['claimed', 'claimed'],
  ['signed, sent', 'sent'],
  ['received', 'received'],
] as const;

/**
 * Per-stage durations (each from the previous stage; 'job picked' from the commit, since
 * the worker may pick the job before addBulk's reply is read), p50/p99 of each, and for
 * the slowest 1 % by receipt, the mean of each stage and the GC pauses around them.
 */
export function breakdown(
  t0s: number[],
  idOf: string[],
  q: QueueTrace,
  trace: WorkerTrace,
  received: Record<string, number>,
  benchGcs: Array<{ at: number; ms: number }>,
  benchLoop: { p99: number; max: number },
): string {
  const runs: Array<{ i: number; total: number; d: number[] }> = [];
  for (let i = 0; i < t0s.length; i++) {
    const id = idOf[i];
    const w = id ? trace.stages[id] : undefined;
    const rx = received[i];
    if (!id || !w || rx === undefined) continue;
    const at = {
      committed: q.committed.get(id),
      added: q.added.get(id),
      active: w.active,
      claimed: w.claimed,
      sent: w.sent,
      received: rx,
    };
    const from = (k: keyof typeof at) =>
      k === 'committed' ? t0s[i]! : k === 'active' ? at.committed : at[prevOf(k)];
    const d = STAGES.map(([, k]) => (at[k] ?? NaN) - (from(k) ?? NaN));
    runs.push({ i, total: rx - t0s[i]!, d });
  }
  if (runs.length === 0) return '\n(no stage data)\n';
  const start = t0s[0]!;
  const out: string[] = [];
  const table = (title: string, set: typeof runs) => {
    if (set.length === 0) return;
    out.push('', `${title} (${set.length} deliveries, ms):`, '');
    out.push(
      '| stage | p50 | p99 | max | mean of slowest 1 % | total p99 were it always its p50 |',
      '|---|---|---|---|---|---|',
    );
    const slow = [...set].sort((a, b) => b.total - a.total).slice(0, Math.ceil(set.length / 100));
    STAGES.forEach(([label], k) => {
      const v = set
        .map((r) => r.d[k]!)
        .filter(Number.isFinite)
        .sort((a, b) => a - b);
      const m = slow.reduce((a, r) => a + r.d[k]!, 0) / slow.length;
      const p50 = pct(v, 50);
      const without = set
        .map((r) => r.total - (Number.isFinite(r.d[k]!) ? r.d[k]! - p50 : 0))
        .sort((a, b) => a - b);
      out.push(
        `| ${label} | ${p50.toFixed(1)} | ${pct(v, 99).toFixed(1)} | ${v.at(-1)?.toFixed(1)} | ${m.toFixed(1)} | ${pct(without, 99).toFixed(1)} |`,
      );
    });
    const slowAt = slow.map((r) => Math.round(t0s[r.i]! - start)).sort((a, b) => a - b);
    const totals = set.map((r) => r.total).sort((a, b) => a - b);
    out.push('', `total p50/p99: ${pct(totals, 50).toFixed(1)}/${pct(totals, 99).toFixed(1)} ms`);
    out.push(`slowest 1 % started at (ms into the run): ${slowAt.join(' ')}`);
  };
  const cold = (r: (typeof runs)[number]) => t0s[r.i]! - start < 1000;
  table('stage breakdown, first second', runs.filter(cold));
  table(
    'stage breakdown, after the first second',
    runs.filter((r) => !cold(r)),
  );
  const perSecond: string[] = [];
  for (let sec = 0; ; sec++) {
    const v = runs
      .filter((r) => Math.floor((t0s[r.i]! - start) / 1000) === sec)
      .map((r) => r.total)
      .sort((a, b) => a - b);
    if (v.length === 0) break;
    perSecond.push(`${pct(v, 50).toFixed(0)}/${pct(v, 99).toFixed(0)}`);
  }
  out.push(`p50/p99 by second of the run (ms): ${perSecond.join(' ')}`);
  const firstSecond: string[] = [];
  for (let b = 0; b < 10; b++) {
    const v = runs
      .filter((r) => Math.floor((t0s[r.i]! - start) / 100) === b)
      .map((r) => r.total)
      .sort((a, b) => a - b);
    firstSecond.push(`${pct(v, 50).toFixed(0)}/${pct(v, 99).toFixed(0)}`);
  }
  out.push(`p50/p99 by 100 ms of the first second (ms): ${firstSecond.join(' ')}`);
  const big = (gs: Array<{ at: number; ms: number }>) =>
    gs
      .filter((g) => g.ms >= 5)
      .map((g) => `${Math.round(g.at - start)}:${g.ms.toFixed(0)}`)
      .join(' ') || 'none';
  out.push(`worker GC pauses >= 5 ms (at:ms): ${big(trace.gcs)}`);
  out.push(`bench GC pauses >= 5 ms (at:ms): ${big(benchGcs)}`);
  out.push(
    `event-loop delay p99/max: worker ${trace.loop.p99.toFixed(1)}/${trace.loop.max.toFixed(1)} ms, bench ${benchLoop.p99.toFixed(1)}/${benchLoop.max.toFixed(1)} ms`,
    '',
  );
  return out.join('\n');
}

function prevOf(k: (typeof STAGES)[number][1]): (typeof STAGES)[number][1] {
  const i = STAGES.findIndex(([, s]) => s === k);
  return STAGES[i - 1]![1];
}

/** Jiffies of the whole machine (busy, all) and of the bench's own processes (Linux). */
export function cpuSnapshot(pids: number[]): { busy: number; all: number; ours: number } | null {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1);
    const v = f.map(Number);
    const all = v.reduce((a, b) => a + b, 0);
    const idle = v[3]! + (v[4] ?? 0);
    let ours = 0;
    for (const pid of pids) {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ours += Number(fields[11]) + Number(fields[12]);
    }
    return { busy: all - idle, all, ours };
  } catch {
    return null;
  }
}

export function cpuSince(
  a: ReturnType<typeof cpuSnapshot>,
  b: ReturnType<typeof cpuSnapshot>,
): string {
  if (!a || !b) return '';
  const all = b.all - a.all;
  const share = (x: number) => `${((x / all) * 100).toFixed(0)} %`;
  return (
    `machine CPU during the run: ${share(b.busy - a.busy)} busy, of which bench, worker and ` +
    `receiver ${share(b.ours - a.ours)} (the rest: PostgreSQL, Redis and anything else)`
  );
}

export function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
