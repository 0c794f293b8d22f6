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
  'creative:security_baseline': {
    modes: ['seeded', 'unseeded'],
    owner:
      'creative library (not done): no task of the SDK probe allowlist (list_creatives, get_signals, ...) on the creative agent, so every auth probe is skipped',
  },
  'sales:deterministic_testing': {
    modes: ['seeded'],
    owner:
      'formats: force_creative_approved finds no creative (the storyboard creative, image without click_url, fails sync_creatives)',
  },
  'sales:media_buy_seller': {
    modes: ['seeded'],
    owner:
      'list_creative_formats format_ids filter order (proto); create_media_buy assigns creative video_30s_trail_pro before the storyboard syncs it (forward creative references not supported: CREATIVE_NOT_FOUND)',
  },
  'sales:media_buy_seller/creative_fate_after_cancellation': {
    modes: ['seeded', 'unseeded'],
    owner:
      'formats: the storyboard creative has an image but no click_url, which every format requires (the creative fails, its assignment refuses the sync); unseeded: production buys await approval',
  },
  'sales:media_buy_seller/pending_creatives_to_start': {
    modes: ['seeded', 'unseeded'],
    owner:
      'formats: the storyboard creative (image, no click_url) fails sync_creatives, so its assignment is CREATIVE_NOT_FOUND; the status part passes',
  },
  'sales:media_buy_seller/proposal_finalize': {
    modes: ['seeded', 'unseeded'],
    owner: 'schemas: get_products proposals',
  },
  'sales:webhook_emission': {
    modes: ['seeded', 'unseeded'],
    owner:
      'spec decision: the storyboard awaits a webhook for a create that answered completed inline, which service-spec (States: no webhook after a terminal initial response) forbids; the test-product part is fixed (product discovery)',
  },
};

// Every selected storyboard runs to its end now (webhook_emission alone waits 30 s for its
// webhook per mode): well past the default file timeout on a shared machine.
t.setTimeout(600_000);

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
