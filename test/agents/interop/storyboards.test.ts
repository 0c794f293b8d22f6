/**
 * Every compliance storyboard the reference SDK (`@adcp/sdk` 6.11.0, `testing` entry)
 * selects for each agent's declared capabilities, against the agents as `svc start`
 * builds them with SVC_BRAND=adcp, over MCP and over A2A, in both modes:
 *  - seeded: the demo deployment (test controller on, demo buyer is a sandbox principal),
 *    so the runner seeds fixtures through comply_test_controller;
 *  - unseeded: a production deployment (no controller), where fixture-seeded storyboards
 *    and controller phases are not applicable.
 * A failed step fails the test, except the ones listed in KNOWN_FAILURES below with the
 * owner of the fix; a listed storyboard that passes is reported (prune the list). The two
 * transports must give every storyboard the same verdict (A2A and MCP give the same
 * results), except where KNOWN_FAILURES names one transport.
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

type Mode = 'seeded' | 'unseeded';
type Transport = 'mcp' | 'a2a';
const TRANSPORTS: Transport[] = ['mcp', 'a2a'];

const KNOWN_FAILURES: Record<
  string,
  { modes: Mode[]; owner: string; /** default: both */ transports?: Transport[] }
> = {
  'creative:creative_lifecycle': {
    modes: ['seeded', 'unseeded'],
    owner:
      'upstream fixture (proto): preview_display and build_video_tag name formats of https://your-platform.example.com (a placeholder the 6.11.0 runner never replaces: no option, env or fixture field, and its request builder lets the fixture win); a creative agent renders and builds only its own formats (FORMAT_NOT_SUPPORTED; the reserved .example host cannot be resolved either), and no preview response (3.0.6, 3.1.19, 3.2.0-beta.5) has an error arm',
  },
  'sales:deterministic_testing': {
    modes: ['seeded'],
    owner:
      'upstream fixture: the creative of sync_creative_for_state names format display_300x250 of https://your-platform.example.com (a placeholder the 6.11.0 runner never replaces: no such token in its code, and the sync_creatives enricher lets the fixture win; storyboards migrated to the newer convention capture $context.format_agent_url/format_id from get_products, this one has no discovery step), so our sync refuses that creative (a format of an agent this seller does not use: format_id is the {agent_url, id} pair) and force_creative_approved finds no creative',
  },
  'sales:webhook_emission': {
    modes: ['seeded', 'unseeded'],
    owner:
      'spec conflict: the storyboard awaits a webhook (30 s) for a create that answered completed inline although its own trigger step says "an immediate terminal status (no webhook needed)"; service-spec (States: "No webhook is sent" after a terminal initial response) and supplement §4.7 forbid one; no buy event is due within 30 s, and answering submitted instead would break media_buy_seller, whose create (also with push_notification_config) must return media_buy_id inline; the test-product part is fixed (product discovery)',
  },
};

// Every selected storyboard runs to its end now (webhook_emission alone waits 30 s for its
// webhook per mode): well past the default file timeout on a shared machine.
t.setTimeout(600_000);

const AGENTS: AgentKind[] = ['sales', 'creative', 'signals'];

function known(key: string, mode: Mode, transport: Transport): boolean {
  const k = KNOWN_FAILURES[key];
  return !!k && k.modes.includes(mode) && (k.transports ?? TRANSPORTS).includes(transport);
}

for (const mode of ['seeded', 'unseeded'] as const) {
  t.test(`storyboards, ${mode}, over MCP and A2A`, async (t) => {
    const report: Record<string, Record<string, number>> = {};
    const unexpected: string[] = [];
    const fixed: string[] = [];
    const differ: string[] = [];
    const verdicts = new Map<string, Partial<Record<Transport, StoryboardOutcome['verdict']>>>();
    // One seller per transport: storyboards keep state (fixed idempotency keys, accounts,
    // buys), so a second run on the same seller would not start where the first did.
    for (const transport of TRANSPORTS) {
      const service = await startAdcpService(t, { testController: mode === 'seeded' });
      for (const agent of AGENTS) {
        const { outcomes } = await runSelectedStoryboards(
          agent,
          service.urls[agent],
          demoToken(service, agent),
          { protocol: transport },
        );
        report[`${agent} ${transport}`] = tally(outcomes);
        // INTEROP_REPORT=<file>: every outcome as a JSON line, for reading failures in full.
        if (process.env.INTEROP_REPORT) {
          for (const o of outcomes) {
            appendFileSync(
              process.env.INTEROP_REPORT,
              `${JSON.stringify({ mode, agent, transport, ...o })}\n`,
            );
          }
        }
        for (const o of outcomes) {
          const key = `${agent}:${o.id}`;
          verdicts.set(key, { ...verdicts.get(key), [transport]: o.verdict });
          const listed = known(key, mode, transport);
          if (o.verdict === 'failed' && !listed) {
            unexpected.push(`${key} over ${transport}\n    ${o.failures.join('\n    ')}`);
          }
          if (o.verdict !== 'failed' && listed) fixed.push(`${key} over ${transport}`);
        }
        t.ok(outcomes.length > 0, `${agent} over ${transport}: the SDK selects storyboards`);
      }
    }
    // Same verdict per storyboard on both transports (passed, failed, not applicable); a
    // listed storyboard is its owner's (its outcome may depend on what ran before).
    for (const [key, v] of verdicts) {
      if (v.mcp !== v.a2a && !known(key, mode, 'mcp') && !known(key, mode, 'a2a')) {
        differ.push(`${key}: MCP ${v.mcp ?? 'not run'}, A2A ${v.a2a ?? 'not run'}`);
      }
    }
    t.comment(`${mode}: ${JSON.stringify(report)}`);
    t.same(unexpected, [], `${mode}: no failed step outside KNOWN_FAILURES`);
    t.same(differ, [], `${mode}: A2A and MCP give every storyboard the same verdict`);
    // Storyboards share one seller, so a few outcomes depend on what ran before: a listed
    // storyboard that passes is reported, not failed (prune it once it passes every run).
    if (fixed.length > 0)
      t.comment(`${mode}: KNOWN_FAILURES entries that passed: ${fixed.join(', ')}`);
  });
}
