/**
 * New-keyid admission pressure (supplement §2.9): the rate of first-time keyids, per sender
 * and overall, in durable storage (PostgreSQL), with the four alarm clauses evaluated
 * periodically and `threshold_tuning_overdue` when a threshold is still at its shipped
 * default more than 30 days after the first admission. Alarms name their clause, go to the
 * log (warn) and to Prometheus; nothing is ever revoked automatically.
 *
 * Hot path: `observe()` is synchronous and touches only memory. A keyid already known (and
 * already marked seen today) costs one Map lookup; an unknown one is queued and written
 * behind in a batch. Each keyid is written at most once a day per instance (its `last_seen`,
 * for "unique keyids of the last 30 days"), so there is no database round trip per event.
 * A keyid only reaches `observe()` after it resolved in a trusted sender's key set, so
 * forged traffic cannot invent new keyids; it can only repeat published ones.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { silentLogger, type Logger } from '../../shared/infra/logger.js';
import { assertSchemaName, migrate, type Pool } from '../../shared/infra/pg.js';
import {
  evaluateClauses,
  WINDOW_SECONDS,
  type ClauseName,
  type ClauseResult,
  type ScopeHistory,
  type Thresholds,
} from './clauses.js';
import { ADMISSION_MIGRATIONS } from './schema.js';
import { thresholdsInForce, type ThresholdName, type ThresholdsInForce } from './thresholds.js';

const DAY_MS = 86_400_000;
/** Scope label of the all-senders evaluation (sender ids cannot contain "*"). */
export const ALL_SENDERS = '*';
/** `threshold_tuning_overdue` after this long at a shipped default. */
export const TUNING_GRACE_MS = 30 * DAY_MS;

/**
 * Told of each keyid whose signature verified (cheap, synchronous). The pipeline calls it
 * after the signature and digest checks, so forged traffic naming a published but unused
 * kid cannot count as a new keyid.
 */
export interface KeyObserver {
  observe(keyid: string, senderId: string): void;
}

export interface AdmissionOptions {
  pool: Pool;
  /** PostgreSQL schema (default `receiver`). */
  schema?: string;
  logger?: Logger;
  /** Configured thresholds; the others take their randomised shipped default. */
  thresholds?: Partial<Thresholds>;
  /** New keyids a window needs before a ratio clause (a, b) may trip (default 3). */
  minNew?: number;
  /** Evaluation period (default 60 s; 0: only on demand and after new keyids). */
  evaluateEveryMs?: number;
  /** Write-behind delay of queued keyids (default 200 ms). */
  flushDelayMs?: number;
  clock?: () => number;
  random?: () => number;
}

export interface AdmissionAlarm {
  clause: ClauseName;
  scope: string;
  newKeyids: number;
  threshold: number;
}

export interface Evaluation {
  alarms: AdmissionAlarm[];
  /** Per scope, every clause's verdict. */
  scopes: Map<string, ClauseResult[]>;
  /** Thresholds at their shipped default past the 30-day grace (empty: none overdue). */
  tuningOverdue: ThresholdName[];
}

interface Pending {
  sender: string;
  keyid: string;
  at: number;
}

export class AdmissionTracker implements KeyObserver {
  readonly alarms: Counter<'clause' | 'scope'>;
  readonly alarmState: Gauge<'clause' | 'scope'>;
  readonly window: Gauge<'scope'>;
  readonly firstSeen: Counter<'sender'>;
  readonly tuningOverdue: Gauge<'threshold'>;
  private readonly pool: Pool;
  private readonly schema: string;
  private readonly log: Logger;
  private readonly clock: () => number;
  private readonly o: AdmissionOptions;
  private thresholds: ThresholdsInForce | null = null;
  /** sender\0keyid -> day (ms / DAY_MS) its last_seen was last written. */
  private readonly touched = new Map<string, number>();
  private readonly pending = new Map<string, Pending>();
  private flushTimer: NodeJS.Timeout | null = null;
  private flushing: Promise<number> | null = null;
  private evalTimer: NodeJS.Timeout | null = null;
  private readonly tripped = new Set<string>();
  private overdueLoggedAt = Number.NEGATIVE_INFINITY;
  private stopped = false;

