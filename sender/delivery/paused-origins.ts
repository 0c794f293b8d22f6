/**
 * Destinations the operator paused from the console (issue 26): their deliveries wait,
 * none is attempted, failed or dropped. The worker asks before each claim (so a paused
 * origin's rows stay untouched, their retry horizon not even started) and puts the job
 * back for later. The set is read from `console_paused_origin` at most once per
 * `refreshMs` per worker (one small query), so a pause takes effect within that time.
 */
import type { Logger } from '../../shared/infra/logger.js';
import type { Pool } from '../../shared/infra/pg.js';

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

  /** Whether `origin` (`scheme://host[:port]`, as URL.origin spells it) is paused. */
  async has(origin: string): Promise<boolean> {
    if (Date.now() - this.readAt >= this.refreshMs) {
      this.reading ??= this.read().finally(() => (this.reading = null));
      await this.reading;
    }
    return this.origins.size > 0 && this.origins.has(origin.toLowerCase());
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
