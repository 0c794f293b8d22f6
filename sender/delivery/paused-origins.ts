/**
 * Destinations the operator paused from the console (issue 26): their deliveries wait,
 * none is attempted, failed or dropped. The worker asks before each claim (so a paused
 * origin's rows stay untouched, their retry horizon not even started) and puts the job
 * back for later. The set is read from `console_paused_origin` at most once per
 * `refreshMs` per worker (one small query), so a pause takes effect within that time; a
 * "paused" answer is confirmed by a read at most 50 ms old, so a resume is never missed
 * for long (the console's resume promotes the put-back jobs once it commits).
 */
import type { Logger } from '../../shared/infra/logger.js';
import type { Pool } from '../../shared/infra/pg.js';

/** How old a set may be to answer "paused" without reading it again. */
const CONFIRM_MS = 50;

export class PausedOrigins {
  private origins = new Set<string>();
  private readAt = 0;
  private reading: Promise<void> | null = null;

  constructor(
    private readonly pool: Pool,
    private readonly schema: string,
    private readonly logger: Logger,
    private readonly refreshMs = 1000,
  ) {}

  /**
   * Whether `origin` (`scheme://host[:port]`, as URL.origin spells it) is paused. A "yes"
   * from a set older than `CONFIRM_MS` is read again before it is answered: putting a job
   * back costs it the recheck period, so a resume just made must not be missed (the
   * console's resume promotes the jobs right after it commits).
   */
  async has(origin: string): Promise<boolean> {
    if (Date.now() - this.readAt >= this.refreshMs) await this.refresh();
    const o = origin.toLowerCase();
    if (!this.origins.has(o)) return false;
    if (Date.now() - this.readAt >= CONFIRM_MS) await this.refresh();
    return this.origins.has(o);
  }

  private async refresh(): Promise<void> {
    this.reading ??= this.read().finally(() => (this.reading = null));
    await this.reading;
  }

  private async read(): Promise<void> {
    try {
      const { rows } = await this.pool.query<{ origin: string }>(
        `SELECT origin FROM ${this.schema}.console_paused_origin`,
      );
      this.origins = new Set(rows.map((r) => r.origin));
    } catch (err) {
      // Database away: keep the last known set (a pause is not lifted by an outage).
      this.logger.warn({ err }, 'reading paused destinations failed; keeping the last set');
    }
    this.readAt = Date.now();
  }
}
