/**
 * The signal agent: get_signals (ranked against the spec, filtered, per-target
 * deployment status and coverage) and activate_signal (asynchronous: deployments in
 * progress with `estimated_activation_duration_minutes`, live later with an activation
 * key: `segment_id` on platforms, `key_value` on agents). Requests in the published form
 * (`destinations`, `countries`) or the spec digest's (`deliver_to`, `deployments`); responses
 * in the published shapes (`signal_id`, `pricing_options`, cursor `pagination`, no `errors`
 * on a successful activation).
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { AgentKind, Principal } from '../auth/principal.js';
import { sameAgentUrl } from '../creative/formats.js';
import { brandedCode, taskError, TaskErrors, type TaskError } from '../runtime/errors.js';
import { paginate, PaginationRequestSchema } from '../common/pagination.js';
import { briefTerms, score } from '../runtime/ranking.js';
import type { TaskRegistry } from '../runtime/registry.js';
import type { AgentSettings } from '../runtime/settings.js';
import type { Advance, HandlerOutcome, StoredTask, TaskContext } from '../runtime/types.js';
import { takeForcedGetProductsArm } from '../sandbox/fixtures.js';
import { requireIdempotencyKey } from '../runtime/validation.js';

const TargetSchema = z.discriminatedUnion(
  'type',
  [
    z.looseObject({
      type: z.literal('platform'),
      platform: z.string().min(1).max(100),
      account: z.string().min(1).max(200).optional(),
    }),
    z.looseObject({ type: z.literal('agent'), agent_url: z.url() }),
  ],
  { error: 'a deployment target is {type: platform, platform} or {type: agent, agent_url}' },
);
type Target = z.output<typeof TargetSchema>;

const SIGNAL_TYPES = ['marketplace', 'custom', 'owned'] as const;

const CountriesSchema = z
  .array(z.string().regex(/^[A-Z]{2}$/, 'countries are ISO 3166-1 alpha-2 codes'))
  .min(1)
  .max(250);

/**
 * Published: top-level `destinations[]` and `countries[]` (both optional), `signal_spec`
 * or `signal_ids`/`signal_refs`, cursor `pagination`. Older (spec digest): `deliver_to:
 * {deployments, countries}`. One of the two forms; both at once is ambiguous.
 */
const GetSignalsSchema = z
  .looseObject({
    signal_spec: z.string().min(1, 'signal_spec must not be empty').max(5000).optional(),
    signal_ids: z
      .array(z.looseObject({ id: z.string().min(1).max(255) }))
      .max(100)
      .optional(),
    signal_refs: z
      .array(z.looseObject({ signal_id: z.string().min(1).max(255) }))
      .max(100)
      .optional(),
    destinations: z.array(TargetSchema).max(20).optional(),
    countries: CountriesSchema.optional(),
    deliver_to: z
      .looseObject({
        deployments: z.array(TargetSchema).min(1).max(20),
        countries: CountriesSchema,
      })
      .optional(),
    filters: z
      .looseObject({
        catalog_types: z.array(z.enum(SIGNAL_TYPES)).optional(),
        data_providers: z.array(z.string().min(1)).optional(),
        max_cpm: z.number().nonnegative().optional(),
        min_coverage_percentage: z.number().min(0).max(100).optional(),
      })
      .optional(),
    max_results: z.number().int().min(1).max(100).optional(),
    pagination: PaginationRequestSchema.optional(),
  })
  .superRefine((p, zctx) => {
    if (p.deliver_to && (p.destinations !== undefined || p.countries !== undefined)) {
      zctx.addIssue({
        code: 'custom',
        path: ['deliver_to'],
        message: 'send destinations/countries or the older deliver_to, not both',
      });
    }
  });

