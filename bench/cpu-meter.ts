/**
 * CPU time spent per event, by process, for the benchmarks: a figure that holds when other
 * work shares the machine (events/s and latency do not). Linux only (reads /proc); elsewhere
 * every reading is null and the column prints "-".
 *
 * A meter covers a process tree (the server and its cluster workers), the PostgreSQL
 * backends serving one application_name, and this process.
 */
import { readFileSync } from 'node:fs';
import type { Pool } from '../shared/infra/pg.js';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

function ticksOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return null;
  }
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

function treeTicks(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  const walk = (p: number) => {
    const t = ticksOf(p);
    if (t === null) return;
    out.set(p, t);
    for (const c of childrenOf(p)) walk(c);
  };
  walk(pid);
  return out;
}

async function backendTicks(pool: Pool, applicationName: string): Promise<Map<number, number>> {
  const { rows } = await pool.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE application_name = $1',
    [applicationName],
  );
  const out = new Map<number, number>();
  for (const r of rows) {
    const t = ticksOf(r.pid);
    if (t !== null) out.set(r.pid, t);
  }
  return out;
}

function delta(before: Map<number, number>, after: Map<number, number>): number {
  let ticks = 0;
  for (const [pid, t] of after) ticks += t - (before.get(pid) ?? 0);
  return (ticks / TICKS_PER_SECOND) * 1e6; // microseconds
}

export interface CpuPerEvent {
  /** CPU microseconds per event, or null where /proc cannot be read. */
  server: number | null;
  database: number | null;
  loadGenerator: number;
}

export class CpuMeter {
  private constructor(
    private readonly serverPid: number,
    private readonly pool: Pool,
    private readonly applicationName: string,
    private readonly server: Map<number, number>,
    private readonly db: Map<number, number>,
    private readonly self: NodeJS.CpuUsage,
  ) {}

  static async start(serverPid: number, pool: Pool, applicationName: string): Promise<CpuMeter> {
    return new CpuMeter(
      serverPid,
      pool,
      applicationName,
      treeTicks(serverPid),
      await backendTicks(pool, applicationName),
      process.cpuUsage(),
    );
  }

  async perEvent(events: number): Promise<CpuPerEvent> {
    const self = process.cpuUsage(this.self);
    const server = treeTicks(this.serverPid);
    const db = await backendTicks(this.pool, this.applicationName);
    const n = Math.max(events, 1);
    return {
      server: server.size ? delta(this.server, server) / n : null,
      database: db.size ? delta(this.db, db) / n : null,
      loadGenerator: (self.user + self.system) / n,
    };
  }
}
