/**
 * The interoperability harness: the agents as `svc start` builds them
 * (startAgentsService, SVC_BRAND=adcp, 127.0.0.1 port 0, real PostgreSQL, Redis and sender)
 * driven by the protocol's reference SDK (`@adcp/sdk` 6.11.0). Storyboards are selected by
 * the SDK from each agent's own capability document and graded step by step.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ALL_PERMISSIONS } from '../../../agents/auth/principal.js';
import { loadSdkTesting } from './a2a-v03-alias.js';
import type { AgentsService } from '../../../agents/server/seller-process.js';
import { startService } from '../e2e/support.js';
import { AgentClient } from '../../../agents/client/agent-client.js';
import type { AgentKind } from '../../../agents/auth/principal.js';
import { storyboardGate, withoutGatedPhases, type GatedStoryboard } from './storyboard-gates.js';

interface T {
  teardown(fn: () => unknown): void;
}

/**
 * `svc start` in-process with SVC_BRAND=adcp; `testController: false` is a production
 * deployment; `approval`: SVC_AGENTS_APPROVAL. A production seller's demo buyer is no
 * sandbox account, so its buys would await approval (submitted, no media_buy_id) while the
 * storyboards read media_buy_id from the immediate answer: unless told otherwise the
 * production posture runs as a seller that needs no human approval
 * (SVC_AGENTS_APPROVAL=never), the demo deployment approves at once ('0'). The approval
 * posture has its own tests (sales-flow, e2e/approve, sdk-flows), and the seeded
 * create_media_buy_async storyboard drives the submitted arm through the controller.
 */
export async function startAdcpService(
  t: T,
  options: { testController?: boolean; clockSpeed?: number; approval?: string } = {},
): Promise<AgentsService> {
  const { service } = await startService(
    t,
    {
      SVC_BRAND: 'adcp',
      // A deployment behind TLS publishes its operator's brand.json (identity.brand_json_url,
      // required beside webhook signing); the agents themselves listen on loopback http.
      SVC_BRAND_JSON_URL: 'https://seller.svc.example/.well-known/brand.json',
      // Every answer the runner gets is checked against both releases' schemas.
      SVC_AGENTS_VALIDATE_RESPONSES: 'strict',
      SVC_AGENTS_APPROVAL: options.approval ?? (options.testController === false ? 'never' : '0'),
      ...(options.clockSpeed ? { SVC_AGENTS_CLOCK_SPEED: String(options.clockSpeed) } : {}),
    },
    options.testController === false ? { settings: { testController: false } } : {},
  );
  return service;
}

/**
 * A live-mode (production, non-sandbox) buyer's API key at one agent, onboarded on the
 * service: the key a storyboard whose test kit says `sandbox: false`
 * (comply_controller_mode_gate's acme-outdoor-live) authenticates with.
 */
export async function liveToken(service: AgentsService, agent: AgentKind): Promise<string> {
  const { api_key } = await service.core.onboardPrincipal({
    agent,
    principalId: 'live-buyer',
    name: 'Live-mode buyer (not a sandbox account)',
    permissions: ALL_PERMISSIONS,
  });
  return api_key;
}

/**
 * A passthrough-only buyer agent's API key at one agent (onboarded with
 * `commercialRelationship: 'passthrough_only'`): the caller a test kit that declares
 * `commercial_relationship: "passthrough_only"` (billing-gate-runner.yaml) runs as.
 */
export async function passthroughToken(service: AgentsService, agent: AgentKind): Promise<string> {
  const { api_key } = await service.core.onboardPrincipal({
    agent,
    principalId: 'passthrough-buyer',
    name: 'Passthrough-only buyer agent (operator billing only)',
    permissions: ALL_PERMISSIONS,
    commercialRelationship: 'passthrough_only',
  });
  return api_key;
}

