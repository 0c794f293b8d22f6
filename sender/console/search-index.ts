/**
 * The console's two search indexes, an operator's choice (issue 26; README "Search
 * indexes"): off by default, because every event's insert writes them. `contains` is a
 * multicolumn pg_trgm GIN index over the task, principal, media buy and destination (a
 * `*value*` search reads the few matching rows instead of walking the list); `payload` a
 * jsonb_path_ops GIN index over the body as JSON (a rare payload value probed by
 * containment). Without them both searches walk the list's order, as before.
 *
 * Enable builds on the partitioned outbox parent so that future day partitions get the
 * index (sender/outbox/partitions.ts names theirs): an invalid index on the parent alone
 * (`ON ONLY`), then each existing partition's with CREATE INDEX CONCURRENTLY (inserts go on
 * meanwhile) attached to it, after which PostgreSQL marks the parent's valid. A plain
 * CREATE INDEX on the parent would hold off every insert for the whole build; PostgreSQL
 * 15 to 18 cannot build a partitioned index concurrently. An enable cut short is finished
 * by running it again (the attached partitions are skipped). Disable drops them.
 */
import type { DatabaseError } from 'pg';
import { assertSchemaName, type Pool, type PoolClient } from '../../shared/infra/pg.js';
import { ConsoleInputError } from '../../shared/console/errors.js';
import { auditAction, ConsoleActionError, type Operator } from './actions.js';
import { originSql } from './migrations.js';

export const SEARCH_INDEX_KINDS = ['contains', 'payload'] as const;
export type SearchIndexKind = (typeof SEARCH_INDEX_KINDS)[number];

/**
 * Each index: its name, and what it costs every event's insert in PostgreSQL backend CPU
 * (`npm run bench -- console-write 20`, three runs: 43-45 µs per event without either; README).
 */
export const SEARCH_INDEXES: Record<SearchIndexKind, { name: string; cost: string }> = {
  contains: { name: 'outbox_console_contains', cost: '+20-28 µs of PostgreSQL CPU per event' },
  payload: { name: 'outbox_console_payload', cost: '+9-23 µs of PostgreSQL CPU per event' },
};

export interface SearchIndexState {
  kind: SearchIndexKind;
  index: string;
  /** on: valid on every partition; partial: an enable cut short (run it again); off. */
  state: 'on' | 'partial' | 'off';
  /** Partitions whose index is built, of the outbox's partitions. */
  partitions: { indexed: number; of: number };
  /** How this kind's searches run: through the index, or walking the list's order. */
  search: 'index' | 'scan';
}

/** How a search of this kind is served now, in words (the page and the CLI say the same). */
export function searchesHow(s: SearchIndexState): string {
  if (s.search === 'index') return 'read the index';
  return s.state === 'partial'
    ? 'scan (partly built: enable again to finish)'
    : 'scan the list (slow on a large outbox)';
}

export interface SearchIndexProgress {
  kind: SearchIndexKind;
  partition: string;
  /** 1-based position among the partitions this enable visits. */
  done: number;
  of: number;
  /** being built (reported before its build starts), built now, or already there. */
  step: 'building' | 'built' | 'already';
  /** The partition's rows as PostgreSQL estimates them. */
  rows: number;
}

export interface SearchIndexResult {
  action: 'enable' | 'disable';
  /** Per kind: partitions built by this call (enable) or whether it was dropped (disable). */
  changed: Partial<Record<SearchIndexKind, number | boolean>>;
  status: SearchIndexState[];
}

/** Why pg_trgm cannot be created, and what the operator does about it. */
function trgmUnavailable(err: DatabaseError, role: string, db: string): ConsoleActionError {
  const why =
    err.code === '42501'
      ? `the database role ${role} may not create it (pg_trgm is a trusted extension: it needs CREATE on database ${db}). Run GRANT CREATE ON DATABASE ${db} TO ${role}, or have a superuser run CREATE EXTENSION pg_trgm in ${db}`
      : err.code === '58P01'
        ? `it is not installed on the database server (${err.message}). Install PostgreSQL's contrib modules (Debian and Ubuntu: the postgresql-NN package ships them; others: postgresql-contrib), then run this again`
        : `${err.message}. Have the DBA run CREATE EXTENSION pg_trgm in ${db}`;
  return new ConsoleActionError(
    409,
    'PG_TRGM_UNAVAILABLE',
    `the contains index needs the pg_trgm extension, and ${why}; nothing was built (the payload index does not need it: --payload)`,
  );
}

export class SearchIndexes {
  private readonly schema: string;

  constructor(
    private readonly pool: Pool,
    schema: string,
  ) {
    this.schema = assertSchemaName(schema);
  }

