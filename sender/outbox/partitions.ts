/**
 * Storage that stays flat at any rate (issue 19, item 1): the outbox's two tables
 * (`outbox_event`, the frozen event; `outbox_delivery`, its small mutable state) and the
 * activity log (`webhook_activity`) are partitioned by day with PostgreSQL's declarative
 * partitioning (no extension: the embedded server runs it too). A row's id carries its
 * day (`day << 44 | sequence`), so the three tables share one range per day, a job that
 * names an id finds its partition by pruning, and an attempt record lives in the
 * partition of its delivery. The service keeps partitions created ahead and drops whole
 * days behind once they are past the retention; a day that still holds a pending
 * delivery is never dropped. Nothing is deleted row by row.
 */
import type { Logger } from '../../shared/infra/logger.js';
import { silentLogger } from '../../shared/infra/logger.js';
import { assertSchemaName, type Pool, type PoolClient } from '../../shared/infra/pg.js';

export const DAY_MS = 86_400_000;
/** Bits of the sequence under the day in an outbox id (17.6e12 ids before it overflows). */
export const ID_SHIFT = 44;
/** The tables partitioned by day, by their id (outbox) or their delivery's (activity). */
export const PARTITIONED_TABLES = ['outbox_event', 'outbox_delivery', 'webhook_activity'] as const;
/** Days of partitions kept created ahead of today (each one more the planner may open). */
export const DEFAULT_DAYS_AHEAD = 3;
/**
 * outbox_delivery's pages are filled to 40 % by inserts: a claim writes its new row version
 * on the row's own page (a HOT update, no index written), which needs room there for every
 * row of the page at once (a batch claims a page's rows together). At 50 % the last few
 * rows of a page found none, and a fifth of the claims wrote three indexes (`bench storage`:
 * HOT updates 8,500 of 11,000 claims; at 40 % all of them).
 */
export const DELIVERY_FILLFACTOR = 40;
/** The default retention: 30 days. */
export const DEFAULT_RETENTION_SECONDS = 30 * 86_400;

/** SQL of a new outbox id: the day of the transaction's clock, then the sequence. */
export function newIdSql(schema: string): string {
  return `((floor(extract(epoch from now()) / 86400)::bigint << ${ID_SHIFT}) + nextval('${schema}.outbox_id_seq'))`;
}

/** The first id of a day (days since the Unix epoch, UTC). */
export function firstIdOf(day: number): bigint {
  return BigInt(day) << BigInt(ID_SHIFT);
}

/**
 * The id range [lo, hi) of the days `ids` were written on (decimal strings; ['0', '0'] for
 * none). Passed with a statement's id list, it lets PostgreSQL prune the partitions
 * when it starts a generic plan: it cannot prune on `id = ANY($1)` with `$1` a parameter.
 */
export function dayBounds(ids: readonly string[]): [string, string] {
  if (ids.length === 0) return ['0', '0'];
  let lo = Infinity;
  let hi = -Infinity;
  for (const id of ids) {
    const d = dayOfId(id);
    if (d < lo) lo = d;
    if (d > hi) hi = d;
  }
  return [firstIdOf(lo).toString(), firstIdOf(hi + 1).toString()];
}

/** The day an outbox id was written on. */
export function dayOfId(id: string | bigint): number {
  return Number(BigInt(id) >> BigInt(ID_SHIFT));
}

export function dayOf(at: Date | number): number {
  return Math.floor((typeof at === 'number' ? at : at.getTime()) / DAY_MS);
}

