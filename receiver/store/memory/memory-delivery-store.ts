/**
 * An in-process delivery store (see ../delivery-store.ts for the contract): the same
 * decisions as the PostgreSQL store, kept in maps, for unit tests and single-process tools.
 * Not shared between processes and not durable, so never for a production receiver (a
 * restart forgets every key, and two processes would each publish). It burns no nonces.
 */
import { randomUUID } from 'node:crypto';
import { canonicalJson } from '../../../shared/json/canonical.js';
import {
  DEFAULT_LEASE_MS,
  DEFAULT_MAX_KEYS_PER_SENDER,
  retentionSeconds,
  terminalOutcome,
  type AcceptInput,
  type AcceptOutcome,
  type Claim,
  type DeliveryStore,
  type OrderingDecision,
  type ProtocolVersion,
  type TaskObservation,
  type TerminalInput,
} from '../delivery-store.js';
import { orderableTimestamp, terminalRecord, TERMINAL_STATUSES } from '../observation.js';

export interface MemoryDeliveryStoreOptions {
  protocolVersion: ProtocolVersion;
  leaseMs?: number;
  maxKeysPerSender?: number;
  retryHorizonSeconds?: (sender: string) => number | undefined;
  /** Milliseconds since the epoch; defaults to Date.now. */
  clock?: () => number;
}

interface KeyRow {
  fingerprint: string;
  state: 'processing' | 'done';
  owner: string | null;
  generation: number;
  leaseUntil: number;
  expiresAt: number;
  outcome: string | null;
}

interface TaskRow {
  newestAt: string | null;
  newestKey: string | null;
  terminalFp: string | null;
  terminalTaskType: string | null;
  terminalKey: string | null;
  expiresAt: number;
}

const id = (a: string, b: string) => canonicalJson([a, b]);

/** Orders two RFC 3339 timestamps to the microsecond, as PostgreSQL's timestamptz does. */
function compareAt(a: string, b: string): number {
  const ms = Date.parse(a) - Date.parse(b);
  if (ms !== 0) return ms;
  const frac = (s: string) => (/\.(\d+)/.exec(s)?.[1] ?? '').padEnd(6, '0').slice(3, 6);
  return Number(frac(a)) - Number(frac(b));
}

export class MemoryDeliveryStore implements DeliveryStore {
  readonly protocolVersion: ProtocolVersion;
  readonly leaseMs: number;
  private readonly maxKeys: number;
  private readonly horizon: (sender: string) => number | undefined;
  private readonly clock: () => number;
  private readonly keys = new Map<string, KeyRow>();
  private readonly tasks = new Map<string, TaskRow>();
  private readonly notifications = new Map<string, { firstKey: string; expiresAt: number }>();
  private readonly perSender = new Map<string, number>();

  constructor(o: MemoryDeliveryStoreOptions) {
    this.protocolVersion = o.protocolVersion;
    this.leaseMs = o.leaseMs ?? DEFAULT_LEASE_MS;
    this.maxKeys = o.maxKeysPerSender ?? DEFAULT_MAX_KEYS_PER_SENDER;
    this.horizon = o.retryHorizonSeconds ?? (() => undefined);
    this.clock = o.clock ?? Date.now;
  }

  async migrate(): Promise<void> {}

  burnsNonces(): boolean {
    return false;
  }

  retentionSeconds(sender: string): number {
    return retentionSeconds(this.horizon(sender));
  }

  async accept(input: AcceptInput): Promise<AcceptOutcome> {
    if (input.nonce) throw new Error('accept: this store burns no nonces');
    const k = id(input.sender, input.key);
    const now = this.clock();
    const row = this.keys.get(k);
    const owner = randomUUID();
    if (!row) {
      if ((this.perSender.get(input.sender) ?? 0) >= this.maxKeys) return { kind: 'over_limit' };
      this.keys.set(k, {
        fingerprint: input.fingerprint,
        state: 'processing',
        owner,
        generation: 1,
        leaseUntil: now + this.leaseMs,
        expiresAt: now + this.retentionSeconds(input.sender) * 1000,
        outcome: null,
      });
      this.perSender.set(input.sender, (this.perSender.get(input.sender) ?? 0) + 1);
      return this.claimed(input, owner, 1, false);
    }
    if (this.protocolVersion === '3.2' && row.fingerprint !== input.fingerprint) {
      return { kind: 'conflict' };
    }
    if (row.state === 'done') return { kind: 'done', outcome: row.outcome };
    if (row.leaseUntil > now) return { kind: 'in_flight' };
    row.owner = owner;
    row.generation++;
    row.leaseUntil = now + this.leaseMs;
    return this.claimed(input, owner, row.generation, true);
  }

  private claimed(
    input: AcceptInput,
    owner: string,
    generation: number,
    takeover: boolean,
  ): AcceptOutcome {
    const { decision, reEmission } = this.observe(input.sender, input.key, input.observation);
    return {
      kind: 'claimed',
      claim: { sender: input.sender, key: input.key, owner, generation, takeover },
      decision,
      reEmission,
    };
  }