  /** Which indexes are there, on how many partitions, and how each kind's searches run. */
  async status(db: Pool | PoolClient = this.pool): Promise<SearchIndexState[]> {
    const { rows } = await db.query<{ name: string; valid: boolean | null; indexed: number }>(
      `SELECT n.name, x.indisvalid AS valid,
              (SELECT count(*)::int FROM pg_inherits h JOIN pg_index cx ON cx.indexrelid = h.inhrelid
                WHERE h.inhparent = c.oid AND cx.indisvalid) AS indexed
         FROM unnest($2::text[]) n(name)
         LEFT JOIN pg_class c ON c.relname = n.name AND c.relnamespace = $1::regnamespace
         LEFT JOIN pg_index x ON x.indexrelid = c.oid`,
      [this.schema, SEARCH_INDEX_KINDS.map((k) => SEARCH_INDEXES[k].name)],
    );
    const of = (await this.partitions(db)).length;
    return SEARCH_INDEX_KINDS.map((kind, i) => {
      const r = rows[i]!;
      const state = r.valid === null ? 'off' : r.valid ? 'on' : 'partial';
      return {
        kind,
        index: SEARCH_INDEXES[kind].name,
        state,
        partitions: { indexed: r.valid === null ? 0 : r.indexed, of },
        search: state === 'on' ? 'index' : 'scan',
      };
    });
  }

  /**
   * Builds the indexes of `kinds` (creating pg_trgm first for `contains`), partition by
   * partition, reporting each to `progress`; audited. Idempotent: what is built is skipped.
   */
  async enable(
    kinds: readonly SearchIndexKind[],
    who: Operator,
    progress: (p: SearchIndexProgress) => void = () => {},
  ): Promise<SearchIndexResult> {
    return this.locked(async (client) => {
      const t0 = Date.now();
      const trgm = kinds.includes('contains') ? await this.ensureTrgm(client) : null;
      const changed: SearchIndexResult['changed'] = {};
      for (const kind of kinds) {
        changed[kind] = await this.build(client, kind, this.definition(kind, trgm), progress);
      }
      await auditAction(client, this.schema, who, 'search_index_enable', kinds.join(','), {
        built: changed,
        seconds: Math.round((Date.now() - t0) / 100) / 10,
      });
      return { action: 'enable', changed, status: await this.status(client) };
    });
  }

  /** Drops the indexes of `kinds` (every partition's with them); audited. Idempotent. */
  async disable(kinds: readonly SearchIndexKind[], who: Operator): Promise<SearchIndexResult> {
    return this.locked(async (client) => {
      const before = await this.status(client);
      const changed: SearchIndexResult['changed'] = {};
      for (const kind of kinds) {
        await client.query(`DROP INDEX IF EXISTS ${this.schema}.${SEARCH_INDEXES[kind].name}`);
        changed[kind] = before.find((s) => s.kind === kind)!.state !== 'off';
      }
      await auditAction(client, this.schema, who, 'search_index_disable', kinds.join(','), {
        dropped: changed,
      });
      return { action: 'disable', changed, status: await this.status(client) };
    });
  }

  /** One enable or disable per schema at a time (a second one is told, not queued). */
  private async locked<T>(fn: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const key = `svc-search-index:${this.schema}`;
    try {
      const { rows } = await client.query('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [key]);
      if (!rows[0].ok) {
        throw new ConsoleActionError(
          409,
          'SEARCH_INDEX_BUSY',
          'another enable or disable of the search indexes is running on this schema; try again when it is done',
        );
      }
      try {
        return await fn(client);
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtext($1))', [key]);
      }
    } finally {
      client.release();
    }
  }

  /** pg_trgm's schema, created if it is not there yet; a clear error when it cannot be. */
  private async ensureTrgm(client: PoolClient): Promise<string> {
    const find = () =>
      client.query<{ ns: string }>(
        `SELECT extnamespace::regnamespace::text AS ns FROM pg_extension WHERE extname = 'pg_trgm'`,
      );
    let { rows } = await find();
    if (rows[0]) return rows[0].ns;
    try {
      await client.query('CREATE EXTENSION IF NOT EXISTS pg_trgm');
    } catch (err) {
      // Another database session creating it at the same moment: it is there now.
      if ((err as DatabaseError).code !== '23505') {
        const who = await client.query('SELECT current_user AS role, current_database() AS db');
        throw trgmUnavailable(err as DatabaseError, who.rows[0].role, who.rows[0].db);
      }
    }
    ({ rows } = await find());
    return rows[0]!.ns;
  }

  /** The index's columns and method (`USING ...`), as the parent and each partition take it. */
  private definition(kind: SearchIndexKind, trgm: string | null): string {
    if (kind === 'payload') {
      return `USING gin (${this.schema}.console_body_json(body) jsonb_path_ops)`;
    }
    const ops = `${trgm}.gin_trgm_ops`;
    return `USING gin (task_id ${ops}, principal_id ${ops}, media_buy_id ${ops},
      (${originSql('target_url')}) ${ops})`;
  }

