/**
 * An enable of the search indexes as the console runs it (issue 26; README "Search
 * indexes"): in the background of the console process, one at a time, with its progress
 * kept for the page and the JSON API. Why in the background: on a large outbox a build
 * takes minutes (1M events: about two), and a form post that answers only at the end
 * showed the operator nothing meanwhile. The page reloads itself while a build runs and
 * shows the partition under way, with PostgreSQL's own progress of that partition's
 * CREATE INDEX (pg_stat_progress_create_index: its phase, blocks and tuples done).
 */
import type { Pool } from '../../shared/infra/pg.js';
import { ConsoleActionError, type Operator } from './actions.js';
import type {
  SearchIndexes,
  SearchIndexKind,
  SearchIndexProgress,
  SearchIndexResult,
} from './search-index.js';

/** PostgreSQL's progress of the partition index being built now. */
export interface PartitionBuildProgress {
  /** pg_stat_progress_create_index's phase, e.g. `building index: scanning table`. */
  phase: string;
  blocksDone: number;
  blocksTotal: number;
  tuplesDone: number;
  tuplesTotal: number;
}

export interface SearchIndexBuild {
  kinds: SearchIndexKind[];
  by: string;
  startedAt: string;
  /** The last step reported (a partition being built, built, or already there). */
  step: SearchIndexProgress | null;
  /** While running: PostgreSQL's progress of the partition under way, when it has one. */
  partition: PartitionBuildProgress | null;
  running: boolean;
  finishedAt: string | null;
  /** Partitions built, per kind, once finished without an error. */
  built: Partial<Record<SearchIndexKind, number | boolean>> | null;
  /** Why it stopped (a stable code: PG_TRGM_UNAVAILABLE, or BUILD_FAILED). */
  error: { code: string; message: string } | null;
}

export class SearchIndexBuilds {
  private current: SearchIndexBuild | null = null;
  private job: Promise<SearchIndexResult> | null = null;

  constructor(
    private readonly indexes: SearchIndexes,
    private readonly pool: Pool,
    private readonly schema: string,
  ) {}

  /**
   * Starts an enable in the background (the page's form). Refused, like `run`, while one
   * runs: two would build the same partitions at once.
   */
  start(kinds: SearchIndexKind[], who: Operator): void {
    // Its outcome is the build's state (`error`), shown by the page.
    this.run(kinds, who).catch(() => {});
  }

  /**
   * Runs an enable as the current build and answers its result (the JSON API waits for
   * it); 409 SEARCH_INDEX_BUILDING while another runs.
   */
  run(kinds: SearchIndexKind[], who: Operator): Promise<SearchIndexResult> {
    if (this.job) {
      throw new ConsoleActionError(
        409,
        'SEARCH_INDEX_BUILDING',
        `an enable started by ${this.current!.by} is building (${this.current!.kinds.join(', ')}); its progress is on the search indexes page and at GET /api/search-indexes`,
      );
    }
    const b: SearchIndexBuild = {
      kinds,
      by: who.name,
      startedAt: new Date().toISOString(),
      step: null,
      partition: null,
      running: true,
      finishedAt: null,
      built: null,
      error: null,
    };
    this.current = b;
    const job = (async () => {
      try {
        const r = await this.indexes.enable(kinds, who, (p) => (b.step = p));
        b.built = r.changed;
        return r;
      } catch (err) {
        const e = err as { code?: unknown; message?: string };
        b.error = {
          code: err instanceof ConsoleActionError ? String(e.code) : 'BUILD_FAILED',
          message: e.message ?? String(err),
        };
        throw err;
      } finally {
        // Final before the caller hears the outcome.
        b.running = false;
        b.finishedAt = new Date().toISOString();
        this.job = null;
      }
    })();
    this.job = job;
    return job;
  }

  /** Resolves once no build runs (tests, shutdown). */
  async idle(): Promise<void> {
    await this.job?.catch(() => {});
  }

  /** The running or last build of this console process (null: none since it started). */
  async state(): Promise<SearchIndexBuild | null> {
    const b = this.current;
    if (!b) return null;
    return { ...b, partition: b.running ? await this.partitionProgress() : null };
  }

  private async partitionProgress(): Promise<PartitionBuildProgress | null> {
    const { rows } = await this.pool.query(
      `SELECT p.phase, p.blocks_done, p.blocks_total, p.tuples_done, p.tuples_total
         FROM pg_stat_progress_create_index p JOIN pg_class c ON c.oid = p.relid
        WHERE c.relnamespace = $1::regnamespace AND c.relname LIKE 'outbox\\_event\\_%'
        LIMIT 1`,
      [this.schema],
    );
    const r = rows[0];
    if (!r) return null;
    return {
      phase: r.phase as string,
      blocksDone: Number(r.blocks_done),
      blocksTotal: Number(r.blocks_total),
      tuplesDone: Number(r.tuples_done),
      tuplesTotal: Number(r.tuples_total),
    };
  }
}
