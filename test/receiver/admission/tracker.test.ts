/**
 * New-keyid admission tracking against the real PostgreSQL, and over real HTTP through the
 * receiver: first-time keyids are written behind (never a database round trip per event),
 * the clauses raise alarms that name themselves in the log and in Prometheus, nothing is
 * revoked, and `threshold_tuning_overdue` fires for shipped defaults 30 days on.
 */
import { Writable } from 'node:stream';
import t, { type Test } from 'tap';
import { Registry } from 'prom-client';
import { AdmissionTracker, ALL_SENDERS } from '../../../receiver/admission/tracker.js';
import { GUIDE_VALUES, type Thresholds } from '../../../receiver/admission/clauses.js';
import { TrustedKeyResolver } from '../../../receiver/keys/trusted-key-resolver.js';
import { parseTrust } from '../../../receiver/trust/trust-file.js';
import { ConfigError, loadConfig } from '../../../shared/config.js';
import { createLogger } from '../../../shared/infra/logger.js';
import { dropSchema, type Pool } from '../../../shared/infra/pg.js';
import { testDatabase, uniqueName } from '../../helpers/db.js';
import { jwksOf, receiverOver, signingKey } from '../keys/e2e.js';
import { manualClock } from '../keys/doc-server.js';

const { pool } = testDatabase(t, 'radmit');
const DAY_MS = 86_400_000;
const ALL_SET: Thresholds = { ...GUIDE_VALUES };

function freshSchema(t: Test): string {
  const schema = uniqueName('radm');
  t.teardown(() => dropSchema(pool, schema));
  return schema;
}

function logCapture() {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { logger: createLogger({ level: 'info', destination }), lines };
}

