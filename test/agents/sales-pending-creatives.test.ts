/**
 * Creative references that arrive before the creative (agents/sales/creatives/assignments.ts):
 * create_media_buy and update_media_buy may name a creative the buyer has not synced yet;
 * the buy stays pending_creatives until sync_creatives brings it, then carries it.
 */
import t from 'tap';
import {
  assignCreatives,
  resolvePendingAssignments,
} from '../../agents/sales/creatives/assignments.js';
import { buyer, harness, START } from './support/core.js';
import { CREATIVE_AGENT_URL as CREATIVE, displayCreative as display } from './support/creatives.js';

const HOUR = 3600_000;
const uk = () => `pc-${Math.random().toString(36).slice(2, 14)}`;
const pkg = (extra: Record<string, unknown> = {}) => ({
  product_id: 'display_run_of_network',
  pricing_option_id: 'ron_display_auction',
  budget: 1000,
  bid_price: 4,
  ...extra,
});
/** The published form: brand, no buyer_ref, a flight starting in an hour. */
const buy = (packages: unknown[]) => ({
  idempotency_key: uk(),
  brand: { domain: 'acme.example' },
  account: { brand: { domain: 'acme.example' }, operator: 'acme.example' },
  packages,
  start_time: new Date(START + HOUR).toISOString(),
  end_time: new Date(START + 10 * HOUR).toISOString(),
});

type Pkg = { package_id: string; creative_assignments: Array<{ creative_id: string }> };
type Buy = { media_buy_id: string; status: string; packages: Pkg[] };

t.test('a creative named before it is synced is assigned when it arrives', async (t) => {
  const h = await harness(t, { settings: { approval: 'never' } });
  const c = buyer(h);
  const created = (await h.ok(
    'sales',
    'create_media_buy',
    buy([
      pkg({ creative_assignments: [{ creative_id: 'later' }] }),
      pkg({ creative_assignments: [{ creative_id: 'later' }, { creative_id: 'also_later' }] }),
    ]),
    c,
  )) as unknown as Buy & { media_buy_status: string };
  t.equal(created.media_buy_status, 'pending_creatives', 'no creative has arrived yet');
  const [p0, p1] = created.packages;
  t.same(p0!.creative_assignments, [], 'a pending reference is no assignment');
  t.same(p1!.creative_assignments, []);

  const read = async () =>
    (
      (await h.ok('sales', 'get_media_buys', { media_buy_ids: [created.media_buy_id] }, c))
        .media_buys as Buy[]
    )[0]!;
  t.equal((await read()).status, 'pending_creatives');

  // A dry run stores nothing, so it resolves nothing either.
  const dry = await h.call(
    'sales',
    'sync_creatives',
    { creatives: [display('later')], dry_run: true },
    c,
  );
  t.same((dry as unknown as { creatives: unknown[] }).creatives[0], {
    creative_id: 'later',
    action: 'created',
    status: 'approved',
    assigned_to: [p0!.package_id, p1!.package_id].sort(),
  });
  t.equal((await read()).status, 'pending_creatives', 'the dry run changed nothing');

  // Subscribers of creative.assignment_changed hear of the assignment the sync made.
  await h.ok(
    'sales',
    'sync_accounts',
    {
      // creative.assignment_changed is a 3.2 event type (3.1 has no such subscription).
      adcp_version: '3.2',
      idempotency_key: uk(),
      accounts: [
        {
          name: 'Acme',
          brand: { domain: 'acme.example' },
          notification_configs: [
            {
              subscriber_id: 's1',
              url: 'https://buyer.example/acct/s1',
              event_types: ['creative.assignment_changed'],
            },
          ],
        },
      ],
    },
    c,
  );
  const synced = await h.ok('sales', 'sync_creatives', { creatives: [display('later')] }, c);
  const events = h.notifications
    .of('accountNotification')
    .filter((e) => e.notificationType === 'creative.assignment_changed');
  t.equal(events.length, 1);
  t.match(events[0]!.fields, {
    creative_id: 'later',
    package_ids: [p0!.package_id, p1!.package_id].sort(),
  });
  t.same(
    (synced.creatives as Array<Record<string, unknown>>)[0]!.assigned_to,
    [p0!.package_id, p1!.package_id].sort(),
    'sync_creatives says where the creative went',
  );
  const after = await read();
  t.equal(after.status, 'pending_start', 'every package has a creative; the flight is ahead');
  t.same(
    after.packages.map((p) => p.creative_assignments.map((a) => a.creative_id).sort()),
    [['later'], ['later']],
  );

  // Resolved once: syncing it again assigns nothing new.
  const again = await h.ok('sales', 'sync_creatives', { creatives: [display('later')] }, c);
  t.notOk((again.creatives as Array<Record<string, unknown>>)[0]!.assigned_to);
  const also = await h.ok('sales', 'sync_creatives', { creatives: [display('also_later')] }, c);
  t.same((also.creatives as Array<Record<string, unknown>>)[0]!.assigned_to, [p1!.package_id]);
  t.same((await read()).packages[1]!.creative_assignments.map((a) => a.creative_id).sort(), [
    'also_later',
    'later',
  ]);
});