  /**
   * The parent's index (`ON ONLY`: no partition's yet), then each partition's, built
   * concurrently and attached. A partition created meanwhile got its index with its table
   * (PostgreSQL clones the parent's indexes), one dropped meanwhile is skipped. Partitions
   * built now.
   */
  private async build(
    client: PoolClient,
    kind: SearchIndexKind,
    definition: string,
    progress: (p: SearchIndexProgress) => void,
    round = 0,
  ): Promise<number> {
    const s = this.schema;
    const name = SEARCH_INDEXES[kind].name;
    await client.query(
      `CREATE INDEX IF NOT EXISTS ${name} ON ONLY ${s}.outbox_event ${definition}`,
    );
    const parts = await this.partitions(client);
    let built = 0;
    for (const [i, p] of parts.entries()) {
      const has = await client.query(
        `SELECT 1 FROM pg_inherits h JOIN pg_index x ON x.indexrelid = h.inhrelid
          WHERE h.inhparent = $1::regclass AND x.indrelid = $2::regclass`,
        [`${s}.${name}`, `${s}.${p.table}`],
      );
      const step = { kind, partition: p.table, done: i + 1, of: parts.length, rows: p.rows };
      if (has.rows.length > 0) {
        progress({ ...step, step: 'already' });
        continue;
      }
      // Before the build too: one partition may take minutes, and the console shows which.
      progress({ ...step, step: 'building' });
      if (await this.buildPartition(client, name, definition, p.table, p.suffix)) {
        built++;
        progress({ ...step, step: 'built' });
      }
    }
    const { rows } = await client.query(
      `SELECT x.indisvalid AS valid FROM pg_index x WHERE x.indexrelid = $1::regclass`,
      [`${s}.${name}`],
    );
    if (!rows[0]?.valid) {
      // A partition attached between the listing and now without the index: once more.
      if (round >= 3) throw new Error(`${name}: still not valid after ${round + 1} passes`);
      return built + (await this.build(client, kind, definition, progress, round + 1));
    }
    return built;
  }

  /** One partition's index, built concurrently and attached; false if the day was dropped. */
  private async buildPartition(
    client: PoolClient,
    name: string,
    definition: string,
    table: string,
    suffix: string,
  ): Promise<boolean> {
    const s = this.schema;
    const child = `${name}_${suffix}`;
    try {
      // A build cut short leaves an invalid index behind: built again.
      const old = await client.query(
        `SELECT x.indisvalid AS valid FROM pg_class c JOIN pg_index x ON x.indexrelid = c.oid
          WHERE c.relname = $1 AND c.relnamespace = $2::regnamespace`,
        [child, s],
      );
      if (old.rows[0] && !old.rows[0].valid) {
        await client.query(`DROP INDEX CONCURRENTLY ${s}.${child}`);
      }
      if (!old.rows[0]?.valid) {
        await client.query(`CREATE INDEX CONCURRENTLY ${child} ON ${s}.${table} ${definition}`);
      }
      await client.query(`ALTER INDEX ${s}.${name} ATTACH PARTITION ${s}.${child}`);
      return true;
    } catch (err) {
      if ((err as DatabaseError).code === '42P01') return false; // the day was dropped
      throw err;
    }
  }

  /** The outbox event table's partitions (the legacy one and the days), with row estimates. */
  private async partitions(
    db: Pool | PoolClient,
  ): Promise<Array<{ table: string; suffix: string; rows: number }>> {
    const { rows } = await db.query<{ table: string; rows: number }>(
      `SELECT c.relname AS table, greatest(c.reltuples, 0)::bigint::int AS rows
         FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
        WHERE h.inhparent = $1::regclass ORDER BY c.relname`,
      [`${this.schema}.outbox_event`],
    );
    return rows.map((r) => ({ ...r, suffix: r.table.slice('outbox_event_'.length) }));
  }
}

/**
 * Which indexes an enable or disable is for, from `--contains`/`--payload`, the form's
 * checkboxes (`on`) or the JSON body's booleans: none named means both. Anything else is
 * refused naming the field.
 */
export function searchIndexKinds(o: Record<string, unknown>): SearchIndexKind[] {
  const picked = SEARCH_INDEX_KINDS.filter((k) => {
    const v = o[k];
    if (v === undefined || v === false) return false;
    if (v === true || v === 'on') return true;
    throw new ConsoleInputError(k, 'true or false (a form checkbox: on), or left out');
  });
  return picked.length > 0 ? picked : [...SEARCH_INDEX_KINDS];
}