/** Published: `destinations[]`, `action`, `pricing_option_id`; older: `deployments[]`. */
const ActivateSchema = z
  .looseObject({
    signal_agent_segment_id: z.string().min(1).max(255),
    action: z.enum(['activate', 'deactivate']).optional(),
    destinations: z.array(TargetSchema).min(1).max(20).optional(),
    deployments: z.array(TargetSchema).min(1).max(20).optional(),
    pricing_option_id: z.string().min(1).max(255).optional(),
    idempotency_key: z.string().optional(),
    context: z.unknown().optional(),
    push_notification_config: z.unknown().optional(),
  })
  .superRefine((p, zctx) => {
    if ((p.destinations === undefined) === (p.deployments === undefined)) {
      zctx.addIssue({
        code: 'custom',
        path: ['destinations'],
        message: 'give the targets in destinations (or the older deployments), exactly one',
      });
    }
  })
  // The spec's older form names its targets `deployments` and has no key.
  .refine(...requireIdempotencyKey((v) => v.deployments !== undefined));

interface SignalRow {
  signal_agent_segment_id: string;
  name: string;
  description: string;
  data_provider: string;
  signal_type: string;
  coverage_percentage: number;
  cpm: number | null;
  currency: string;
  countries: string[];
  owner_principal: string | null;
  keywords: string[];
  activation_minutes: number;
  activatable: boolean;
}

interface DeploymentRow {
  signal_agent_segment_id: string;
  destination: string;
  target: Target;
  is_live: boolean;
  activation_key: Record<string, unknown> | null;
  deployed_at: Date | null;
  ready_at: Date | null;
}

export function destinationKey(t: Target): string {
  return t.type === 'platform'
    ? `platform:${t.platform.toLowerCase()}:${t.account ?? ''}`
    : `agent:${t.agent_url.replace(/\/+$/, '').toLowerCase()}`;
}

/** The deployment target is usable by this principal, or the error saying why not. */
function checkTarget(
  t: Target,
  principal: Principal,
  settings: AgentSettings,
  field: string,
): TaskError | null {
  const d = settings.signalDestinations;
  if (t.type === 'platform') {
    const p = d.platforms.find((x) => x.platform.toLowerCase() === t.platform.toLowerCase());
    if (!p) {
      return taskError(
        'DEPLOYMENT_UNAUTHORIZED',
        `this agent does not deploy to platform ${t.platform.slice(0, 100)}`,
        {
          field: `${field}.platform`,
          suggestion: `use one of: ${d.platforms.map((x) => x.platform).join(', ')}`,
        },
      );
    }
    if (
      t.account !== undefined &&
      p.accounts &&
      !(p.accounts[principal.principal_id] ?? []).includes(t.account)
    ) {
      return taskError(
        'DEPLOYMENT_UNAUTHORIZED',
        `not authorized for account ${t.account.slice(0, 100)} on ${p.platform}`,
        {
          field: `${field}.account`,
          suggestion: 'omit account or use an account onboarded for you',
        },
      );
    }
    return null;
  }
  const a = d.agents.find((x) => sameAgentUrl(x.agent_url, t.agent_url));
  // Any public https agent takes a key_value activation (published: every signals agent
  // accepts `type: agent`); configured private agents only for the principals they name.
  if (!a && t.agent_url.startsWith('https://')) return null;
  if (!a || (a.private && !(a.visible_to ?? []).includes(principal.principal_id))) {
    return taskError('AGENT_NOT_FOUND', `no agent ${t.agent_url.slice(0, 200)} is visible to you`, {
      field: `${field}.agent_url`,
      suggestion: 'check the agent URL or ask the signal agent operator for access',
    });
  }
  return null;
}

function activationKey(
  signal: SignalRow,
  t: Target,
  agent: AgentKind,
  brand: string,
): Record<string, unknown> {
  if (t.type === 'platform') {
    const h = createHash('sha256')
      .update(`${signal.signal_agent_segment_id}\0${destinationKey(t)}`)
      .digest('hex');
    return { type: 'segment_id', segment_id: `${t.platform.toLowerCase()}_${h.slice(0, 12)}` };
  }
  void agent;
  return { type: 'key_value', key: `${brand}_signal`, value: signal.signal_agent_segment_id };
}