t.test('update_media_buy replaces pending references too', async (t) => {
  const h = await harness(t, { settings: { approval: 'never' } });
  const c = buyer(h);
  await h.ok('sales', 'sync_creatives', { creatives: [display('known')] }, c);
  const created = (await h.ok(
    'sales',
    'create_media_buy',
    buy([pkg({ creative_ids: ['first'] })]),
    c,
  )) as unknown as Buy;
  const packageId = created.packages[0]!.package_id;
  const updated = await h.ok(
    'sales',
    'update_media_buy',
    {
      idempotency_key: uk(),
      media_buy_id: created.media_buy_id,
      packages: [
        {
          package_id: packageId,
          creative_assignments: [{ creative_id: 'second' }, { creative_id: 'known' }],
        },
      ],
    },
    c,
  );
  t.same(
    (updated.affected_packages as Pkg[] | undefined)?.[0]?.creative_assignments ??
      (
        (await h.ok('sales', 'get_media_buys', { media_buy_ids: [created.media_buy_id] }, c))
          .media_buys as Buy[]
      )[0]!.packages[0]!.creative_assignments,
    [{ creative_id: 'known' }],
    'the known creative is assigned at once, the other waits',
  );
  const first = await h.ok('sales', 'sync_creatives', { creatives: [display('first')] }, c);
  t.notOk(
    (first.creatives as Array<Record<string, unknown>>)[0]!.assigned_to,
    'the replaced reference is gone',
  );
  const second = await h.ok('sales', 'sync_creatives', { creatives: [display('second')] }, c);
  t.same((second.creatives as Array<Record<string, unknown>>)[0]!.assigned_to, [packageId]);
});

t.test('pending references: tenants, ended buys, failed creatives', async (t) => {
  const h = await harness(t, { settings: { approval: 'never' } });
  const c = buyer(h);
  // A creative another principal holds reads exactly like an unknown one (never tell
  // "exists in another tenant" from "does not exist"), and never resolves from theirs.
  await h.pool.query(
    `INSERT INTO ${h.schema}.creatives (principal_id, creative_id, name, format_id, format_type, assets, status)
     VALUES ('someone-else', 'theirs', 'n', $1, 'display', '{}', 'active')`,
    [{ agent_url: CREATIVE, id: 'display_300x250' }],
  );
  const created = (await h.ok(
    'sales',
    'create_media_buy',
    buy([pkg({ creative_assignments: [{ creative_id: 'theirs' }] })]),
    c,
  )) as unknown as Buy & { media_buy_status: string };
  t.equal(created.media_buy_status, 'pending_creatives');
  t.same(created.packages[0]!.creative_assignments, []);

  // A creative whose sync fails is not stored, so it resolves nothing.
  const failed = await h.ok(
    'sales',
    'sync_creatives',
    { creatives: [{ ...display('theirs'), format_id: { agent_url: CREATIVE, id: 'nope' } }] },
    c,
  );
  t.match((failed.creatives as Array<Record<string, unknown>>)[0], { action: 'failed' });
  t.notOk((failed.creatives as Array<Record<string, unknown>>)[0]!.assigned_to);

  // A canceled buy takes no creative: its reference is dropped when the creative arrives.
  await h.ok(
    'sales',
    'update_media_buy',
    { idempotency_key: uk(), media_buy_id: created.media_buy_id, canceled: true },
    c,
  );
  const synced = await h.ok('sales', 'sync_creatives', { creatives: [display('theirs')] }, c);
  t.notOk((synced.creatives as Array<Record<string, unknown>>)[0]!.assigned_to);
  const { rows } = await h.pool.query(
    `SELECT 1 FROM ${h.schema}.pending_creative_assignments WHERE principal_id = 'demo-buyer'`,
  );
  t.equal(rows.length, 0, 'the dropped reference is not kept');
  const { rows: theirs } = await h.pool.query(
    `SELECT 1 FROM ${h.schema}.creative_assignments WHERE creative_id = 'theirs'`,
  );
  t.equal(theirs.length, 0, 'nothing assigned to the canceled buy');
});

