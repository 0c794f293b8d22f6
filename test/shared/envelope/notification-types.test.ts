/**
 * The notification-type table (shared/envelope/notification-types.ts) against the published
 * enums it restates: every type of `enums/notification-type.json` has a row, its release is
 * the first enum that names it, its payload schema exists, and the derived lists are the
 * ones the supplement's §6.7 anchors name.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import {
  ACCOUNT_NOTIFICATION_TYPES,
  advertisedTypes,
  AGENT_NOTIFICATION_TYPES,
  coalescenceWindows,
  DELIVERY_NOTIFICATION_TYPES,
  existsIn,
  MEDIA_BUY_NOTIFICATION_TYPES,
  NOTIFICATION_TYPES,
} from '../../../shared/envelope/notification-types.js';

const schemas = join(import.meta.dirname, '../../../../shared/spec/schemas');
const RELEASES = { '3.1': '3.1.19', '3.2': '3.2.0-beta.5' } as const;
const enumOf = (dir: string): string[] =>
  (
    JSON.parse(readFileSync(join(schemas, dir, 'enums/notification-type.json'), 'utf8')) as {
      enum: string[];
    }
  ).enum;

t.test('one row per published type, with the release that added it', async (t) => {
  const v31 = enumOf(RELEASES['3.1']);
  const v32 = enumOf(RELEASES['3.2']);
  t.same(Object.keys(NOTIFICATION_TYPES).sort(), [...v32].sort(), 'the 3.2 enum, no more');
  for (const [type, row] of Object.entries(NOTIFICATION_TYPES)) {
    t.equal(row.since, v31.includes(type) ? '3.1' : '3.2', `${type} since`);
    t.ok(
      existsSync(join(schemas, RELEASES[row.since], row.payload)) ||
        existsSync(join(schemas, RELEASES['3.2'], row.payload)),
      `${type} payload ${row.payload} is a published schema`,
    );
    if (row.deliveryReport)
      t.notOk('coalescenceSeconds' in row, `${type}: reports are not coalesced`);
  }
});

t.test('the surfaces of supplement §6.7', async (t) => {
  t.same(MEDIA_BUY_NOTIFICATION_TYPES, [
    'scheduled',
    'final',
    'delayed',
    'adjusted',
    'window_update',
    'impairment',
  ]);
  t.equal(ACCOUNT_NOTIFICATION_TYPES.length, 14);
  t.same(AGENT_NOTIFICATION_TYPES, ['capabilities.changed']);
  t.same(DELIVERY_NOTIFICATION_TYPES, [
    'scheduled',
    'final',
    'delayed',
    'adjusted',
    'window_update',
  ]);
});

t.test(
  'advertised lists, coalescence windows and the version gate derive from the rows',
  async (t) => {
    t.same(advertisedTypes('ext.account_events'), [
      'creative.status_changed',
      'creative.assignment_changed',
      'account.status_changed',
    ]);
    t.same(advertisedTypes('capability_changes'), ['capabilities.changed']);
    t.same(coalescenceWindows(), {
      impairment: 300,
      'impairment.fraud': 0,
      'impairment.brand_safety': 0,
      'creative.status_changed': 60,
      'creative.assignment_changed': 60,
      'account.status_changed': 0,
      'capabilities.changed': 0,
    });
    t.notOk(existsIn('window_update', '3.1'));
    t.ok(existsIn('window_update', '3.2'));
    t.ok(existsIn('adjusted', '3.1'));
  },
);
