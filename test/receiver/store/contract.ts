/**
 * The delivery store's contract (receiver/store/delivery-store.ts), as a suite any
 * implementation must pass: dedup by (sender, idempotency_key), 3.2 fingerprint binding and
 * 3.1 first-copy-wins, one owner under concurrency, takeover after the lease with a fence
 * on the late owner, release, the per-sender bound (new keys only) and its O(1) count,
 * purge, ordering (stale / current / own retry), terminal convergence across channels and
 * re-emissions. A new implementation is a new `StoreFactory` and one line in
 * contract.test.ts.
 */
import type { Test } from 'tap';
import type {
  AcceptInput,
  AcceptOutcome,
  DeliveryStore,
  ProtocolVersion,
  TaskObservation,
} from '../../../receiver/store/index.js';

export interface StoreOptions {
  protocolVersion?: ProtocolVersion;
  leaseMs?: number;
  maxKeysPerSender?: number;
  retryHorizonSeconds?: (sender: string) => number | undefined;
}

export interface StoreFactory {
  name: string;
  make(o: StoreOptions): Promise<DeliveryStore>;
  /** Makes every stored key and task of `sender` past its retention. */
  expire(sender: string): Promise<void>;
  /**
   * Another handle on the stored state of `store`, as a second process sharing the store
   * holds it (a store held in one process's memory: that store itself).
   */
  peer(store: DeliveryStore, o: StoreOptions): Promise<DeliveryStore>;
}

const NONE: TaskObservation = {
  taskId: null,
  at: null,
  status: null,
  taskType: null,
  value: null,
  source: 'webhook',
  notificationId: null,
};

let n = 0;
/** A sender name unique to this run of the suite (stores may be shared across tests). */
const senderName = (label: string) => `${label}-${process.pid}-${++n}`;

function input(
  sender: string,
  key: string,
  fingerprint = 'f1',
  observation: Partial<TaskObservation> = {},
): AcceptInput {
  return { sender, key, fingerprint, observation: { ...NONE, ...observation } };
}

function claimOf(t: Test, out: AcceptOutcome) {
  if (out.kind !== 'claimed') throw new Error(`expected claimed, got ${out.kind}`);
  t.ok(out.claim.owner, 'a claim names its owner');
  return out.claim;
}