/** The real pool, counting the statements sent through it. */
function counting(p: Pool): { pool: Pool; count: () => number } {
  let n = 0;
  const proxy = new Proxy(p, {
    get(target, prop, receiver) {
      if (prop === 'query') {
        return (...args: unknown[]) => {
          n++;
          return (target.query as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return Reflect.get(target, prop, receiver);
    },
  });
  return { pool: proxy, count: () => n };
}

t.test('observe is memory-only; new keyids are written behind, once', async (t) => {
  const schema = freshSchema(t);
  const c = counting(pool);
  const tracker = new AdmissionTracker({
    pool: c.pool,
    schema,
    thresholds: ALL_SET,
    evaluateEveryMs: 0,
    flushDelayMs: 10_000,
  });
  await tracker.start();
  const before = c.count();
  for (let i = 0; i < 1000; i++) tracker.observe('k1', 'seller');
  tracker.observe('k2', 'seller');
  t.equal(c.count(), before, '1001 observations, no statement');
  t.equal(await tracker.flush(), 2, 'two new keyids');
  const afterFirst = c.count();
  t.ok(afterFirst - before <= 3, 'one insert (and the evaluation it triggers)');
  for (let i = 0; i < 1000; i++) tracker.observe('k1', 'seller');
  t.equal(await tracker.flush(), 0);
  t.equal(c.count(), afterFirst, 'known keyids: nothing written');
  const { rows } = await pool.query(
    `SELECT sender, keyid FROM ${schema}.keyid_admissions ORDER BY keyid`,
  );
  t.same(rows, [
    { sender: 'seller', keyid: 'k1' },
    { sender: 'seller', keyid: 'k2' },
  ]);
  await tracker.stop();

  // A restarted instance knows them from the table; two instances meeting the same new
  // keyid record it once.
  const a = new AdmissionTracker({ pool, schema, thresholds: ALL_SET, evaluateEveryMs: 0 });
  const b = new AdmissionTracker({ pool, schema, thresholds: ALL_SET, evaluateEveryMs: 0 });
  await a.start();
  await b.start();
  a.observe('k1', 'seller');
  t.equal(await a.flush(), 0, 'k1 is not new after a restart');
  a.observe('k3', 'seller');
  b.observe('k3', 'seller');
  const news = (await a.flush()) + (await b.flush());
  t.equal(news, 1, 'k3 is new once, whichever instance wrote it first');
  const reg = new Registry();
  a.attachMetrics(reg);
  t.match(await reg.metrics(), /receiver_keyid_first_seen_total\{sender="seller"\} 1/);
  await a.stop();
  await b.stop();
  // The same keyid under another sender is another admission.
  const other = new AdmissionTracker({ pool, schema, thresholds: ALL_SET, evaluateEveryMs: 0 });
  await other.start();
  other.observe('k1', 'another-seller');
  t.equal(await other.flush(), 1);
  await other.stop();
});

t.test('a failed write keeps the queued keyids for the next flush', async (t) => {
  const schema = freshSchema(t);
  const { logger, lines } = logCapture();
  const make = (flushDelayMs: number) =>
    new AdmissionTracker({
      pool,
      schema,
      logger,
      thresholds: ALL_SET,
      evaluateEveryMs: 0,
      flushDelayMs,
    });
  const explicit = make(60_000);
  const timed = make(1);
  await explicit.start();
  await timed.start();
  const away = () =>
    pool.query(`ALTER TABLE ${schema}.keyid_admissions RENAME TO keyid_admissions_away`);
  const back = () =>
    pool.query(`ALTER TABLE ${schema}.keyid_admissions_away RENAME TO keyid_admissions`);
  await away();
  explicit.observe('k-retried', 'seller');
  await t.rejects(explicit.flush(), /keyid_admissions/);
  await back();
  t.equal(await explicit.flush(), 1, 'written on the next flush');
  // The timer-driven flush logs its failures instead of throwing.
  await away();
  timed.observe('k-timer', 'seller');
  for (let i = 0; i < 200 && !lines.some((l) => l.event === 'keyid_admission_flush_failed'); i++) {
    await new Promise((r) => setTimeout(r, 10));
  }
  t.ok(lines.some((l) => l.event === 'keyid_admission_flush_failed'));
  await back();
  await timed.stop();
  await explicit.stop();
  const { rows } = await pool.query(`SELECT keyid FROM ${schema}.keyid_admissions ORDER BY 1`);
  t.same(
    rows.map((r) => r.keyid),
    ['k-retried', 'k-timer'],
    'stop() flushed what was left',
  );
});

t.test('a burst of new keyids over HTTP: alarms name the clause, nothing is revoked', async (t) => {
  const schema = freshSchema(t);
  const { logger, lines } = logCapture();
  const clock = manualClock(Date.now());
  const tracker = new AdmissionTracker({
    pool,
    schema,
    logger,
    clock: clock.now,
    thresholds: { ...GUIDE_VALUES, ceilingMin: 5 },
    evaluateEveryMs: 0,
    flushDelayMs: 60_000, // written by the explicit flush below (the burst is then one window)
  });
  await tracker.start();
  const registry = new Registry();
  tracker.attachMetrics(registry);
  const keys = await Promise.all(
    Array.from({ length: 8 }, (_, i) => signingKey(`burst-${i}-${Date.now()}`)),
  );
  // The sender is known (its initial key set came an hour ago): the burst is a burst.
  const established = await signingKey(`established-${Date.now()}`);
  const resolver = new TrustedKeyResolver(
    parseTrust({ senders: [{ id: 'seller', jwks: jwksOf(established, ...keys) }] }),
  );
  const { deliver, events } = await receiverOver(t, pool, schema, resolver, undefined, tracker);
  t.equal((await deliver(established)).status, 200);
  await tracker.flush();
  t.same((await tracker.evaluate()).alarms, [], 'a sender first seen: no alarm');
  clock.advance(60 * 60_000);
  for (const k of keys) t.equal((await deliver(k)).status, 200);
  await tracker.flush();
  const ev = await tracker.evaluate();
  const clauses = (scope: string) =>
    ev.alarms.filter((a) => a.scope === scope).map((a) => a.clause);
  t.same(clauses('seller'), ['a_short_ratio', 'b_medium_ratio', 'c_long_ratio', 'd_ceiling']);
  t.same(clauses(ALL_SENDERS), clauses('seller'));
  const logged = lines.filter((l) => l.event === 'keyid_admission_alarm');
  t.equal(logged.length, 8, 'each clause, each scope, once');
  t.ok(
    logged.every((l) => l.level === 40 && typeof l.clause === 'string'),
    'warnings naming it',
  );
  t.match(
    logged.find((l) => l.clause === 'd_ceiling' && l.scope === 'seller'),
    { newKeyids: 8, threshold: 5 },
  );
  const metrics = await registry.metrics();
  t.match(metrics, /receiver_keyid_admission_alarms_total\{clause="d_ceiling",scope="seller"\} 1/);
  t.match(metrics, /receiver_keyid_admission_alarm\{clause="d_ceiling",scope="\*"\} 1/);
  t.match(metrics, /receiver_keyid_admission_window\{scope="seller"\} 8/);

  // Never auto-revoked: every key still verifies; the alarm is not raised again.
  for (const k of keys) t.equal((await deliver(k)).status, 200, 'still accepted');
  t.equal(events.length, 17);
  await tracker.evaluate();
  t.equal(lines.filter((l) => l.event === 'keyid_admission_alarm').length, 8, 'once per episode');

  // The window moves on: the alarm clears (gauge 0), the counter stays.
  clock.advance(10 * 60_000);
  const later = await tracker.evaluate();
  t.same(later.alarms, []);
  const after = await registry.metrics();
  t.match(after, /receiver_keyid_admission_alarm\{clause="d_ceiling",scope="seller"\} 0/);
  t.match(after, /receiver_keyid_admission_alarms_total\{clause="d_ceiling",scope="seller"\} 1/);
  await tracker.stop();
});

t.test('a clean demo: senders first seen with their whole key sets raise no alarm', async (t) => {
  const schema = freshSchema(t);
  const { logger, lines } = logCapture();
  const clock = manualClock(Date.now());
  const tracker = new AdmissionTracker({
    pool,
    schema,
    logger,
    clock: clock.now,
    thresholds: ALL_SET,
    evaluateEveryMs: 0,
    flushDelayMs: 60_000,
  });
  await tracker.start();
  // The first hour: the local seller's key, then ten minutes on the conformance kit's set.
  tracker.observe('seller-k1', 'local-seller');
  await tracker.flush();
  clock.advance(10 * 60_000);
  for (let i = 0; i < 6; i++) tracker.observe(`tester-k${i}`, 'conformance-tester');
  await tracker.flush();
  const ev = await tracker.evaluate();
  t.same(ev.alarms, [], 'no clause trips');
  t.same(
    lines.filter((l) => l.event === 'keyid_admission_alarm'),
    [],
    'no route-to-incident-response line',
  );
  // The same sender presenting six more new keyids later is the anomaly, and alarms.
  clock.advance(10 * 60_000);
  for (let i = 0; i < 6; i++) tracker.observe(`tester-rotated-k${i}`, 'conformance-tester');
  await tracker.flush();
  const later = await tracker.evaluate();
  t.same(
    later.alarms.filter((a) => a.scope === 'conformance-tester').map((a) => a.clause),
    ['a_short_ratio', 'b_medium_ratio'],
    'a known sender with a burst of new keyids: the ratio clauses',
  );
  t.ok(
    lines.some((l) => l.event === 'keyid_admission_alarm'),
    'logged',
  );
  await tracker.stop();
});

t.test('threshold_tuning_overdue: shipped defaults 30 days after first admission', async (t) => {
  const schema = freshSchema(t);
  const { logger, lines } = logCapture();
  const clock = manualClock(Date.now());
  const make = (thresholds: Partial<Thresholds> = {}, random = () => 0.5) =>
    new AdmissionTracker({
      pool,
      schema,
      logger,
      clock: clock.now,
      thresholds,
      random,
      evaluateEveryMs: 0,
    });
  const shipped = make({}, () => 0);
  await shipped.start();
  t.same(shipped.inForce?.atDefault, [
    'shortRatio',
    'mediumRatio',
    'longRatio',
    'ceilingMin',
    'ceilingFraction',
  ]);
  t.equal(shipped.inForce?.values.shortRatio, 1.5, 'randomised: 0.5x the guide value');
  const again = make({}, () => 1);
  await again.start();
  t.equal(again.inForce?.values.shortRatio, 1.5, 'drawn once per deployment, then kept');

  t.same((await shipped.evaluate()).tuningOverdue, [], 'no admission yet');
  const insert = (ageMs: number) =>
    pool.query(
      `INSERT INTO ${schema}.keyid_admissions VALUES ('s', $1, to_timestamp($2), to_timestamp($2))`,
      [`k-${ageMs}`, (clock.now() - ageMs) / 1000],
    );
  await insert(29 * DAY_MS);
  t.same((await shipped.evaluate()).tuningOverdue, [], '29 days: not yet');
  await insert(31 * DAY_MS);
  const ev = await shipped.evaluate();
  t.same(ev.tuningOverdue, shipped.inForce?.atDefault, '31 days: every default overdue');
  const reg = new Registry();
  shipped.attachMetrics(reg);
  t.match(
    await reg.metrics(),
    /receiver_keyid_threshold_tuning_overdue\{threshold="ceilingMin"\} 1/,
  );
  const overdue = lines.filter((l) => l.event === 'threshold_tuning_overdue');
  t.equal(overdue.length, 1);
  t.equal(overdue[0]?.level, 40);
  t.same(overdue[0]?.thresholds, shipped.inForce?.atDefault);
  await shipped.evaluate();
  t.equal(lines.filter((l) => l.event === 'threshold_tuning_overdue').length, 1, 'once a day');
  clock.advance(DAY_MS);
  await shipped.evaluate();
  t.equal(lines.filter((l) => l.event === 'threshold_tuning_overdue').length, 2);

  const partly = make({ shortRatio: 4, ceilingMin: 30 });
  await partly.start();
  t.same((await partly.evaluate()).tuningOverdue, ['mediumRatio', 'longRatio', 'ceilingFraction']);
  t.equal(partly.inForce?.values.shortRatio, 4, 'configured values are used as given');
  const tuned = make(ALL_SET);
  await tuned.start();
  t.same((await tuned.evaluate()).tuningOverdue, [], 'all configured: nothing overdue');
  for (const tr of [shipped, again, partly, tuned]) await tr.stop();
});

t.test('configuration: SVC_RECEIVER_ADMISSION_* parsed, malformed values refused', async (t) => {
  const base = loadConfig({});
  t.equal(base.SVC_RECEIVER_ADMISSION_SHORT_RATIO, undefined, 'unset: shipped default');
  t.equal(base.SVC_RECEIVER_ADMISSION_MIN_NEW, 3);
  t.equal(base.SVC_RECEIVER_ADMISSION_EVALUATE_SECONDS, 60);
  const set = loadConfig({
    SVC_RECEIVER_ADMISSION_SHORT_RATIO: '2.5',
    SVC_RECEIVER_ADMISSION_CEILING_FRACTION: '0.05',
    SVC_RECEIVER_ADMISSION_CEILING_MIN: '40',
  });
  t.equal(set.SVC_RECEIVER_ADMISSION_SHORT_RATIO, 2.5);
  t.equal(set.SVC_RECEIVER_ADMISSION_CEILING_FRACTION, 0.05);
  t.equal(set.SVC_RECEIVER_ADMISSION_CEILING_MIN, 40);
  const bad: Array<[string, string]> = [
    ['SVC_RECEIVER_ADMISSION_SHORT_RATIO', '0'],
    ['SVC_RECEIVER_ADMISSION_SHORT_RATIO', '-1'],
    ['SVC_RECEIVER_ADMISSION_MEDIUM_RATIO', 'two'],
    ['SVC_RECEIVER_ADMISSION_LONG_RATIO', '1001'],
    ['SVC_RECEIVER_ADMISSION_CEILING_MIN', '0'],
    ['SVC_RECEIVER_ADMISSION_CEILING_FRACTION', '1.5'],
    ['SVC_RECEIVER_ADMISSION_MIN_NEW', '0'],
    ['SVC_RECEIVER_ADMISSION_MIN_NEW', '2.5'],
    ['SVC_RECEIVER_ADMISSION_EVALUATE_SECONDS', '1'],
  ];
  for (const [name, value] of bad) {
    t.throws(
      () => loadConfig({ [name]: value }),
      { name: 'ConfigError', variable: name },
      `${name}=${value}`,
    );
  }
  t.ok(new ConfigError('X', 'y', 'z') instanceof Error);
});
