/**
 * `npm run bench -- claim-cost [rounds]`: what one claim statement costs, alone, on one
 * session that commits asynchronously (the worker's state pool): the statement before
 * item 7 of issue 13 (c5cad56), the full claim that records an interrupted attempt (the
 * only claim until the quick one) and the quick claim the worker runs first, each unnamed
 * (as the outbox runs them: planned per call) and prepared, with `durableClaims` off and on.
 * They alternate in blocks of 25 single-row claims, so a machine loaded by others weighs
 * on each alike; the figures are per-claim wall p50/p90/p99 and differences of p50s. The
 * durable ones' extra is the WAL flush (fsync) the request waits for before the wire.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createPool, dropSchema, LOCAL_DATABASE_URL } from '../../shared/infra/pg.js';
import { claimSql, quickClaimSql } from '../../sender/outbox/attempts.js';
import { createStatePool } from '../../sender/outbox/outbox.js';
import { migrateSender } from '../../sender/schema.js';
import { dayBounds } from '../../sender/outbox/partitions.js';
import { prepared } from '../../shared/infra/prepared.js';
import { pct } from './breakdown.js';

/** The claim of c5cad56 (before the open-attempt mark and its durable commit). */
function baseClaimSql(s: string): string {
  return `UPDATE ${s}.outbox o
          SET attempts = attempts + 1, first_attempt_at = coalesce(first_attempt_at, now()),
              next_attempt_at = now() + v.lease * interval '1 millisecond'
         FROM unnest($1::bigint[], $2::int[]) AS v(id, lease)
        WHERE o.id = v.id AND o.state = 'pending'
          AND o.next_attempt_at <= now() + interval '50 milliseconds'
          AND (o.first_attempt_at IS NULL
               OR o.first_attempt_at + o.horizon_seconds * interval '1 second' > now())
        RETURNING o.id::text AS id, idempotency_key, body, target_url, auth_mode, auth_secret, channel,
          notification_type, notification_id, media_buy_id, media_buy_ids, principal_id,
          subscriber_id, sequence_number, attempts, horizon_seconds,
          (extract(epoch from first_attempt_at) * 1000)::float8 AS first_ms,
          (extract(epoch from now()) * 1000)::float8 AS now_ms`;
}

/** utime + stime of a process, in clock ticks (10 ms on Linux); 0 where /proc is absent. */
export function backendTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(f[11]) + Number(f[12]);
  } catch {
    return 0;
  }
}

export async function run(args: string[]): Promise<void> {
  const rounds = Number(args[0] ?? 40);
  const block = 25;
  const url = process.env.DATABASE_URL ?? LOCAL_DATABASE_URL;
  const pool = createPool({ connectionString: url, max: 2 });
  const state = createStatePool(url, 1);
  const schema = `bench_claim_${randomBytes(4).toString('hex')}`;
  // Unnamed statements are parsed and planned on every run; named ones once per session.
  const unnamed = (text: string) => ({ name: undefined, text });
  const modes = {
    'c5cad56 claim': unnamed(baseClaimSql(schema)),
    'claim, durableClaims off, unnamed': unnamed(claimSql(schema, false)),
    'claim, durableClaims on, unnamed': unnamed(claimSql(schema, true)),
    'claim, durableClaims off, prepared': prepared('claim', claimSql(schema, false)),
    'claim, durableClaims on, prepared': prepared('claim', claimSql(schema, true)),
    'quick claim, durableClaims off, prepared': prepared('quick', quickClaimSql(schema, false)),
    'quick claim, durableClaims on, prepared': prepared('quick', quickClaimSql(schema, true)),
    'quick claim, durableClaims off, unnamed': unnamed(quickClaimSql(schema, false)),
    'quick claim, durableClaims on, unnamed (the worker)': unnamed(quickClaimSql(schema, true)),
  };
  const names = Object.keys(modes) as Array<keyof typeof modes>;
  try {
    await migrateSender(pool, schema);
    const n = (rounds + 1) * block * names.length;
    const body = Buffer.from(JSON.stringify({ pad: 'x'.repeat(600) }));
    const { rows } = await pool.query<{ id: string }>(
      `INSERT INTO ${schema}.outbox (idempotency_key, body, target_url, auth_mode, channel,
         notification_type, horizon_seconds)
       SELECT 'bench_claim_' || g || '_' || md5(g::text), $1, 'http://127.0.0.1/hook', 'rfc9421',
              'task', 'task_status', 86400
         FROM generate_series(1, $2) g RETURNING id::text`,
      [body, n],
    );
    const ids = rows.map((r) => r.id);
    const times: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
    // CPU time of the session's backend per statement (Linux, same machine): what load from
    // others does not stretch, unlike the wall times.
    const backend = (await state.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!
      .pid;
    const cpu: Record<string, number> = Object.fromEntries(names.map((k) => [k, 0]));
    let next = 0;
    for (let r = 0; r <= rounds; r++) {
      for (const k of r % 2 ? [...names].reverse() : names) {
        const cpu0 = backendTicks(backend);
        for (let i = 0; i < block; i++) {
          const t = performance.now();
          const id = ids[next++]!;
          // The claims since issue 19 take the id range of the ids' days ($3, $4).
          const values =
            k === 'c5cad56 claim' ? [[id], [4500]] : [[id], [4500], ...dayBounds([id])];
          const res = await state.query({ ...modes[k], values });
          const ms = performance.now() - t;
          if (res.rowCount !== 1) throw new Error(`${k}: claimed ${res.rowCount} rows`);
          // Round 0 warms the session's plans and caches: not counted.
          if (r > 0) times[k]!.push(ms);
        }
        if (r > 0) cpu[k]! += backendTicks(backend) - cpu0;
      }
    }
    const p50s: number[] = [];
    process.stdout.write(
      `\none-row claims, ${rounds * block} per statement, alternating in blocks of ${block} (wall ms; ` +
        `PostgreSQL backend CPU µs per claim, 10 ms ticks summed):\n\n` +
        `| statement | p50 | p90 | p99 | backend CPU µs |\n|---|---|---|---|---|\n`,
    );
    for (const k of names) {
      const v = times[k]!.sort((a, b) => a - b);
      p50s.push(pct(v, 50));
      process.stdout.write(
        `| ${k} | ${pct(v, 50).toFixed(2)} | ${pct(v, 90).toFixed(2)} | ${pct(v, 99).toFixed(2)} | ` +
          `${Math.round((cpu[k]! * 10_000) / v.length)} |\n`,
      );
    }
    process.stdout.write(
      `\np50 differences: unnamed, the statement's new work ${(p50s[1]! - p50s[0]!).toFixed(2)} ms, ` +
        `the durable commit (WAL flush) ${(p50s[2]! - p50s[1]!).toFixed(2)} ms; prepared, ` +
        `the durable commit ${(p50s[4]! - p50s[3]!).toFixed(2)} ms; quick and prepared, the ` +
        `statement's new work ${(p50s[5]! - p50s[0]!).toFixed(2)} ms, the durable commit ` +
        `${(p50s[6]! - p50s[5]!).toFixed(2)} ms; quick and unnamed (the worker), the ` +
        `statement's new work ${(p50s[7]! - p50s[0]!).toFixed(2)} ms, the durable commit ` +
        `${(p50s[8]! - p50s[7]!).toFixed(2)} ms\n`,
    );
  } finally {
    await dropSchema(pool, schema).catch(() => {});
    await state.end();
    await pool.end();
  }
}