export function deliveryStoreContract(t: Test, f: StoreFactory): void {
  t.test(`${f.name}: 3.2 claim: new, in flight, done, changed payload`, async (t) => {
    const s = await f.make({});
    const a = senderName('a');
    const c = claimOf(t, await s.accept(input(a, 'k-0000000000000001')));
    t.same(await s.accept(input(a, 'k-0000000000000001')), { kind: 'in_flight' });
    t.same(await s.accept(input(a, 'k-0000000000000001', 'f2')), { kind: 'conflict' });
    t.equal(await s.complete(c, 'published'), true);
    t.same(await s.accept(input(a, 'k-0000000000000001')), { kind: 'done', outcome: 'published' });
    t.same(await s.accept(input(a, 'k-0000000000000001', 'f2')), { kind: 'conflict' });
    t.equal((await s.accept(input(senderName('b'), 'k-0000000000000001', 'f2'))).kind, 'claimed');
  });

  t.test(`${f.name}: 3.1: no payload comparison, first copy wins`, async (t) => {
    const s = await f.make({ protocolVersion: '3.1' });
    const a = senderName('a31');
    const c = claimOf(t, await s.accept(input(a, 'k31')));
    t.same(await s.accept(input(a, 'k31', 'f2')), { kind: 'in_flight' });
    await s.complete(c, 'published');
    t.same(await s.accept(input(a, 'k31', 'f2')), { kind: 'done', outcome: 'published' });
  });

  t.test(`${f.name}: takeover after the lease fences the late owner`, async (t) => {
    const s = await f.make({ leaseMs: 100 });
    const a = senderName('c');
    const first = claimOf(t, await s.accept(input(a, 'kc')));
    await new Promise((r) => setTimeout(r, 150));
    t.same(await s.accept(input(a, 'kc', 'g')), { kind: 'conflict' });
    const second = claimOf(t, await s.accept(input(a, 'kc')));
    t.equal(second.takeover, true);
    t.equal(second.generation, first.generation + 1);
    t.equal(await s.renew(first), false, 'late owner cannot renew');
    t.equal(await s.complete(first, 'published'), false, 'late owner cannot mark done');
    t.equal(await s.complete(second, 'published'), true);
    t.equal(await s.complete(second, 'published'), false, 'done once');
  });

  t.test(`${f.name}: a dead owner's claim: 503 within its lease, taken over after`, async (t) => {
    // The chaos case (issue 23): a process dies while publishing; the sender's retries reach
    // another process. Within the lease they are in flight; the first retry after it takes
    // the key over, in a batch with other deliveries, and publishes it as its own.
    const dead = await f.make({ leaseMs: 400 });
    const a = senderName('dead');
    const task = (key: string, taskId: string) =>
      input(a, key, key, {
        taskId,
        status: 'completed',
        at: '2026-01-01T00:00:00Z',
        value: { id: key },
        notificationId: `n-${key}`,
      });
    const lost = await Promise.all(['kx', 'ky'].map((k) => dead.accept(task(k, `t-${k}`))));
    const gone = lost.map((o) => claimOf(t, o));
    const s = await f.peer(dead, { leaseMs: 400 });
    const early = await Promise.all([
      s.accept(task('kx', 't-kx')),
      s.accept(task('kz', 't-kz')),
      s.accept(task('ky', 't-ky')),
    ]);
    t.same(
      early.map((o) => o.kind),
      ['in_flight', 'claimed', 'in_flight'],
      'within the lease: in flight',
    );
    await new Promise((r) => setTimeout(r, 450));
    const later = await Promise.all([
      s.accept(task('kx', 't-kx')),
      s.accept(task('kw', 't-kw')),
      s.accept(task('ky', 't-ky')),
      s.accept(task('kz', 't-kz')),
    ]);
    const view = later.map((o) =>
      o.kind === 'claimed' ? `${o.decision} ${o.claim.takeover} ${o.claim.generation}` : o.kind,
    );
    t.same(
      view,
      ['terminal_won true 2', 'terminal_won false 1', 'terminal_won true 2', 'terminal_won true 2'],
      'past the lease: every open claim is taken over, its own retry wins',
    );
    for (const [i, o] of later.entries())
      t.equal(await s.complete(claimOf(t, o), 'ok'), true, `${i}`);
    t.equal(await dead.complete(gone[0]!, 'ok'), false, 'the dead owner is fenced out');
    t.same(await s.accept(task('kx', 't-kx')), { kind: 'done', outcome: 'ok' });
  });

  t.test(`${f.name}: release lets the retry claim at once; renew keeps it`, async (t) => {
    const s = await f.make({ leaseMs: 300 });
    const a = senderName('d');
    await s.release(claimOf(t, await s.accept(input(a, 'kd'))));
    const b = claimOf(t, await s.accept(input(a, 'kd')));
    t.equal(b.takeover, true, 'a released claim is taken over');
    for (let i = 0; i < 4; i++) {
      await new Promise((r) => setTimeout(r, 100));
      t.equal(await s.renew(b), true);
    }
    t.same(await s.accept(input(a, 'kd')), { kind: 'in_flight' });
  });

  t.test(`${f.name}: 200 concurrent claims of one key: exactly one owner`, async (t) => {
    const s = await f.make({});
    const a = senderName('e');
    const results = await Promise.all(Array.from({ length: 200 }, () => s.accept(input(a, 'ke'))));
    t.equal(results.filter((r) => r.kind === 'claimed').length, 1);
    t.equal(results.filter((r) => r.kind === 'in_flight').length, 199);
  });

  t.test(`${f.name}: per-sender bound: new keys only; counted in O(1)`, async (t) => {
    const s = await f.make({ maxKeysPerSender: 2 });
    const a = senderName('bounded');
    for (const k of ['b1', 'b2']) await s.complete(claimOf(t, await s.accept(input(a, k))), 'ok');
    t.equal(await s.senderKeyCount(a), 2);
    t.same(await s.accept(input(a, 'b3')), { kind: 'over_limit' });
    t.same(await s.accept(input(a, 'b1')), { kind: 'done', outcome: 'ok' });
    t.equal((await s.accept(input(senderName('other'), 'b3'))).kind, 'claimed');
    t.equal(await s.senderKeyCount(a), 2, 'a refused key is not counted');
    t.equal(await s.senderKeyCount(senderName('nobody')), 0);
  });

  t.test(`${f.name}: retention and purge keep the count exact`, async (t) => {
    const s = await f.make({
      retryHorizonSeconds: (x) => (x.startsWith('long') ? 172_800 : undefined),
    });
    t.equal(s.retentionSeconds('short'), 86_400);
    t.equal(s.retentionSeconds('long'), 172_800);
    const a = senderName('long');
    for (const k of ['p1', 'p2', 'p3'])
      await s.complete(claimOf(t, await s.accept(input(a, k))), 'ok');
    t.equal(await s.senderKeyCount(a), 3);
    await f.expire(a);
    t.ok((await s.purgeExpired()) >= 3);
    t.equal(await s.senderKeyCount(a), 0, 'purge lowers the count');
    t.equal((await s.accept(input(a, 'p1', 'other'))).kind, 'claimed', 'a purged key is new');
    t.equal(await s.senderKeyCount(a), 1);
  });

  t.test(`${f.name}: ordering: newer current, older stale, own retry current`, async (t) => {
    const s = await f.make({});
    const a = senderName('ord');
    const at = (key: string, ts: string) =>
      s.accept(input(a, key, key, { taskId: 't1', status: 'working', at: ts }));
    const decision = async (key: string, ts: string) => {
      const out = await at(key, ts);
      if (out.kind !== 'claimed') return out.kind;
      await s.release(out.claim);
      return out.decision;
    };
    t.equal(await decision('k2', '2026-01-01T00:00:02Z'), 'current');
    t.equal(await decision('k1', '2026-01-01T00:00:01Z'), 'stale');
    t.equal(await decision('k3', '2026-01-01T00:00:02Z'), 'stale', 'equal is stale');
    t.equal(await decision('k2', '2026-01-01T00:00:02Z'), 'current', 'own retry');
    t.equal(await decision('k4', '2026-01-01T00:00:02.000001Z'), 'current', 'microseconds');
  });

  t.test(`${f.name}: terminal convergence across webhook and poll`, async (t) => {
    const s = await f.make({});
    const a = senderName('conv');
    const term = async (
      key: string,
      status: string,
      value: unknown,
      taskType = 'create_media_buy',
    ) => {
      const out = await s.accept(input(a, key, key, { taskId: 't2', status, value, taskType }));
      return out.kind === 'claimed' ? out.decision : out.kind;
    };
    t.equal(await term('w1', 'completed', { a: 1, b: 2 }), 'terminal_won');
    t.equal(await term('w2', 'completed', { b: 2, a: 1 }), 'terminal_duplicate', 'JCS-equal');
    t.equal(await term('w3', 'failed', null), 'terminal_conflict');
    t.equal(await term('w4', 'completed', { a: 1, b: 2 }, 'sync_creatives'), 'terminal_conflict');
    const late = await s.accept(
      input(a, 'w5', 'w5', { taskId: 't2', status: 'working', at: '2030-01-01T00:00:00Z' }),
    );
    t.equal(late.kind === 'claimed' && late.decision, 'stale', 'non-terminal after terminal');
    const poll = {
      sender: a,
      taskId: 't2',
      taskType: null,
      value: { a: 1, b: 2 },
      source: 'poll' as const,
    };
    t.equal(await s.observeTerminal({ ...poll, status: 'completed' }), 'duplicate');
    t.equal(await s.observeTerminal({ ...poll, status: 'canceled' }), 'conflict');
    t.equal(await s.observeTerminal({ ...poll, taskId: 't3', status: 'completed' }), 'won');
    await t.rejects(s.observeTerminal({ ...poll, status: 'working' }), TypeError);
  });

  t.test(`${f.name}: a notification_id under a new key is a re-emission`, async (t) => {
    const s = await f.make({});
    const a = senderName('re');
    const emit = async (key: string) => {
      const out = await s.accept(input(a, key, key, { notificationId: 'n-1' }));
      return out.kind === 'claimed' && out.reEmission;
    };
    t.equal(await emit('r1'), false);
    t.equal(await emit('r2'), true);
    t.equal(
      (await s.accept(input(senderName('re'), 'r3', 'r3', { notificationId: 'n-1' }))).kind,
      'claimed',
    );
  });

  t.test(`${f.name}: concurrent deliveries (one batch) decide as one at a time`, async (t) => {
    const s = await f.make({});
    const a = senderName('batch');
    const same = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        s.accept(input(a, `nb-${i}`, `f${i}`, { notificationId: 'n-batch' })),
      ),
    );
    const flags = same.map((o) => o.kind === 'claimed' && o.reEmission);
    t.equal(flags.filter((x) => !x).length, 1, 'one first emission');
    t.equal(flags.filter(Boolean).length, 29, 'every other key is a re-emission');
    const at = (i: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();
    const newer = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        s.accept(
          input(a, `tk-${i}`, `f${i}`, { taskId: `bt-${i}`, status: 'working', at: at(10) }),
        ),
      ),
    );
    t.ok(newer.every((o) => o.kind === 'claimed' && o.decision === 'current'));
    const mixed = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        s.accept(
          input(a, `tk2-${i}`, `g${i}`, {
            taskId: `bt-${i}`,
            status: 'working',
            at: at(i % 2 ? 20 : 5),
          }),
        ),
      ),
    );
    t.same(
      mixed.map((o) => (o.kind === 'claimed' ? o.decision : o.kind)),
      Array.from({ length: 20 }, (_, i) => (i % 2 ? 'current' : 'stale')),
      'newer current, older stale, per task',
    );
    const oneTask = await Promise.all(
      [30, 25, 35].map((sec, i) =>
        s.accept(
          input(a, `ot-${i}`, `h${i}`, { taskId: 'bt-one', status: 'working', at: at(sec) }),
        ),
      ),
    );
    t.equal(
      oneTask.filter((o) => o.kind === 'claimed' && o.decision === 'current').length >= 1,
      true,
      'one task seen three times in a batch: at least the newest is current',
    );
  });
}
