/**
 * `npm run bench -- channels`: the media-buy channels writing to the real outbox (PostgreSQL
 * row + BullMQ dispatch; no worker, delivery is the sender suite's figure). Reports:
 * configuration of N buys, one reporting period fired for all of them by `tick`,
 * coalesced impairment observations and their window fire, and immediate (fraud)
 * impairments. Bounded in count (N buys, default 2,000) and time (one pass each).
 */
import { randomBytes } from 'node:crypto';
import { brandProfile } from '../shared/brand.js';
import { createPool, dropSchema, LOCAL_DATABASE_URL } from '../shared/infra/pg.js';
import { createRedis } from '../shared/infra/redis.js';
import { MediaBuyChannels } from '../sender/channels/media-buy-channels.js';
import type { DeliveryDataSource } from '../sender/channels/types.js';
import { DeliveryQueue } from '../sender/delivery/queue.js';
import { Outbox } from '../sender/outbox/outbox.js';
import { migrateSender } from '../sender/schema.js';

const DATABASE_URL = process.env.DATABASE_URL ?? LOCAL_DATABASE_URL;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const T0 = Date.parse('2026-03-10T10:20:00Z');

const data: DeliveryDataSource = {
  getDelivery: async () => ({
    totals: { spend: 10, impressions: 1000 },
    by_package: [{ package_id: 'pkg_1', spend: 10, impressions: 1000 }],
    status: 'active',
    currency: 'USD',
  }),
};

const impairment = (id: string, reason: string) => ({
  impairment_id: id,
  resource_type: 'audience',
  resource_id: `aud_${id}`,
  package_ids: ['pkg_1'],
  transition: { from: 'active', to: 'suspended' },
  reason_code: reason,
  observed_at: '2026-03-10T10:20:00Z',
});

async function timed(count: number, fn: () => Promise<unknown>): Promise<string> {
  const start = performance.now();
  await fn();
  const ms = performance.now() - start;
  return `${count} in ${ms.toFixed(0)} ms = ${Math.round((count / ms) * 1000)}/s`;
}

/** Runs `n` calls with at most `width` in flight. */
async function parallel(n: number, width: number, call: (i: number) => Promise<unknown>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) await call(next++);
    }),
  );
}

export async function run(args: string[]): Promise<void> {
  const buys = Math.min(Number(args[0] ?? 2000), 20_000);
  const pool = createPool({ connectionString: DATABASE_URL, max: 16 });
  const schema = `bench_channels_${randomBytes(4).toString('hex')}`;
  const redis = createRedis(REDIS_URL);
  const prefix = `{bench-ch-${randomBytes(4).toString('hex')}}`;
  const queue = new DeliveryQueue({ connection: redis, prefix });
  const clock = { now: T0 };
  try {
    await migrateSender(pool, schema);
    const channels = new MediaBuyChannels({
      pool,
      schema,
      sink: new Outbox({ pool, queue, schema }),
      profile: brandProfile('svc'),
      protocolVersion: '3.2',
      dataSource: data,
      clock: () => clock.now,
      tickBatchSize: 500,
    });
    await channels.migrate();
    const id = (i: number) => `mb_${i}`;
    const rows: string[][] = [];
    rows.push([
      'configure (push + hourly reporting)',
      await timed(buys, () =>
        parallel(buys, 8, (i) =>
          channels.mediaBuyChannelsConfigured({
            mediaBuyId: id(i),
            principalId: 'p',
            pushNotificationConfig: { url: 'https://buyer.example/push', operation_id: `op_${i}` },
            reportingWebhook: {
              url: 'https://buyer.example/reports',
              reporting_frequency: 'hourly',
            },
          }),
        ),
      ),
    ]);
    rows.push([
      'general impairments observed (coalescing, nothing sent)',
      await timed(buys, () =>
        parallel(buys, 8, (i) =>
          channels.impairmentObserved({
            mediaBuyId: id(i),
            impairment: impairment(`g${i}`, 'consent_expired'),
          }),
        ),
      ),
    ]);
    let fired = 0;
    const tickAt = Date.parse('2026-03-10T11:00:01Z');
    const tickResult = await timed(2 * buys, async () => {
      for (let n = -1; n !== 0 && fired < 4 * buys; fired += n) n = await channels.tick(tickAt);
    });
    rows.push([`tick: one report + one impairment per buy (${fired} events)`, tickResult]);
    clock.now = tickAt;
    rows.push([
      'fraud impairments (fired in the call)',
      await timed(buys, () =>
        parallel(buys, 8, (i) =>
          channels.impairmentObserved({
            mediaBuyId: id(i),
            impairment: impairment(`f${i}`, 'identity_authorization_revoked'),
          }),
        ),
      ),
    ]);
    rows.push([
      'terminal (final report, channels closed)',
      await timed(buys, () =>
        parallel(buys, 8, (i) =>
          channels.mediaBuyTerminal({ mediaBuyId: id(i), status: 'completed' }),
        ),
      ),
    ]);
    process.stdout.write('\n| step | events into the outbox |\n|---|---|\n');
    for (const r of rows) process.stdout.write(`| ${r.join(' | ')} |\n`);
  } finally {
    await queue.close().catch(() => {});
    let cursor = '0';
    do {
      const [nextCursor, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = nextCursor;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
    redis.disconnect();
    await dropSchema(pool, schema).catch(() => {});
    await pool.end();
  }
}