t.test('malformed creative references are refused with the field', async (t) => {
  const h = await harness(t, { settings: { approval: 'never' } });
  const c = buyer(h);
  const refused = async (packageExtra: Record<string, unknown>, field: RegExp, why: string) => {
    const e = await h.err('sales', 'create_media_buy', buy([pkg(packageExtra)]), c);
    t.equal(e.code, 'VALIDATION_ERROR', `${why}: ${e.message}`);
    t.match(e.field ?? '', field, why);
  };
  await refused(
    { creative_assignments: [{ creative_id: '' }] },
    /creative_assignments/,
    'empty id',
  );
  await refused(
    { creative_assignments: [{ creative_id: 'x'.repeat(256) }] },
    /creative_assignments/,
    'id over 255',
  );
  await refused({ creative_assignments: [{}] }, /creative_assignments/, 'no creative_id');
  await refused(
    { creative_assignments: [{ creative_id: 7 }] },
    /creative_assignments/,
    'a number for an id',
  );
  await refused({ creative_ids: [''] }, /creative_ids/, 'empty id, older form');
  await refused({ creative_ids: 'x' }, /creative_ids/, 'a string for the list');
  const { rows } = await h.pool.query(`SELECT 1 FROM ${h.schema}.pending_creative_assignments`);
  t.equal(rows.length, 0, 'a refused create records nothing');
});

t.test('a package naming a creative while its sync is uncommitted still gets it', async (t) => {
  const h = await harness(t, { settings: { approval: 'never' } });
  const c = buyer(h);
  const created = (await h.ok('sales', 'create_media_buy', buy([pkg()]), c)) as unknown as Buy;
  const packageId = created.packages[0]!.package_id;
  const syncing = await h.pool.connect();
  const naming = await h.pool.connect();
  t.teardown(() => {
    syncing.release();
    naming.release();
  });
  const ctxOf = (db: typeof syncing) =>
    ({ schema: h.schema, principal: { principal_id: 'demo-buyer' }, db }) as unknown as Parameters<
      typeof assignCreatives
    >[0];
  // The sync has stored the creative (not committed yet) and looks for references to it.
  await syncing.query('BEGIN');
  await syncing.query(
    `INSERT INTO ${h.schema}.creatives (principal_id, creative_id, name, format_id, format_type, assets, status)
     VALUES ('demo-buyer', 'race', 'n', $1, 'display', '{}', 'active')`,
    [{ agent_url: CREATIVE, id: 'display_300x250' }],
  );
  t.same(await resolvePendingAssignments(ctxOf(syncing), ['race']), new Map());
  // Meanwhile an update names it: it waits for the sync instead of reading it as unknown.
  await naming.query('BEGIN');
  let pending: string[] | undefined;
  const named = assignCreatives(ctxOf(naming), packageId, ['race']).then((p) => (pending = p));
  await new Promise((r) => setTimeout(r, 200));
  t.equal(pending, undefined, 'the naming call waits for the sync to end');
  await syncing.query('COMMIT');
  await named;
  await naming.query('COMMIT');
  t.same(pending, [], 'it sees the committed creative: assigned, not pending');
  const { rows } = await h.pool.query(
    `SELECT creative_id FROM ${h.schema}.creative_assignments WHERE package_id = $1`,
    [packageId],
  );
  t.same(rows, [{ creative_id: 'race' }]);
});

t.test('a sync while a package names its creative (uncommitted) still resolves it', async (t) => {
  const h = await harness(t, { settings: { approval: 'never' } });
  const c = buyer(h);
  const created = (await h.ok('sales', 'create_media_buy', buy([pkg()]), c)) as unknown as Buy;
  const packageId = created.packages[0]!.package_id;
  const naming = await h.pool.connect();
  const syncing = await h.pool.connect();
  t.teardown(() => {
    naming.release();
    syncing.release();
  });
  const ctxOf = (db: typeof naming) =>
    ({ schema: h.schema, principal: { principal_id: 'demo-buyer' }, db }) as unknown as Parameters<
      typeof assignCreatives
    >[0];
  await naming.query('BEGIN');
  t.same(await assignCreatives(ctxOf(naming), packageId, ['race2']), ['race2'], 'pending');
  await syncing.query('BEGIN');
  await syncing.query(
    `INSERT INTO ${h.schema}.creatives (principal_id, creative_id, name, format_id, format_type, assets, status)
     VALUES ('demo-buyer', 'race2', 'n', $1, 'display', '{}', 'active')`,
    [{ agent_url: CREATIVE, id: 'display_300x250' }],
  );
  let resolved: Map<string, string[]> | undefined;
  const resolving = resolvePendingAssignments(ctxOf(syncing), ['race2']).then(
    (r) => (resolved = r),
  );
  await new Promise((r) => setTimeout(r, 200));
  t.equal(resolved, undefined, 'the sync waits for the naming call to end');
  await naming.query('COMMIT');
  await resolving;
  await syncing.query('COMMIT');
  t.same(resolved, new Map([['race2', [packageId]]]), 'it sees the committed reference');
});