/** The storyboard's test kit (`prerequisites.test_kit`) text, if any. */
function kitText(sb: { prerequisites?: { test_kit?: string } }, complianceDir?: string): string {
  const kit = sb.prerequisites?.test_kit;
  if (!kit || !complianceDir) return '';
  const path = join(complianceDir, kit);
  return existsSync(path) ? readFileSync(path, 'utf8') : '';
}

/** Whether the storyboard's test kit is a live-mode principal. */
function liveKit(sb: { prerequisites?: { test_kit?: string } }, complianceDir?: string): boolean {
  return /^sandbox:\s*false\s*$/m.test(kitText(sb, complianceDir));
}

/** Whether the storyboard's test kit declares a passthrough-only calling agent. */
function passthroughKit(
  sb: { prerequisites?: { test_kit?: string } },
  complianceDir?: string,
): boolean {
  return /^commercial_relationship:\s*"?passthrough_only"?\s*$/m.test(kitText(sb, complianceDir));
}

/** The demo buyer's bearer token at one agent. */
export function demoToken(service: AgentsService, agent: AgentKind): string {
  const c = service.credentials.find((x) => x.agent === agent && x.principal_id === 'demo-buyer');
  if (!c) throw new Error(`no demo-buyer credential for ${agent}`);
  return c.bearer_token;
}

export interface StoryboardOutcome {
  id: string;
  verdict: 'passed' | 'failed' | 'not_applicable';
  /** `<step_id> (<task>): <first failing validation or error>` per failed step. */
  failures: string[];
  /** The ids of the failed steps (`<phase_id>/<step_id>`). */
  failedSteps?: string[];
  reason?: string;
}

/**
 * Storyboards whose own text gates them on a capability the agent does not declare: the
 * 6.11.0 runner still runs them, so the harness grades them not applicable, with the rule.
 */
function gatedOut(id: string, caps: Record<string, unknown>): string | null {
  const signing = (caps.request_signing as { supported?: unknown } | undefined)?.supported;
  if (id === 'signed_requests' && signing !== true) {
    return 'agent does not declare request_signing.supported: true (storyboard gating rule)';
  }
  return null;
}

function failureOf(step: {
  step_id: string;
  task: string;
  error?: string;
  validations: Array<{ passed: boolean; description?: string; error?: string }>;
}): string {
  const v = step.validations.find((x) => !x.passed);
  const why = v ? (v.error ?? v.description ?? 'validation failed') : (step.error ?? 'failed');
  return `${step.step_id} (${step.task}): ${why.slice(0, 300)}`;
}

/**
 * The authenticated, read-only task security_baseline probes with no / a bad / the good
 * key. The SDK allows only a few (PROBE_TASK_ALLOWLIST) and defaults to list_creatives,
 * which the signal agent lacks; the creative agent's is its library's list_creatives.
 */
const PROBE_TASKS: Record<AgentKind, string | undefined> = {
  sales: 'list_creatives',
  creative: 'list_creatives',
  signals: 'get_signals',
};

const ISO_DATE = /^(\d{4})(-\d{2}-\d{2}(?:T.*)?)$/;

/**
 * The storyboard with its sample flights moved into the future. The 3.0.6 storyboards were
 * written with 2025-2026 flights that are now past, and the runner replaces a past sample
 * date with one derived from Date.now() on every call, so two calls meant to be identical
 * (the idempotency replay) differ. Every 2025+ date of the storyboard's requests moves by
 * the same whole number of years (their order kept); deliberately ancient dates (2020)
 * stay as written.
 */
