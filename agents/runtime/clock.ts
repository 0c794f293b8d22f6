/**
 * Agent time: one virtual clock for task progression, approvals, the delivery simulator
 * and (given to the sender) reporting schedules, so a demo can run a day in minutes.
 * `speed` is virtual seconds per real second. The anchor lives in PostgreSQL, so virtual
 * time carries on across restarts instead of jumping back.
 */
import { assertSchemaName, type Pool } from '../../shared/infra/pg.js';

export interface AgentClock {
  /** Virtual now. */
  now(): Date;
  nowMs(): number;
  readonly speed: number;
  /** Real milliseconds until `virtualMs` of virtual time has passed. */
  realDelayMs(virtualMs: number): number;
}

export class SpeedClock implements AgentClock {
  readonly speed: number;
  private readonly anchorReal: number;
  private readonly anchorVirtual: number;

  constructor(options: { speed?: number; anchorReal?: number; anchorVirtual?: number } = {}) {
    const speed = options.speed ?? 1;
    if (!(speed > 0) || !Number.isFinite(speed)) throw new RangeError('clock speed must be > 0');
    this.speed = speed;
    this.anchorReal = options.anchorReal ?? Date.now();
    this.anchorVirtual = options.anchorVirtual ?? this.anchorReal;
  }

  nowMs(): number {
    return Math.floor(this.anchorVirtual + (Date.now() - this.anchorReal) * this.speed);
  }

  now(): Date {
    return new Date(this.nowMs());
  }

  realDelayMs(virtualMs: number): number {
    return Math.max(0, Math.ceil(virtualMs / this.speed));
  }
}

/** A clock that moves only when told (tests). */
export class ManualClock implements AgentClock {
  readonly speed = 1;
  private ms: number;
  constructor(start: Date | number = Date.now()) {
    this.ms = typeof start === 'number' ? start : start.getTime();
  }
  nowMs(): number {
    return this.ms;
  }
  now(): Date {
    return new Date(this.ms);
  }
  advance(ms: number): void {
    this.ms += ms;
  }
  set(at: Date | number): void {
    this.ms = typeof at === 'number' ? at : at.getTime();
  }
  realDelayMs(virtualMs: number): number {
    return virtualMs;
  }
}

/**
 * The persisted clock: continues from the stored anchor; a changed speed re-anchors at
 * the current virtual time so time never runs backwards.
 */
export async function loadClock(pool: Pool, schema: string, speed = 1): Promise<SpeedClock> {
  const s = assertSchemaName(schema);
  const { rows } = await pool.query<{ anchor_real: Date; anchor_virtual: Date; speed: number }>(
    `SELECT anchor_real, anchor_virtual, speed FROM ${s}.clock WHERE id = 1`,
  );
  const row = rows[0];
  const nowReal = Date.now();
  if (row) {
    const stored = new SpeedClock({
      speed: row.speed,
      anchorReal: row.anchor_real.getTime(),
      anchorVirtual: row.anchor_virtual.getTime(),
    });
    if (row.speed === speed) return stored;
    const virtual = Math.max(stored.nowMs(), nowReal);
    await pool.query(
      `UPDATE ${s}.clock SET anchor_real = $1, anchor_virtual = $2, speed = $3 WHERE id = 1`,
      [new Date(nowReal), new Date(virtual), speed],
    );
    return new SpeedClock({ speed, anchorReal: nowReal, anchorVirtual: virtual });
  }
  await pool.query(
    `INSERT INTO ${s}.clock (id, anchor_real, anchor_virtual, speed) VALUES (1, $1, $1, $2)
     ON CONFLICT (id) DO NOTHING`,
    [new Date(nowReal), speed],
  );
  return new SpeedClock({ speed, anchorReal: nowReal, anchorVirtual: nowReal });
}
