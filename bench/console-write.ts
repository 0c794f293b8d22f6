/**
 * `npm run bench -- console-write [blocks]`: what issue 26's search indexes, off by
 * default and enabled by an operator (sender/console/search-index.ts: the trigram index
 * over task, principal, buy and destination; the payload index), cost the sender's
 * hottest statement, the enqueue's INSERT. Four schemas (both enabled, each alone, neither:
 * the default) take batches of 100 task events (a realistic body, about
 * 700 bytes of JSON) in alternating blocks, so a machine loaded by others weighs on both
 * alike. Printed: wall time per batch (p50/p99) and the PostgreSQL backend's CPU per event
 * (utime + stime of the session's backend, 10 ms ticks summed over every block). Bounded:
 * `blocks` (default 20) x 5 batches x 100 events per schema.
 */
import { randomBytes } from 'node:crypto';
import { createPool, dropSchema, LOCAL_DATABASE_URL } from '../shared/infra/pg.js';
import { insertParams, insertSql } from '../sender/outbox/insert.js';
import type { OutboundEvent } from '../sender/outbox/types.js';
import { migrateSender } from '../sender/schema.js';
import { SearchIndexes, type SearchIndexKind } from '../sender/console/search-index.js';
import { backendTicks } from './sender/claim-cost.js';
import { pct } from './sender/breakdown.js';

const TICK_US = 10_000;

let seq = 0;
function event(): OutboundEvent {
  const n = seq++;
  const key = `cw_${randomBytes(8).toString('hex')}`;
  return {
    target: {
      url: `https://buyer-${n % 20}.example/hooks/${n % 7}`,
      auth: { mode: 'rfc9421' },
      channel: 'task',
    },
    payload: {
      idempotency_key: key,
      task_id: `task_${n}`,
      task_type: 'create_media_buy',
      status: 'completed',
      timestamp: new Date().toISOString(),
      result: {
        media_buy_id: `mb_${n % 50_000}`,
        buyer_ref: `ref-${n}`,
        packages: [
          { package_id: `pk_${n}_1`, budget: 5000, pacing: 'even', status: 'active' },
          { package_id: `pk_${n}_2`, budget: 2500, pacing: 'asap', status: 'active' },
        ],
        creative_deadline: '2026-12-01T00:00:00Z',
      },
      message: 'Media buy created; two packages active, creatives due before the flight.',
    },
    idempotencyKey: key,
    notificationType: 'completed',
    taskType: 'create_media_buy',
    taskId: `task_${n}`,
    principalId: `p_${n % 500}`,
    mediaBuyId: `mb_${n % 50_000}`,
  };
}

export async function run(args: string[]): Promise<void> {
  const blocks = Number(args[0] ?? 20);
  const perBlock = 5;
  const pool = createPool({
    connectionString: process.env.DATABASE_URL ?? LOCAL_DATABASE_URL,
    max: 2,
  });
  const tag = randomBytes(3).toString('hex');
  const sides = [
    { name: 'both enabled', enable: ['contains', 'payload'] as SearchIndexKind[] },
    { name: 'the contains (trigram) index alone', enable: ['contains'] as SearchIndexKind[] },
    { name: 'the payload index alone', enable: ['payload'] as SearchIndexKind[] },
    { name: 'neither (the default)', enable: [] as SearchIndexKind[] },
  ].map((x, i) => ({ ...x, schema: `bench_cw${i}_${tag}` }));
  try {
    for (const s of sides) {
      await migrateSender(pool, s.schema);
      if (s.enable.length > 0) {
        await new SearchIndexes(pool, s.schema).enable(s.enable, { name: 'bench', via: 'cli' });
      }
    }
    const client = await pool.connect();
    try {
      await client.query('SET synchronous_commit = off');
      const pid = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
      const stats = sides.map(() => ({ ms: [] as number[], ticks: 0, events: 0 }));
      for (let b = 0; b < blocks + 1; b++) {
        for (const [k, s] of sides.entries()) {
          const t0 = backendTicks(pid);
          for (let i = 0; i < perBlock; i++) {
            const { params, buys } = insertParams(Array.from({ length: 100 }, event), 86_400);
            const w0 = performance.now();
            await client.query(insertSql(s.schema, buys), params);
            // The first block warms both (plans, caches): not counted.
            if (b > 0) stats[k]!.ms.push(performance.now() - w0);
          }
          if (b > 0) {
            stats[k]!.ticks += backendTicks(pid) - t0;
            stats[k]!.events += perBlock * 100;
          }
        }
      }
      process.stdout.write(
        `\nenqueue INSERT, batches of 100 events, ${blocks} alternating blocks of ${perBlock} batches\n` +
          `| search indexes | batch p50 ms | batch p99 ms | backend CPU µs per event |\n|---|---|---|---|\n`,
      );
      for (const [k, s] of sides.entries()) {
        const st = stats[k]!;
        const sorted = [...st.ms].sort((a, b) => a - b);
        process.stdout.write(
          `| ${s.name} | ${pct(sorted, 50).toFixed(1)} | ${pct(sorted, 99).toFixed(1)} | ${((st.ticks * TICK_US) / st.events).toFixed(0)} |\n`,
        );
      }
    } finally {
      client.release();
    }
  } finally {
    for (const s of sides) await dropSchema(pool, s.schema).catch(() => {});
    await pool.end();
  }
}