  async complete(claim: Claim, outcome: string): Promise<boolean> {
    const row = this.held(claim);
    if (!row) return false;
    row.state = 'done';
    row.outcome = outcome;
    row.owner = null;
    return true;
  }

  async release(claim: Claim): Promise<void> {
    const row = this.held(claim);
    if (row) row.leaseUntil = this.clock() - 1;
  }

  async renew(claim: Claim): Promise<boolean> {
    const row = this.held(claim);
    if (row) row.leaseUntil = this.clock() + this.leaseMs;
    return row !== null;
  }

  private held(claim: Claim): KeyRow | null {
    const row = this.keys.get(id(claim.sender, claim.key));
    return row &&
      row.state === 'processing' &&
      row.owner === claim.owner &&
      row.generation === claim.generation
      ? row
      : null;
  }

  async observeTerminal(input: TerminalInput): Promise<'won' | 'duplicate' | 'conflict'> {
    if (!TERMINAL_STATUSES.has(input.status)) {
      throw new TypeError(`observeTerminal: "${input.status}" is not a terminal status`);
    }
    const { decision } = this.observe(input.sender, null, {
      ...input,
      at: null,
      notificationId: null,
    });
    return terminalOutcome(decision);
  }

  async senderKeyCount(sender: string): Promise<number> {
    return this.perSender.get(sender) ?? 0;
  }

  async purgeExpired(): Promise<number> {
    const now = this.clock();
    let n = 0;
    for (const [k, row] of this.keys) {
      if (row.expiresAt >= now) continue;
      this.keys.delete(k);
      const sender = (JSON.parse(k) as [string, string])[0];
      this.perSender.set(sender, (this.perSender.get(sender) ?? 1) - 1);
      n++;
    }
    for (const map of [this.tasks, this.notifications]) {
      for (const [k, row] of map) {
        if (row.expiresAt < now) {
          map.delete(k);
          n++;
        }
      }
    }
    return n;
  }

  /** task_observe's decisions (ordering-schema.ts), in JS. */
  private observe(
    sender: string,
    key: string | null,
    o: TaskObservation,
  ): { decision: OrderingDecision; reEmission: boolean } {
    const expiresAt = this.clock() + this.retentionSeconds(sender) * 1000;
    const reEmission = this.reEmission(sender, key, o.notificationId, expiresAt);
    if (o.taskId === null) return { decision: 'current', reEmission };
    const t = id(sender, o.taskId);
    let row = this.tasks.get(t);
    if (!row) {
      row = {
        newestAt: null,
        newestKey: null,
        terminalFp: null,
        terminalTaskType: null,
        terminalKey: null,
        expiresAt,
      };
      this.tasks.set(t, row);
    }
    row.expiresAt = Math.max(row.expiresAt, expiresAt);
    const terminal = o.status !== null && TERMINAL_STATUSES.has(o.status);
    const decision = terminal
      ? this.terminal(row, key, o)
      : this.nonTerminal(row, key, orderableTimestamp(o.at), o.status);
    return { decision, reEmission };
  }

  private nonTerminal(
    row: TaskRow,
    key: string | null,
    at: string | null,
    _status: string | null,
  ): OrderingDecision {
    if (row.terminalFp !== null) return 'stale';
    if (at === null) return 'current';
    if (row.newestAt === null || compareAt(at, row.newestAt) > 0) {
      row.newestAt = at;
      row.newestKey = key;
      return 'current';
    }
    return key !== null && row.newestKey === key ? 'current' : 'stale';
  }

  private terminal(row: TaskRow, key: string | null, o: TaskObservation): OrderingDecision {
    const rec = terminalRecord({
      taskType: o.taskType,
      status: o.status as string,
      value: o.value,
    });
    if (row.terminalFp === null) {
      row.terminalFp = rec.fingerprint;
      row.terminalTaskType = o.taskType;
      row.terminalKey = key;
      const at = orderableTimestamp(o.at);
      if (at !== null && (row.newestAt === null || compareAt(at, row.newestAt) > 0)) {
        row.newestAt = at;
      }
      row.newestKey = key;
      return 'terminal_won';
    }
    if (key !== null && row.terminalKey === key) return 'terminal_won';
    if (row.terminalFp !== rec.fingerprint) return 'terminal_conflict';
    return row.terminalTaskType !== null &&
      o.taskType !== null &&
      row.terminalTaskType !== o.taskType
      ? 'terminal_conflict'
      : 'terminal_duplicate';
  }

  private reEmission(
    sender: string,
    key: string | null,
    notificationId: string | null,
    expiresAt: number,
  ): boolean {
    if (notificationId === null || key === null) return false;
    const n = id(sender, notificationId);
    const seen = this.notifications.get(n);
    if (!seen) {
      this.notifications.set(n, { firstKey: key, expiresAt });
      return false;
    }
    return seen.firstKey !== key;
  }
}