  constructor(options: AdmissionOptions) {
    this.o = options;
    this.pool = options.pool;
    this.schema = assertSchemaName(options.schema ?? 'receiver');
    this.log = options.logger ?? silentLogger;
    this.clock = options.clock ?? Date.now;
    const registers: Registry[] = [];
    this.alarms = new Counter({
      name: 'receiver_keyid_admission_alarms_total',
      help: 'New-keyid admission alarms raised, by clause (a-d) and scope (sender, * for all)',
      labelNames: ['clause', 'scope'],
      registers,
    });
    this.alarmState = new Gauge({
      name: 'receiver_keyid_admission_alarm',
      help: '1 while a new-keyid admission clause is tripped, by clause and scope',
      labelNames: ['clause', 'scope'],
      registers,
    });
    this.window = new Gauge({
      name: 'receiver_keyid_admission_window',
      help: 'First-time keyids in the last 5-minute window, by scope',
      labelNames: ['scope'],
      registers,
    });
    this.firstSeen = new Counter({
      name: 'receiver_keyid_first_seen_total',
      help: 'Keyids admitted for the first time (recorded by this instance), by sender',
      labelNames: ['sender'],
      registers,
    });
    this.tuningOverdue = new Gauge({
      name: 'receiver_keyid_threshold_tuning_overdue',
      help: '1 when a threshold is at its shipped default over 30 days after first admission',
      labelNames: ['threshold'],
      registers,
    });
  }

  /** Serves the tracker's metrics on a receiver's registry (its /metrics). */
  attachMetrics(registry: Registry): void {
    registry.registerMetric(this.alarms);
    registry.registerMetric(this.alarmState);
    registry.registerMetric(this.window);
    registry.registerMetric(this.firstSeen);
    registry.registerMetric(this.tuningOverdue);
  }

  /** Creates the tables, fixes the thresholds, loads known keyids, starts evaluating. */
  async start(): Promise<void> {
    await migrate(this.pool, this.schema, ADMISSION_MIGRATIONS);
    this.thresholds = await thresholdsInForce(
      this.pool,
      this.schema,
      this.o.thresholds ?? {},
      this.o.random,
    );
    const { rows } = await this.pool.query<{ sender: string; keyid: string; day: number }>(
      `SELECT sender, keyid, floor(extract(epoch FROM last_seen) * 1000 / ${DAY_MS})::int AS day
         FROM ${this.schema}.keyid_admissions`,
    );
    for (const r of rows) this.touched.set(`${r.sender}\0${r.keyid}`, r.day);
    const every = this.o.evaluateEveryMs ?? 60_000;
    if (every > 0) {
      this.evalTimer = setInterval(() => {
        this.evaluate().catch((err: unknown) => this.failed('evaluate', err));
      }, every);
      this.evalTimer.unref();
    }
  }

  /** The thresholds in force (after start). */
  get inForce(): ThresholdsInForce | null {
    return this.thresholds;
  }

  /** One resolved keyid (KeyObserver): memory only; new keyids are written behind. */
  observe(keyid: string, senderId: string): void {
    const k = `${senderId}\0${keyid}`;
    const now = this.clock();
    const day = Math.floor(now / DAY_MS);
    if (this.touched.get(k) === day) return;
    this.touched.set(k, day);
    this.pending.set(k, { sender: senderId, keyid, at: now });
    if (this.flushTimer === null && !this.stopped) {
      this.flushTimer = setTimeout(() => {
        this.flushTimer = null;
        this.flush().catch((err: unknown) => this.failed('flush', err));
      }, this.o.flushDelayMs ?? 200);
      this.flushTimer.unref();
    }
  }

  /** Writes queued keyids; returns how many were new everywhere. Evaluates after news. */
  flush(): Promise<number> {
    const run = async (): Promise<number> => {
      await this.flushing?.catch(() => 0);
      if (this.pending.size === 0) return 0;
      const batch = [...this.pending.values()];
      this.pending.clear();
      let rows: Array<{ sender: string; keyid: string; inserted: boolean }>;
      try {
        ({ rows } = await this.pool.query(
          `INSERT INTO ${this.schema}.keyid_admissions AS a (sender, keyid, first_seen, last_seen)
           SELECT s, k, to_timestamp(t / 1000.0), to_timestamp(t / 1000.0)
             FROM unnest($1::text[], $2::text[], $3::float8[]) AS b(s, k, t)
           ON CONFLICT (sender, keyid) DO UPDATE SET last_seen = greatest(a.last_seen, EXCLUDED.last_seen)
           RETURNING sender, keyid, (xmax = 0) AS inserted`,
          [batch.map((p) => p.sender), batch.map((p) => p.keyid), batch.map((p) => p.at)],
        ));
      } catch (err) {
        // Nothing is lost: the batch waits for the next flush (newer entries win).
        for (const p of batch) {
          const k = `${p.sender}\0${p.keyid}`;
          if (!this.pending.has(k)) this.pending.set(k, p);
        }
        throw err;
      }
      const fresh = rows.filter((r) => r.inserted);
      for (const r of fresh) {
        this.firstSeen.inc({ sender: r.sender });
        this.log.info({ event: 'keyid_first_seen', sender: r.sender, keyid: r.keyid });
      }
      return fresh.length;
    };
    const p = run();
    this.flushing = p;
    return p.then(async (n) => {
      if (n > 0 && !this.stopped) await this.evaluate();
      return n;
    });
  }