export function redated<S>(storyboard: S, now = Date.now()): S {
  const copy = structuredClone(storyboard);
  const dates: Array<{ holder: Record<string, unknown> | unknown[]; key: string | number }> = [];
  const walk = (v: unknown) => {
    if (!v || typeof v !== 'object') return;
    for (const [k, x] of Object.entries(v)) {
      const m = typeof x === 'string' ? ISO_DATE.exec(x) : null;
      if (m && Number(m[1]) >= 2025) {
        dates.push({ holder: v as Record<string, unknown>, key: Array.isArray(v) ? Number(k) : k });
      } else walk(x);
    }
  };
  walk(copy);
  const at = (d: (typeof dates)[number]) =>
    (d.holder as Record<string | number, unknown>)[d.key] as string;
  const earliest = Math.min(...dates.map((d) => Date.parse(at(d))));
  if (!(earliest < now)) return copy;
  let years = 1;
  while (Date.parse(shiftYear(new Date(earliest).toISOString(), years)) < now) years++;
  for (const d of dates) {
    (d.holder as Record<string | number, unknown>)[d.key] = shiftYear(at(d), years);
  }
  return copy;
}

function shiftYear(date: string, years: number): string {
  const m = ISO_DATE.exec(date)!;
  return `${Number(m[1]) + years}${m[2]}`;
}

/**
 * Every storyboard the SDK selects for the agent's declared capabilities, run over MCP or A2A
 * against `url`, each bounded by `perStoryboardMs`.
 */
