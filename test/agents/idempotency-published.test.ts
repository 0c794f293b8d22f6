/**
 * `idempotency_key` on the mutating tasks whose published request schemas require it
 * (3.1.19 and 3.2.0-beta.5): sync_accounts, sync_creatives (sales and creative agents),
 * build_creative, provide_performance_feedback, activate_signal. A published-form request
 * without the key is a VALIDATION_ERROR naming it (with every other bad field at once,
 * `context` echoed); with the key a repeat replays the first answer and the same key on a
 * different request is IDEMPOTENCY_CONFLICT; the spec's older forms stay accepted without.
 */
import t from 'tap';
import type { AgentKind } from '../../agents/auth/principal.js';
import { errorResponse } from '../../agents/runtime/errors.js';
import { brandProfile } from '../../shared/brand.js';
import { buyer, harness, START, type Harness } from './support/core.js';
import { CREATIVE_AGENT_URL as CREATIVE, displayCreative as display } from './support/creatives.js';

const fmt = (id: string) => ({ agent_url: CREATIVE, id });
const ttd = { type: 'platform', platform: 'the-trade-desk' };

interface Case {
  agent: AgentKind;
  task: string;
  /** A valid published-form request (no key). */
  published: (h: Harness) => Promise<Record<string, unknown>>;
  /** The same request changed, for the conflict. */
  changed: (p: Record<string, unknown>) => Record<string, unknown>;
  /** A second bad member to be named with the missing key: [member, value, field]. */
  bad: [string, unknown, string];
  /** The spec's older form, accepted without a key (none: the task has no older form). */
  older?: (h: Harness) => Promise<Record<string, unknown>>;
}

/** An older-form buy (no key needed) for the feedback task to name. */
async function mediaBuyId(h: Harness): Promise<string> {
  const created = await h.ok(
    'sales',
    'create_media_buy',
    {
      buyer_ref: `fb-${Math.random().toString(36).slice(2)}`,
      brand_manifest: { url: 'https://acme.example' },
      packages: [
        {
          product_id: 'audio_podcast_network',
          pricing_option_id: 'podcast_cpm',
          budget: 3000,
        },
      ],
      start_time: { type: 'asap' },
      end_time: new Date(START + 7 * 86400_000).toISOString(),
    },
    buyer(h),
  );
  return created.media_buy_id as string;
}

const CASES: Case[] = [
  {
    agent: 'sales',
    task: 'sync_accounts',
    published: async () => ({
      accounts: [
        { brand: { domain: 'acme.example' }, operator: 'acme.example', billing: 'operator' },
      ],
    }),
    changed: (p) => ({
      ...p,
      accounts: [
        { brand: { domain: 'other.example' }, operator: 'acme.example', billing: 'operator' },
      ],
    }),
    bad: ['dry_run', 'yes', 'dry_run'],
    older: async () => ({ accounts: [{ name: 'Older form account' }] }),
  },
  {
    agent: 'sales',
    task: 'sync_creatives',
    published: async () => ({ account: { account_id: 'acct_x' }, creatives: [display('c1')] }),
    changed: (p) => ({ ...p, creatives: [display('c2')] }),
    bad: ['delete_missing', 'no', 'delete_missing'],
    older: async () => ({ creatives: [display('c9')], assignments: {} }),
  },
  {
    agent: 'creative',
    task: 'sync_creatives',
    published: async () => ({ creatives: [display('lib1')] }),
    changed: (p) => ({ ...p, creatives: [display('lib2')] }),
    bad: ['dry_run', 1, 'dry_run'],
  },
  {
    agent: 'creative',
    task: 'build_creative',
    published: async () => ({
      brand: { domain: 'acme.example' },
      target_format_ids: [fmt('display_300x250')],
      message: 'Run further',
    }),
    changed: (p) => ({ ...p, message: 'Run faster' }),
    bad: ['include_preview', 'yes', 'include_preview'],
    older: async () => ({
      target_format_id: fmt('display_300x250'),
      message: 'Run further this spring',
      brand_manifest: { url: 'https://acme.example' },
    }),
  },
  {
    agent: 'sales',
    task: 'provide_performance_feedback',
    published: async (h) => ({ media_buy_id: await mediaBuyId(h), performance_index: 1.1 }),
    changed: (p) => ({ ...p, performance_index: 0.9 }),
    bad: ['performance_index', 'high', 'performance_index'],
  },
  {
    agent: 'signals',
    task: 'activate_signal',
    published: async () => ({
      signal_agent_segment_id: 'sig_luxury_auto_intenders',
      destinations: [ttd],
    }),
    changed: (p) => ({ ...p, signal_agent_segment_id: 'sig_sports_enthusiasts' }),
    bad: ['action', 'pause', 'action'],
    older: async () => ({
      signal_agent_segment_id: 'sig_luxury_auto_intenders',
      deployments: [{ type: 'agent', agent_url: 'http://127.0.0.1:3001' }],
    }),
  },
];

for (const brand of ['svc', 'adcp'] as const) {
  t.test(`${brand}: published forms require the key and honour it`, async (t) => {
    const h = await harness(t, {
      profile: brandProfile(brand),
      settings: { approval: 'never' },
    });
    for (const c of CASES) {
      const what = `${c.agent}/${c.task}`;
      const creds = buyer(h, c.agent);
      const published = await c.published(h);

      // Missing key and a second bad member: both named at once, context echoed.
      const context = { correlation_id: `${what} without key` };
      const missing = await h.err(
        c.agent,
        c.task,
        { ...published, [c.bad[0]]: c.bad[1], context },
        creds,
      );
      t.equal(missing.code, 'VALIDATION_ERROR', `${what}: missing key refused`);
      t.same(
        (missing.issues ?? []).map((i) => i.pointer).sort(),
        [`/${c.bad[2]}`, '/idempotency_key'].sort(),
        `${what}: every bad field named`,
      );
      t.match(missing.message, /idempotency_key is required/);
      const wire = errorResponse(missing, { brand, context }).body;
      t.match(wire, { status: 'failed', context, errors: [{ code: 'VALIDATION_ERROR' }] });
      t.ok(`${brand}_error` in wire, `${what}: the brand's envelope error member`);

      // With the key: a replay answers the first answer; a changed request conflicts.
      const key = `${c.task}-${brand}-${c.agent}-0001`;
      const first = await h.ok(c.agent, c.task, { ...published, idempotency_key: key }, creds);
      const replay = await h.ok(
        c.agent,
        c.task,
        { ...published, idempotency_key: key, context: { correlation_id: 'retry' } },
        creds,
      );
      t.equal(replay.replayed, true, `${what}: replayed`);
      const { replayed: _r, context: ctx, ...replayBody } = replay;
      t.same(ctx, { correlation_id: 'retry' }, `${what}: the retry's own context echoed`);
      t.same(replayBody, first, `${what}: the same answer`);
      const conflict = await h.err(
        c.agent,
        c.task,
        { ...c.changed(published), idempotency_key: key },
        creds,
      );
      t.equal(conflict.code, 'IDEMPOTENCY_CONFLICT', `${what}: same key, different request`);

      // The spec's older form needs no key.
      if (c.older) {
        const older = await h.ok(c.agent, c.task, await c.older(h), creds);
        t.equal(older.replayed, undefined, `${what}: older form accepted without a key`);
      }
    }
  });
}