function targetView(t: Target): Record<string, unknown> {
  return t.type === 'platform'
    ? { type: 'platform', platform: t.platform, ...(t.account ? { account: t.account } : {}) }
    : { type: 'agent', agent_url: t.agent_url };
}

function deploymentView(t: Target, row: DeploymentRow | undefined, signal: SignalRow, now: Date) {
  const out: Record<string, unknown> = { ...targetView(t), is_live: row?.is_live ?? false };
  if (row?.is_live) {
    out.activation_key = row.activation_key;
    if (row.deployed_at) out.deployed_at = row.deployed_at.toISOString();
  } else {
    const minutes = row?.ready_at
      ? Math.max(1, Math.ceil((row.ready_at.getTime() - now.getTime()) / 60000))
      : signal.activation_minutes;
    out.estimated_activation_duration_minutes = minutes;
  }
  return out;
}

async function visibleSignal(ctx: TaskContext, id: string): Promise<SignalRow> {
  const { rows } = await ctx.db.query<SignalRow>(
    `SELECT * FROM ${ctx.schema}.signals WHERE signal_agent_segment_id = $1
       AND (owner_principal IS NULL OR owner_principal = $2)`,
    [id, ctx.principal!.principal_id],
  );
  const row = rows[0];
  if (!row) {
    const code = brandedCode('SIGNAL_AGENT_SEGMENT_NOT_FOUND', ctx.settings.profile.brand);
    throw taskError(code, `no signal ${id.slice(0, 100)}`, {
      field: 'signal_agent_segment_id',
      suggestion: 'use a signal_agent_segment_id returned by get_signals',
    });
  }
  return row;
}

/** The pricing option id of a signal's one CPM price (published `vendor-pricing-option`). */
export function pricingOptionId(signal: Pick<SignalRow, 'signal_agent_segment_id'>): string {
  return `${signal.signal_agent_segment_id}_cpm`;
}

function signalView(
  r: SignalRow,
  deployments: Array<Record<string, unknown>>,
  agentUrl: string,
): Record<string, unknown> {
  const cpm = r.signal_type === 'owned' ? 0 : (r.cpm ?? 0);
  return {
    signal_id: { source: 'agent', agent_url: agentUrl, id: r.signal_agent_segment_id },
    signal_agent_segment_id: r.signal_agent_segment_id,
    name: r.name,
    description: r.description,
    signal_type: r.signal_type,
    data_provider: r.data_provider,
    coverage_percentage: r.coverage_percentage,
    deployments,
    pricing_options: [
      { pricing_option_id: pricingOptionId(r), model: 'cpm', cpm, currency: r.currency },
    ],
    // The spec digest's member, kept for older buyers.
    pricing: { cpm, currency: r.currency },
  };
}

/** Targets and countries from either request form, with the field prefix refusals name. */
function targetsOf(params: z.output<typeof GetSignalsSchema>) {
  if (params.deliver_to) {
    return {
      targets: params.deliver_to.deployments,
      countries: params.deliver_to.countries,
      field: 'deliver_to.deployments',
    };
  }
  return {
    targets: params.destinations ?? [],
    countries: params.countries ?? null,
    field: 'destinations',
  };
}