/** A day partition's name suffix: `p` and its UTC date (`p20261127`). */
export function suffixOf(day: number): string {
  return `p${new Date(day * DAY_MS).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

function dayOfSuffix(suffix: string): number | null {
  const m = /^p(\d{4})(\d{2})(\d{2})$/.exec(suffix);
  return m ? dayOf(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) : null;
}

/**
 * A retention as the operator writes it: a whole number and a unit (`30d`, `720h`,
 * `2592000s`, `43200m`). Null when it is not one.
 */
export function parseDuration(value: string): number | null {
  const m = /^([1-9]\d{0,8})([smhd])$/.exec(value.trim());
  if (!m) return null;
  return Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86_400 }[m[2] as 's' | 'm' | 'h' | 'd'];
}

/**
 * Gives each index of a new partition its parent index's name plus the partition's
 * suffix (`outbox_console_created_p20261127`): plans and tools name the index they use.
 */
async function nameIndexes(client: PoolClient, schema: string, table: string, suffix: string) {
  const { rows } = await client.query<{ child: string; parent: string }>(
    `SELECT ci.relname AS child, pi.relname AS parent
       FROM pg_index x
       JOIN pg_class ci ON ci.oid = x.indexrelid
       JOIN pg_inherits h ON h.inhrelid = x.indexrelid
       JOIN pg_class pi ON pi.oid = h.inhparent
      WHERE x.indrelid = $1::regclass`,
    [`${schema}.${table}_${suffix}`],
  );
  for (const r of rows) {
    const name = `${r.parent}_${suffix}`;
    if (r.child !== name) await client.query(`ALTER INDEX ${schema}.${r.child} RENAME TO ${name}`);
  }
}

/**
 * The per-partition parts a partitioned parent cannot carry: the idempotency key's
 * uniqueness (a unique index must include the partition key), and the index names.
 */
export async function finishPartition(
  client: PoolClient,
  schema: string,
  suffix: string,
): Promise<void> {
  for (const table of PARTITIONED_TABLES) await nameIndexes(client, schema, table, suffix);
  await client.query(
    `CREATE UNIQUE INDEX IF NOT EXISTS outbox_idempotency_key_key_${suffix}
       ON ${schema}.outbox_event_${suffix} (idempotency_key)`,
  );
}

/** After migration 060: the legacy partition's indexes named as the days' are. */
export async function finishLegacyPartition(pool: Pool, schema: string): Promise<void> {
  await inTransaction(pool, schema, (client) => finishPartition(client, schema, 'legacy'));
}

/**
 * After a migration that rebuilt indexes on the partitioned parents (078): every existing
 * partition's new indexes named as a new day's are (PostgreSQL names them after the columns).
 */
export async function nameAllPartitions(pool: Pool, schema: string): Promise<void> {
  await inTransaction(pool, schema, async (client) => {
    const { days, legacy } = await listPartitions(client, schema);
    const suffixes = [...(legacy ? ['legacy'] : []), ...days.map(suffixOf)];
    for (const suffix of suffixes) await finishPartition(client, schema, suffix);
  });
}

async function createDay(client: PoolClient, schema: string, day: number): Promise<void> {
  const suffix = suffixOf(day);
  const from = firstIdOf(day).toString();
  const to = firstIdOf(day + 1).toString();
  for (const table of PARTITIONED_TABLES) {
    const storage =
      table === 'outbox_delivery' ? ` WITH (fillfactor = ${DELIVERY_FILLFACTOR})` : '';
    await client.query(
      `CREATE TABLE ${schema}.${table}_${suffix} PARTITION OF ${schema}.${table}
         FOR VALUES FROM (${from}) TO (${to})${storage}`,
    );
  }
  await finishPartition(client, schema, suffix);
}

/** Existing partitions of the outbox: the legacy one (ids before partitioning) and days. */
async function listPartitions(
  db: Pool | PoolClient,
  schema: string,
): Promise<{ days: number[]; legacy: boolean }> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits h
       JOIN pg_class c ON c.oid = h.inhrelid
      WHERE h.inhparent = $1::regclass`,
    [`${schema}.outbox_event`],
  );
  const days: number[] = [];
  let legacy = false;
  for (const r of rows) {
    const suffix = r.name.slice('outbox_event_'.length);
    if (suffix === 'legacy') legacy = true;
    const d = dayOfSuffix(suffix);
    if (d !== null) days.push(d);
  }
  return { days: days.sort((a, b) => a - b), legacy };
}

/**
 * Today's partitions, analyzed once they hold rows if autovacuum has not yet: without
 * statistics the planner takes a fresh day's pending rows for a handful and walks them
 * for every claim (50 ids: 57 ms against 1.1 ms once analyzed).
 */
async function analyzeToday(pool: Pool, schema: string, today: number): Promise<void> {
  const names = ['outbox_event', 'outbox_delivery'].map((t) => `${t}_${suffixOf(today)}`);
  const { rows } = await pool.query<{ name: string }>(
    `SELECT relname AS name FROM pg_stat_user_tables
      WHERE schemaname = $1 AND relname = ANY($2) AND n_live_tup > 0
        AND last_analyze IS NULL AND last_autoanalyze IS NULL`,
    [schema, names],
  );
  for (const r of rows) await pool.query(`ANALYZE ${schema}.${r.name}`);
}

export interface MaintainOptions {
  /** The clock (default: now); tests run a virtual one. */
  now?: Date;
  /** Drop days older than this many seconds; null or absent: create only. */
  retentionSeconds?: number | null;
  daysAhead?: number;
  logger?: Logger;
}

