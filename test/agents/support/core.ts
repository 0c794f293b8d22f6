/** An agents core on a throwaway schema, a manual clock and recorded notifications. */
import { brandProfile } from '../../../shared/brand.js';
import {
  createAgentsCore,
  type AgentsCore,
  type AgentsCoreOptions,
} from '../../../agents/service.js';
import { ManualClock } from '../../../agents/runtime/clock.js';
import { RecordingNotifications } from '../../../agents/runtime/recording-notifications.js';
import type { AgentKind } from '../../../agents/auth/principal.js';
import type { TaskResult, TaskSuccess } from '../../../agents/runtime/types.js';
import { TaskError } from '../../../shared/errors/task-errors.js';
import { checkResponse, releasesOf } from '../../../agents/protocol/index.js';
import { contextOf, errorResponse } from '../../../agents/runtime/errors.js';
import { testDatabase } from '../../helpers/db.js';

export const START = Date.parse('2026-03-02T10:00:00Z');

/** A create_media_buy in the spec's older form (`buyer_ref`, `brand_manifest`): no key. */
export function olderFormBuy(buyerRef: string, endTime: string) {
  return {
    buyer_ref: buyerRef,
    brand_manifest: { url: 'https://acme.example' },
    packages: [
      {
        buyer_ref: 'p1',
        product_id: 'video_olv_news',
        pricing_option_id: 'olv_news_cpm',
        budget: 5000,
      },
    ],
    start_time: { type: 'asap' },
    end_time: endTime,
  };
}

export interface Harness {
  core: AgentsCore;
  clock: ManualClock;
  notifications: RecordingNotifications;
  pool: ReturnType<typeof testDatabase>['pool'];
  schema: string;
  keys: Record<string, string>;
  call(
    agent: AgentKind,
    task: string,
    params: unknown,
    creds?: { apiKey?: string; authorization?: string },
    extra?: { dryRun?: boolean; a2aPush?: { version: '0.3' | '1.0'; config: unknown } },
  ): Promise<TaskResult>;
  ok(
    agent: AgentKind,
    task: string,
    params: unknown,
    creds?: { apiKey?: string; authorization?: string },
  ): Promise<TaskSuccess>;
  err(
    agent: AgentKind,
    task: string,
    params: unknown,
    creds?: { apiKey?: string; authorization?: string },
  ): Promise<TaskError>;
}

interface T {
  teardown(fn: () => unknown): void;
}

export async function harness(t: T, options: Partial<AgentsCoreOptions> = {}): Promise<Harness> {
  const db = testDatabase(t, 'ag');
  // A caller may put the agents beside other tables (the OAuth server's, in transport/support).
  const pool = options.pool ?? db.pool;
  const schema = options.schema ?? db.schema;
  const clock = new ManualClock(START);
  const notifications = new RecordingNotifications();
  const core = await createAgentsCore({
    pool,
    schema,
    profile: brandProfile('svc'),
    notifications,
    clock,
    ...options,
    settings: {
      approval: 'manual',
      taskStepMs: 1000,
      validateResponses: 'strict',
      ...(options.settings ?? {}),
    },
  });
  const creds = await core.demoCredentials();
  const keys: Record<string, string> = {};
  for (const c of creds) keys[`${c.agent}:${c.principal_id}`] = c.api_key;
  // The response-validation test hook: every answer a test gets from the core is checked
  // against the published response schema of each release that has the task (strict: a
  // drifting field fails the test). The transports check their wire bodies the same way.
  const call: Harness['call'] = async (agent, task, params, credentials = {}, extra = {}) => {
    const result = await core.dispatcher.invoke({
      agent,
      task,
      params,
      credentials,
      transport: 'mcp',
      ...extra,
    });
    const wire =
      result instanceof TaskError
        ? errorResponse(result, { brand: core.settings.profile.brand, context: contextOf(params) })
            .body
        : result;
    checkResponse(core.settings.validateResponses, agent, task, wire, {
      releases: releasesOf(params),
    });
    return result;
  };
  return {
    core,
    clock,
    notifications,
    pool,
    schema,
    keys,
    call,
    async ok(agent, task, params, credentials) {
      const r = await call(agent, task, params, credentials);
      if (r instanceof TaskError)
        throw new Error(`${task} refused: ${r.code} ${r.message} (${r.field ?? ''})`);
      return r;
    },
    async err(agent, task, params, credentials) {
      const r = await call(agent, task, params, credentials);
      if (!(r instanceof TaskError))
        throw new Error(`${task} succeeded: ${JSON.stringify(r).slice(0, 300)}`);
      return r;
    },
  };
}

export function buyer(h: Harness, agent: AgentKind = 'sales') {
  return { apiKey: h.keys[`${agent}:demo-buyer`]! };
}

export function viewer(h: Harness, agent: AgentKind = 'sales') {
  return { apiKey: h.keys[`${agent}:demo-viewer`]! };
}

/**
 * The media buy behind a submitted create_media_buy task: the published submitted
 * envelope carries no media_buy_id (it lands on the task's completion result).
 */
export async function pendingBuyId(h: Harness, taskId: unknown): Promise<string> {
  const { rows } = await h.pool.query<{ resource_id: string }>(
    `SELECT resource_id FROM ${h.schema}.tasks WHERE task_id = $1`,
    [taskId],
  );
  if (!rows[0]) throw new Error(`no task ${String(taskId)}`);
  return rows[0].resource_id;
}