async function getSignals(params: z.output<typeof GetSignalsSchema>, ctx: TaskContext) {
  const principal = ctx.principal!;
  const { targets, countries, field } = targetsOf(params);
  const errors = targets
    .map((t, i) => checkTarget(t, principal, ctx.settings, `${field}[${i}]`))
    .filter((e): e is TaskError => e !== null);
  if (errors.length > 0) throw new TaskErrors(errors);
  const ids = [
    ...(params.signal_ids ?? []).map((x) => x.id),
    ...(params.signal_refs ?? []).map((x) => x.signal_id),
  ];
  const f = params.filters ?? {};
  const { rows } = await ctx.db.query<SignalRow>(
    `SELECT * FROM ${ctx.schema}.signals
      WHERE (owner_principal IS NULL OR owner_principal = $1)
        AND ($2::text[] IS NULL OR countries && $2::text[])
        AND ($3::text[] IS NULL OR signal_type = ANY($3))
        AND ($4::text[] IS NULL OR data_provider = ANY($4))
        AND ($5::float8 IS NULL OR COALESCE(cpm, 0) <= $5)
        AND ($6::float8 IS NULL OR coverage_percentage >= $6)
        AND ($7::text[] IS NULL OR signal_agent_segment_id = ANY($7))
      ORDER BY signal_agent_segment_id`,
    [
      principal.principal_id,
      countries,
      f.catalog_types ?? null,
      f.data_providers ?? null,
      f.max_cpm ?? null,
      f.min_coverage_percentage ?? null,
      ids.length > 0 ? ids : null,
    ],
  );
  const terms = briefTerms(params.signal_spec ?? '');
  // Relevance order: the signals the spec matches first, then the rest of the catalog.
  let ranked = rows.map((r) => ({ r, ...score({ ...r, channel: r.signal_type }, terms) }));
  ranked.sort((a, b) => b.score - a.score || b.r.coverage_percentage - a.r.coverage_percentage);
  // `max_results` (older) caps the whole answer; `pagination.max_results` sizes a page.
  if (params.max_results !== undefined) ranked = ranked.slice(0, params.max_results);
  const { page, pagination } = paginate(ranked, params.pagination, 10);
  const { rows: deps } = await ctx.db.query<DeploymentRow>(
    `SELECT * FROM ${ctx.schema}.signal_deployments WHERE signal_agent_segment_id = ANY($1)`,
    [page.map((x) => x.r.signal_agent_segment_id)],
  );
  const now = ctx.clock.now();
  return {
    signals: page.map(({ r }) =>
      signalView(
        r,
        targets.map((t) =>
          deploymentView(
            t,
            deps.find(
              (d) =>
                d.signal_agent_segment_id === r.signal_agent_segment_id &&
                d.destination === destinationKey(t),
            ),
            r,
            now,
          ),
        ),
        ctx.settings.urls.signals,
      ),
    ),
    pagination,
    // Published rule: without an `account` in the request the answer is the public layer.
    cache_scope: params.account === undefined ? 'public' : 'account',
  };
}

/**
 * All or nothing: the published success branch carries no `errors`, so one refused
 * destination refuses the request, naming every refused destination at once.
 */