export interface MaintainResult {
  created: string[];
  dropped: string[];
  /** Days past the retention kept because a delivery in them is still pending. */
  held: string[];
}

async function inTransaction<T>(pool: Pool, schema: string, f: (c: PoolClient) => Promise<T>) {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // A drop or create waits on the parent's lock: never queue the workers behind it long.
    await client.query(`SET LOCAL lock_timeout = '5s'`);
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`svc-partitions:${schema}`]);
    const out = await f(client);
    await client.query('COMMIT');
    return out;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/**
 * Drops one partition (a day, or the legacy one) of all three tables when nothing in it
 * is pending and (legacy) nothing in it is newer than `cutoff`; `held` when it is not, and
 * `gone` when another process's pass dropped it first.
 * The check and the drop are one transaction holding the partitions' locks, so a console
 * action reopening a row in it meanwhile either waits or is seen.
 */
async function dropIfDone(
  pool: Pool,
  schema: string,
  suffix: string,
  cutoff: Date | null,
): Promise<'dropped' | 'held' | 'gone'> {
  return inTransaction(pool, schema, async (client) => {
    // Another process's pass (it held the same advisory lock) may have dropped it already.
    const gone = await client.query<{ gone: boolean }>(`SELECT to_regclass($1) IS NULL AS gone`, [
      `${schema}.outbox_delivery_${suffix}`,
    ]);
    if (gone.rows[0]!.gone) return 'gone';
    await client.query(
      `LOCK TABLE ${PARTITIONED_TABLES.map((t) => `${schema}.${t}_${suffix}`).join(', ')}
         IN ACCESS EXCLUSIVE MODE`,
    );
    const { rows } = await client.query<{ held: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM ${schema}.outbox_delivery_${suffix} WHERE state = 'pending')
          OR ($1::timestamptz IS NOT NULL AND EXISTS (
                SELECT 1 FROM ${schema}.outbox_delivery_${suffix}
                 WHERE created_at >= $1 OR completed_at >= $1)) AS held`,
      [cutoff],
    );
    if (rows[0]!.held) return 'held';
    for (const t of PARTITIONED_TABLES) await client.query(`DROP TABLE ${schema}.${t}_${suffix}`);
    return 'dropped';
  });
}

/**
 * One maintenance pass: creates the partitions of today and `daysAhead` days ahead, and
 * with a retention drops each day that ended more than the retention ago (and the legacy
 * partition once all of it is that old) unless it still holds a pending delivery. The
 * console's hourly rollup follows the retention too.
 */
export async function maintainPartitions(
  pool: Pool,
  schema: string,
  options: MaintainOptions = {},
): Promise<MaintainResult> {
  assertSchemaName(schema);
  const now = options.now ?? new Date();
  const logger = options.logger ?? silentLogger;
  const today = dayOf(now);
  const ahead = options.daysAhead ?? DEFAULT_DAYS_AHEAD;
  const out: MaintainResult = { created: [], dropped: [], held: [] };
  const { days, legacy } = await listPartitions(pool, schema);
  const missing: number[] = [];
  for (let d = today; d <= today + ahead; d++) if (!days.includes(d)) missing.push(d);
  if (missing.length > 0) {
    await inTransaction(pool, schema, async (client) => {
      const again = await listPartitions(client, schema);
      for (const d of missing) {
        if (again.days.includes(d)) continue;
        await createDay(client, schema, d);
        out.created.push(suffixOf(d));
      }
    });
  }
  await analyzeToday(pool, schema, today);
  const retention = options.retentionSeconds;
  if (retention == null) return out;
  const cutoff = new Date(now.getTime() - retention * 1000);
  const candidates: Array<[string, Date | null]> = days
    .filter((d) => (d + 1) * DAY_MS <= cutoff.getTime())
    .map((d) => [suffixOf(d), null]);
  if (legacy) candidates.unshift(['legacy', cutoff]);
  for (const [suffix, legacyCutoff] of candidates) {
    const done = await dropIfDone(pool, schema, suffix, legacyCutoff);
    if (done === 'dropped') out.dropped.push(suffix);
    else if (done === 'held' && legacyCutoff === null) out.held.push(suffix);
  }
  await pool.query(`DELETE FROM ${schema}.console_hourly WHERE hour < $1`, [cutoff]);
  if (out.dropped.length > 0) logger.info({ dropped: out.dropped }, 'outbox days dropped');
  if (out.held.length > 0) {
    logger.warn({ held: out.held }, 'outbox days past retention kept: deliveries still pending');
  }
  return out;
}