  /** Evaluates the clauses for every sender and overall; raises and clears alarms. */
  async evaluate(): Promise<Evaluation> {
    if (!this.thresholds) throw new Error('AdmissionTracker.start() first');
    const nowMs = this.clock();
    const now = nowMs / 1000;
    const { rows } = await this.pool.query<{
      sender: string;
      first: number;
      active: boolean;
      first_admission: number | null;
    }>(
      `SELECT sender, extract(epoch FROM first_seen)::float8 AS first,
              last_seen > to_timestamp($2) AS active,
              (SELECT extract(epoch FROM min(first_seen))::float8
                 FROM ${this.schema}.keyid_admissions) AS first_admission
         FROM ${this.schema}.keyid_admissions
        WHERE first_seen > to_timestamp($1) OR last_seen > to_timestamp($2)`,
      [now - 90 * 86_400, now - 30 * 86_400],
    );
    const scopes = new Map<string, ScopeHistory>();
    const all: ScopeHistory = { past: [], current: 0, active30d: 0, onboarding: 0 };
    // Each sender's first keyid (of the 90 days read): its initial key set is what arrives
    // within one window of it (clauses.ts: not a ratio clause's business).
    const senderFirst = new Map<string, number>();
    for (const r of rows) {
      senderFirst.set(r.sender, Math.min(senderFirst.get(r.sender) ?? r.first, r.first));
    }
    for (const r of rows) {
      let h = scopes.get(r.sender);
      if (!h) scopes.set(r.sender, (h = { past: [], current: 0, active30d: 0, onboarding: 0 }));
      const initial = r.first - senderFirst.get(r.sender)! < WINDOW_SECONDS;
      for (const s of [h, all]) {
        if (r.first > now - WINDOW_SECONDS) {
          s.current++;
          if (initial) s.onboarding!++;
        } else s.past.push(r.first);
        if (r.active) s.active30d++;
      }
    }
    scopes.set(ALL_SENDERS, all);
    const minNew = this.o.minNew ?? 3;
    const verdicts = new Map<string, ClauseResult[]>();
    const alarms: AdmissionAlarm[] = [];
    for (const [scope, h] of scopes) {
      const results = evaluateClauses(h, now, this.thresholds.values, minNew);
      verdicts.set(scope, results);
      this.window.set({ scope }, h.current);
      for (const r of results) {
        const id = `${r.clause}\0${scope}`;
        this.alarmState.set({ clause: r.clause, scope }, r.tripped ? 1 : 0);
        if (!r.tripped) {
          this.tripped.delete(id);
          continue;
        }
        alarms.push({ clause: r.clause, scope, newKeyids: h.current, threshold: r.threshold });
        if (this.tripped.has(id)) continue; // raised once per episode
        this.tripped.add(id);
        this.alarms.inc({ clause: r.clause, scope });
        this.log.warn(
          {
            event: 'keyid_admission_alarm',
            clause: r.clause,
            scope,
            newKeyids: h.current,
            threshold: Number(r.threshold.toFixed(3)),
          },
          `new-keyid admission pressure: clause ${r.clause} tripped (route to incident response; no key is revoked automatically)`,
        );
      }
    }
    const first = rows[0]?.first_admission ?? (await this.firstAdmission());
    const overdue =
      first !== null && nowMs - first * 1000 > TUNING_GRACE_MS ? this.thresholds.atDefault : [];
    for (const name of this.thresholds.atDefault) {
      this.tuningOverdue.set({ threshold: name }, overdue.includes(name) ? 1 : 0);
    }
    if (overdue.length > 0 && nowMs - this.overdueLoggedAt >= DAY_MS) {
      this.overdueLoggedAt = nowMs;
      this.log.warn(
        {
          event: 'threshold_tuning_overdue',
          thresholds: overdue,
          firstAdmission: new Date((first as number) * 1000).toISOString(),
        },
        'new-keyid admission thresholds still at their shipped defaults 30 days after first admission: tune them (SVC_RECEIVER_ADMISSION_*)',
      );
    }
    return { alarms, scopes: verdicts, tuningOverdue: overdue };
  }

  /** Flushes what is queued and stops the timers. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    if (this.evalTimer) clearInterval(this.evalTimer);
    this.flushTimer = this.evalTimer = null;
    await this.flush().catch((err: unknown) => this.failed('flush', err));
  }

  private async firstAdmission(): Promise<number | null> {
    const { rows } = await this.pool.query<{ first: number | null }>(
      `SELECT extract(epoch FROM min(first_seen))::float8 AS first FROM ${this.schema}.keyid_admissions`,
    );
    return rows[0]?.first ?? null;
  }

  private failed(what: string, err: unknown): void {
    this.log.warn({ event: `keyid_admission_${what}_failed`, err: (err as Error).message });
  }
}