async function activateSignal(params: z.output<typeof ActivateSchema>, ctx: TaskContext) {
  const principal = ctx.principal!;
  const signal = await visibleSignal(ctx, params.signal_agent_segment_id);
  const field = params.destinations ? 'destinations' : 'deployments';
  const targets = (params.destinations ?? params.deployments)!;
  if (
    params.pricing_option_id !== undefined &&
    params.pricing_option_id !== pricingOptionId(signal)
  ) {
    throw taskError(
      'VALIDATION_ERROR',
      `signal ${signal.signal_agent_segment_id} has no pricing option ${params.pricing_option_id.slice(0, 100)}`,
      { field: 'pricing_option_id', suggestion: `use ${pricingOptionId(signal)}` },
    );
  }
  if (params.action === 'deactivate') return deactivate(signal, targets, field, ctx);
  const errors: TaskError[] = [];
  const accepted: Target[] = [];
  const seen = new Set<string>();
  for (const [i, t] of targets.entries()) {
    const at = `${field}[${i}]`;
    const bad = checkTarget(t, principal, ctx.settings, at);
    if (bad) {
      errors.push(bad);
      continue;
    }
    const key = destinationKey(t);
    if (seen.has(key)) continue;
    seen.add(key);
    if (!signal.activatable) {
      errors.push(
        taskError(
          'ACTIVATION_FAILED',
          `signal ${signal.signal_agent_segment_id} can no longer be activated`,
          { field: at, suggestion: 'choose another signal from get_signals' },
        ),
      );
      continue;
    }
    const { rows } = await ctx.db.query<DeploymentRow>(
      `SELECT * FROM ${ctx.schema}.signal_deployments WHERE signal_agent_segment_id = $1 AND destination = $2 FOR UPDATE`,
      [signal.signal_agent_segment_id, key],
    );
    if (rows[0]) {
      errors.push(
        taskError(
          'ALREADY_ACTIVATED',
          rows[0].is_live
            ? 'signal is already live on this target'
            : 'activation on this target is already in progress',
          {
            field: at,
            suggestion: rows[0].is_live
              ? 'use the activation_key from get_signals'
              : 'poll get_signals or wait for the webhook',
          },
        ),
      );
      continue;
    }
    accepted.push(t);
  }
  if (errors.length > 0) throw new TaskErrors(errors);
  const now = ctx.clock.now();
  const readyAt = new Date(now.getTime() + signal.activation_minutes * 60000);
  for (const t of accepted) {
    await ctx.db.query(
      `INSERT INTO ${ctx.schema}.signal_deployments (signal_agent_segment_id, destination, target, is_live, ready_at, task_id)
       VALUES ($1, $2, $3, false, $4, $5)`,
      [signal.signal_agent_segment_id, destinationKey(t), t, readyAt, ctx.taskId],
    );
  }
  return {
    status: 'working' as const,
    body: {
      signal_agent_segment_id: signal.signal_agent_segment_id,
      deployments: accepted.map((t) => ({
        ...targetView(t),
        is_live: false,
        estimated_activation_duration_minutes: signal.activation_minutes,
      })),
    },
    async: {
      runAfterMs: signal.activation_minutes * 60000,
      resourceId: signal.signal_agent_segment_id,
      state: { destinations: accepted.map((t) => destinationKey(t)) },
    },
  };
}

/** `action: deactivate`: the signal leaves each named destination (live or in progress). */
async function deactivate(signal: SignalRow, targets: Target[], field: string, ctx: TaskContext) {
  const errors = targets
    .map((t, i) => checkTarget(t, ctx.principal!, ctx.settings, `${field}[${i}]`))
    .filter((e): e is TaskError => e !== null);
  if (errors.length > 0) throw new TaskErrors(errors);
  await ctx.db.query(
    `DELETE FROM ${ctx.schema}.signal_deployments WHERE signal_agent_segment_id = $1 AND destination = ANY($2)`,
    [signal.signal_agent_segment_id, targets.map(destinationKey)],
  );
  return {
    status: 'completed' as const,
    body: {
      signal_agent_segment_id: signal.signal_agent_segment_id,
      deployments: targets.map((t) => ({ ...targetView(t), is_live: false })),
    },
  };
}