export async function runSelectedStoryboards(
  agent: AgentKind,
  url: string,
  token: string,
  options: {
    protocol?: 'mcp' | 'a2a';
    perStoryboardMs?: number;
    only?: string[];
    /**
     * A release's compliance folder (vendored, `compliance/<release>`): its storyboards
     * instead of the SDK's own 3.0.6 cache, with the documents' applicability gates the
     * 6.11.0 runner cannot read graded by the harness (storyboard-gates.ts).
     */
    complianceDir?: string;
    /** A live-mode principal's key (liveToken): the test kit of a `sandbox: false` kit. */
    liveKey?: string;
    /**
     * A passthrough-only principal's key (passthroughToken): the whole storyboard runs as
     * that caller when its test kit declares `commercial_relationship: passthrough_only`
     * (the kit's own instruction: the harness passes the kit's caller as `--auth`).
     */
    passthroughKey?: string;
  } = {},
): Promise<{ caps: Record<string, unknown>; outcomes: StoryboardOutcome[] }> {
  const sdk = loadSdkTesting();
  const client = new AgentClient({ agentUrl: url, token });
  let caps: Record<string, unknown>;
  let products: unknown[] = [];
  let tools: string[] = [];
  try {
    caps = (await client.call('get_adcp_capabilities', {})).body;
    if (options.complianceDir) tools = (await client.listTools()).map((x) => x.name);
    if (agent === 'sales') products = await discoverProducts(client);
  } finally {
    await client.close();
  }
  const complianceDir = options.complianceDir;
  const adcp = caps.adcp as { major_versions?: number[] } | undefined;
  const resolved = sdk.resolveStoryboardsForCapabilities(
    {
      supported_protocols: caps.supported_protocols as string[],
      ...(caps.specialisms ? { specialisms: caps.specialisms as string[] } : {}),
      ...(adcp?.major_versions ? { major_versions: adcp.major_versions } : {}),
    },
    complianceDir ? { complianceDir } : {},
  );
  const probeTask = PROBE_TASKS[agent];
  const outcomes: StoryboardOutcome[] = resolved.not_applicable.map((na) => ({
    id: na.storyboard_id,
    verdict: 'not_applicable' as const,
    failures: [],
    reason: na.reason,
  }));
  const protocol = options.protocol ?? 'mcp';
  const perStoryboardMs = options.perStoryboardMs ?? 60_000;
  for (const sb of resolved.storyboards) {
    if (options.only && !options.only.includes(sb.id)) continue;
    const gate =
      gatedOut(sb.id, caps) ??
      (complianceDir ? storyboardGate(sb as unknown as GatedStoryboard, { caps, tools }) : null);
    if (gate) {
      outcomes.push({ id: sb.id, verdict: 'not_applicable', failures: [], reason: gate });
      continue;
    }
    const doc = complianceDir
      ? (withoutGatedPhases(sb as unknown as GatedStoryboard, {
          caps,
          tools,
        }) as unknown as typeof sb)
      : sb;
    const caller =
      options.passthroughKey && passthroughKit(sb, complianceDir) ? options.passthroughKey : token;
    let timer: NodeJS.Timeout | undefined;
    // The runner reads its test kits (request signing, sandbox entities) from the cache
    // directory: the release's own for the run.
    if (complianceDir) process.env.ADCP_COMPLIANCE_DIR = complianceDir;
    const result = await Promise.race([
      // Either protocol: its endpoint, the URL a buyer is given (A2A: the agent card's
      // `url`; the runner reads the card beside it, `<url>/.well-known/agent-card.json`).
      // The runner sends its auth probes to this URL as raw JSON-RPC (rawMcpProbe), so over
      // A2A they meet the A2A endpoint's own 401/403.
      sdk.runStoryboard(`${url}/${protocol}`, redated(doc), {
        protocol,
        allow_http: true,
        auth: { type: 'bearer', token: caller },
        webhook_receiver: { mode: 'loopback_mock', host: '127.0.0.1' },
        // The buyer's discovery: the universal storyboards' sentinel packages
        // (`test-product` / `test-pricing`) defer to the products discovered (the runner's
        // request builder), as a buyer that ran get_products first would send.
        ...(products.length > 0 ? { context: { products } } : {}),
        ...(probeTask
          ? {
              test_kit: {
                auth: {
                  probe_task: probeTask,
                  api_key: options.liveKey && liveKit(sb, complianceDir) ? options.liveKey : caller,
                },
              },
            }
          : {}),
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`storyboard ${sb.id} over ${perStoryboardMs} ms`)),
          perStoryboardMs,
        );
      }),
    ])
      .catch((err: Error) => ({ timedOut: err.message }))
      .finally(() => {
        clearTimeout(timer);
        if (complianceDir) delete process.env.ADCP_COMPLIANCE_DIR;
      });
    // A storyboard past its bound is its own failure, not the end of the run.
    if ('timedOut' in result) {
      outcomes.push({
        id: sb.id,
        verdict: 'failed',
        failures: [`timeout: ${result.timedOut}`],
        failedSteps: ['timeout'],
      });
      continue;
    }
    const steps = result.phases.flatMap((p) => p.steps);
    const failed = steps.filter((s) => !s.passed && !s.skipped);
    // INTEROP_DEBUG=<file>: every failed step's request and response, while iterating.
    if (process.env.INTEROP_DEBUG) {
      for (const s of failed) {
        appendFileSync(
          process.env.INTEROP_DEBUG,
          `${JSON.stringify({ agent, id: sb.id, step: s.step_id, request: s.request, response: s.response, validations: s.validations.filter((v) => !v.passed), error: s.error })}\n`,
        );
      }
    }
    const ran = steps.filter((s) => !s.skipped);
    outcomes.push({
      id: sb.id,
      verdict: failed.length > 0 ? 'failed' : ran.length === 0 ? 'not_applicable' : 'passed',
      failures: failed.map(failureOf),
      failedSteps: failed.map((s) => s.step_id),
      ...(ran.length === 0 ? { reason: 'every step skipped by the runner' } : {}),
    });
  }
  return { caps, outcomes };
}

/** What get_products offers the buyer for a plain brief (the discovery a buyer runs first). */
async function discoverProducts(client: AgentClient): Promise<unknown[]> {
  const answer = await client.call('get_products', {
    buying_mode: 'brief',
    brief: 'display and video inventory',
  });
  const products = answer.body.products;
  return Array.isArray(products) ? products : [];
}

export function tally(outcomes: StoryboardOutcome[]): Record<StoryboardOutcome['verdict'], number> {
  const out = { passed: 0, failed: 0, not_applicable: 0 };
  for (const o of outcomes) out[o.verdict]++;
  return out;
}
