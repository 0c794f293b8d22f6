/**
 * Every compliance storyboard the reference SDK (`@adcp/sdk` 6.11.0, `testing` entry)
 * selects for each agent's declared capabilities, against the agents as `svc start`
 * builds them with SVC_BRAND=adcp, in both modes:
 *  - seeded: the demo deployment (test controller on, demo buyer is a sandbox principal),
 *    so the runner seeds fixtures through comply_test_controller;
 *  - unseeded: a production deployment (no controller), where fixture-seeded storyboards
 *    and controller phases are not applicable.
 * A failed step fails the test, except the ones listed in KNOWN_FAILURES below with the
 * owner of the fix; a listed storyboard that passes is reported (prune the list).
 */
import { appendFileSync } from 'node:fs';
import t from 'tap';
import type { AgentKind } from '../../../agents/auth/principal.js';
import {
  demoToken,
  runSelectedStoryboards,
  startAdcpService,
  tally,
  type StoryboardOutcome,
} from './support.js';

/**
 * `<agent>:<storyboard id>` -> the modes it still fails in and who fixes it (issue #10 is
 * shared by three helpers whose parts land separately). Empty once all of #10 is in.
 */
const KNOWN_FAILURES: Record<string, { modes: Mode[]; owner: string }> = {
  'creative:creative_lifecycle': {
    modes: ['seeded', 'unseeded'],
    owner:
      'upstream fixture (proto): preview_display and build_video_tag name formats of https://your-platform.example.com (a placeholder the 6.11.0 runner never replaces with the agent URL); a creative agent renders and builds only its own formats (FORMAT_NOT_SUPPORTED), and the 3.0.6 preview response has no error arm',
  },
  'sales:deterministic_testing': {
    modes: ['seeded'],
    owner: 'schemas: create_media_buy media_buy_id',
  },
  'sales:idempotency': {
    modes: ['seeded', 'unseeded'],
    owner: 'schemas: create_media_buy media_buy_id; a missing idempotency_key is INVALID_REQUEST',
  },
  'sales:media_buy_seller': {
    modes: ['seeded'],
    owner: 'schemas: create_media_buy media_buy_id',
  },
  'sales:media_buy_seller/create_media_buy_async': {
    modes: ['seeded'],
    owner: 'surface (not done): force_create_media_buy_arm',
  },
  'sales:media_buy_seller/creative_fate_after_cancellation': {
    modes: ['unseeded'],
    owner: 'schemas: production buys await approval (create_buy has no media_buy_id)',
  },
  'sales:media_buy_seller/invalid_transitions': {
    modes: ['unseeded'],
    owner: 'schemas: create_media_buy media_buy_id',
  },
  'sales:media_buy_seller/inventory_list_targeting': {
    modes: ['seeded', 'unseeded'],
    owner: 'schemas: create_media_buy media_buy_id, status after create',
  },
  'sales:media_buy_seller/measurement_terms_rejected': {
    modes: ['seeded', 'unseeded'],
    owner: 'schemas: TERMS_REJECTED; create_media_buy media_buy_id',
  },
  'sales:media_buy_seller/pending_creatives_to_start': {
    modes: ['seeded', 'unseeded'],
    owner: 'schemas: pending_creatives status; media_buy_id',
  },
  'sales:media_buy_state_machine': {
    modes: ['unseeded'],
    owner: 'schemas: a production buy awaits seller approval (submitted, no media_buy_id)',
  },
  'sales:schema_validation': {
    modes: ['unseeded'],
    owner: 'schemas: past start_time (INVALID_REQUEST or adjusted); production buys await approval',
  },
  'sales:webhook_emission': {
    modes: ['seeded', 'unseeded'],
    owner: 'schemas: the test kit create_media_buy (product test-product) must be accepted',
  },
};

const AGENTS: AgentKind[] = ['sales', 'creative', 'signals'];
type Mode = 'seeded' | 'unseeded';

for (const mode of ['seeded', 'unseeded'] as const) {
  t.test(`storyboards, ${mode}`, async (t) => {
    const service = await startAdcpService(t, { testController: mode === 'seeded' });
    const report: Record<string, Record<string, number>> = {};
    const unexpected: string[] = [];
    const fixed: string[] = [];
    for (const agent of AGENTS) {
      const { outcomes } = await runSelectedStoryboards(
        agent,
        service.urls[agent],
        demoToken(service, agent),
      );
      report[agent] = tally(outcomes);
      // INTEROP_REPORT=<file>: every outcome as a JSON line, for reading failures in full.
      if (process.env.INTEROP_REPORT) {
        for (const o of outcomes) {
          appendFileSync(process.env.INTEROP_REPORT, `${JSON.stringify({ mode, agent, ...o })}\n`);
        }
      }
      for (const o of outcomes as StoryboardOutcome[]) {
        const key = `${agent}:${o.id}`;
        const known = KNOWN_FAILURES[key]?.modes.includes(mode) ?? false;
        if (o.verdict === 'failed' && !known) {
          unexpected.push(`${key}\n    ${o.failures.join('\n    ')}`);
        }
        if (o.verdict !== 'failed' && known) fixed.push(key);
      }
      t.ok(outcomes.length > 0, `${agent}: the SDK selects storyboards`);
    }
    t.comment(`${mode}: ${JSON.stringify(report)}`);
    t.same(unexpected, [], `${mode}: no failed step outside KNOWN_FAILURES`);
    // Storyboards share one seller, so a few outcomes depend on what ran before: a listed
    // storyboard that passes is reported, not failed (prune it once it passes every run).
    if (fixed.length > 0)
      t.comment(`${mode}: KNOWN_FAILURES entries that passed: ${fixed.join(', ')}`);
  });
}