async function advanceActivation(task: StoredTask, ctx: TaskContext): Promise<Advance | null> {
  const now = ctx.clock.now();
  const destinations = (task.state.destinations as string[]) ?? [];
  const { rows: signalRows } = await ctx.db.query<SignalRow>(
    `SELECT * FROM ${ctx.schema}.signals WHERE signal_agent_segment_id = $1`,
    [task.resource_id],
  );
  const signal = signalRows[0];
  if (!signal) {
    return {
      status: 'failed',
      result: {
        errors: [
          { code: 'ACTIVATION_FAILED', message: 'the signal was withdrawn during activation' },
        ],
      },
    };
  }
  const { rows } = await ctx.db.query<DeploymentRow>(
    `SELECT * FROM ${ctx.schema}.signal_deployments WHERE signal_agent_segment_id = $1 AND destination = ANY($2) FOR UPDATE`,
    [signal.signal_agent_segment_id, destinations],
  );
  const pending = rows.filter((r) => !r.is_live);
  const stillWaiting = pending.filter((r) => r.ready_at && r.ready_at.getTime() > now.getTime());
  if (stillWaiting.length > 0) {
    const next = Math.min(...stillWaiting.map((r) => r.ready_at!.getTime())) - now.getTime();
    return {
      status: 'working',
      runAfterMs: next,
      result: { percentage: 50, current_step: 'deploying' },
    };
  }
  for (const r of pending) {
    await ctx.db.query(
      `UPDATE ${ctx.schema}.signal_deployments SET is_live = true, activation_key = $3, deployed_at = $4
        WHERE signal_agent_segment_id = $1 AND destination = $2`,
      [
        r.signal_agent_segment_id,
        r.destination,
        activationKey(signal, r.target, ctx.agent, ctx.settings.profile.brand),
        now,
      ],
    );
  }
  const { rows: done } = await ctx.db.query<DeploymentRow>(
    `SELECT * FROM ${ctx.schema}.signal_deployments WHERE signal_agent_segment_id = $1 AND destination = ANY($2)`,
    [signal.signal_agent_segment_id, destinations],
  );
  return {
    status: 'completed',
    message: 'signal activated',
    result: {
      signal_agent_segment_id: signal.signal_agent_segment_id,
      deployments: done.map((r) => ({
        ...targetView(r.target),
        is_live: true,
        activation_key: r.activation_key,
        deployed_at: r.deployed_at?.toISOString(),
      })),
    },
  };
}

/**
 * The test controller's forced arm (force_get_signals_arm) for this request, answered: a
 * semantic (brief-mode) discovery naming an account of a sandbox principal, controller on,
 * takes it once and answers submitted under the harness's task id (its push registration
 * kept, completed by force_task_completion). A wholesale feed request never takes it.
 */
async function forcedSubmitted(
  params: z.output<typeof GetSignalsSchema>,
  ctx: TaskContext,
): Promise<HandlerOutcome | null> {
  const p = params as { discovery_mode?: unknown; account?: unknown };
  if (!ctx.settings.testController || !ctx.principal || p.account === undefined) return null;
  if (p.discovery_mode === 'wholesale' || params.signal_spec === undefined) return null;
  const arm = await takeForcedGetProductsArm(
    ctx.db,
    ctx.schema,
    ctx.principal.principal_id,
    (a) => a.arm === 'submitted',
    'signals',
  );
  if (!arm || arm.arm !== 'submitted') return null;
  const message = arm.message ?? 'signal discovery received; the result follows';
  return {
    status: 'submitted',
    body: { message },
    async: { runAfterMs: null, taskId: arm.task_id, message },
  };
}

export function registerSignalTasks(registry: TaskRegistry): void {
  registry.add({
    name: 'get_signals',
    description: 'Discover audience signals for a description and deployment targets.',
    agent: 'signals',
    schema: GetSignalsSchema,
    auth: { tier: 'authenticated', permission: { resource: 'products', permission: 'read' } },
    expectedDuration: '60s',
    mode: 'sync',
    mutating: false,
    readOnly: true,
    webhookTaskType: 'get_signals',
    errorShape: 'signal',
    handle: async (params, ctx) =>
      (await forcedSubmitted(params, ctx)) ?? {
        status: 'completed',
        body: await getSignals(params, ctx),
      },
  });
  registry.add({
    name: 'activate_signal',
    description: 'Activate a signal on platforms or agents (asynchronous).',
    agent: 'signals',
    schema: ActivateSchema,
    auth: { tier: 'authenticated', permission: { resource: 'media_buys', permission: 'write' } },
    expectedDuration: 'minutes to hours',
    mode: 'async',
    mutating: true,
    webhookTaskType: 'activate_signal',
    errorShape: 'signal',
    handle: activateSignal,
    advance: advanceActivation,
    cancel: async (task, ctx) => {
      // Deployments still in progress are withdrawn; live ones stay live.
      await ctx.db.query(
        `DELETE FROM ${ctx.schema}.signal_deployments WHERE task_id = $1 AND NOT is_live`,
        [task.task_id],
      );
    },
  });
}
