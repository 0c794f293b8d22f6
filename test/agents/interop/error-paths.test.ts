/* eslint-disable @typescript-eslint/no-explicit-any -- wire bodies are read loosely */
/**
 * Every kind of refusal, against the agents as `svc start` builds them (SVC_BRAND=adcp),
 * over the three wire forms a buyer may use (MCP, A2A 0.3, A2A 1.0): each answers the
 * protocol's error shape (`status: failed`, `errors[]` with a published code, `adcp_error`,
 * `context` echoed), valid against the published response schema of both releases, and the
 * same body on every wire form. Auth refusals are real HTTP 401/403 with a Bearer
 * challenge on every wire form (JSON-RPC error whose `data` is the envelope); the others
 * are answered calls (MCP tool result `isError` with `_meta.http_status`; A2A call task
 * completed, AdCP status failed in the artifact).
 */
import t from 'tap';
import { RELEASES, validateResponse } from '../../../agents/protocol/index.js';
import type { AgentKind } from '../../../agents/auth/principal.js';
import { a2aSend, a2aSendV1, mcpCall, postJson } from '../transport/support.js';
import { startAdcpService } from './support.js';

type Wire = 'mcp' | 'a2a-0.3' | 'a2a-1.0';
const WIRES: Wire[] = ['mcp', 'a2a-0.3', 'a2a-1.0'];

interface Answer {
  http: number;
  challenge: string | null;
  /** The AdCP body: the tool result / artifact data, or the JSON-RPC error's data. */
  body: any;
  /** MCP `_meta.http_status` or, for auth refusals, the HTTP status. */
  status?: number;
}

let rpcId = 0;

/** One call of `task` on the wire form, with the given headers; the AdCP answer. */
async function call(
  origin: string,
  wire: Wire,
  task: string,
  params: Record<string, unknown>,
  headers: Record<string, string>,
): Promise<Answer> {
  const id = ++rpcId;
  const rpc =
    wire === 'mcp'
      ? mcpCall(task, params, id)
      : wire === 'a2a-0.3'
        ? a2aSend(task, params, id)
        : a2aSendV1(task, params, id);
  const url = `${origin}/${wire === 'mcp' ? 'mcp' : 'a2a'}`;
  const r = await postJson(url, rpc, { accept: 'application/json', ...headers });
  const challenge = r.headers.get('www-authenticate');
  if (r.body.error) return { http: r.status, challenge, body: r.body.error.data, status: r.status };
  if (wire === 'mcp') {
    const res = r.body.result;
    return {
      http: r.status,
      challenge,
      body: res.structuredContent,
      status: res._meta?.http_status,
    };
  }
  const task03 = wire === 'a2a-0.3' ? r.body.result : r.body.result.task;
  const state = task03.status.state as string;
  if (!['completed', 'TASK_STATE_COMPLETED'].includes(state)) {
    throw new Error(`the A2A call task is ${state}, not completed`);
  }
  return { http: r.status, challenge, body: task03.artifacts[0].parts[0].data };
}

interface Case {
  name: string;
  agent: AgentKind;
  task: string;
  params: Record<string, unknown>;
  /** Which credential: the demo buyer's token (default), none, a bad one, the viewer's. */
  as?: 'buyer' | 'none' | 'bad' | 'viewer' | 'blocked';
  code: string;
  /** HTTP status: the exchange's for auth refusals, else MCP `_meta.http_status`. */
  status: number;
  /** Fields `errors[]` must name (every offending one at once). */
  fields?: string[];
  /** Auth refusals: the challenge's error parameter (none when no credentials were sent). */
  challenge?: RegExp;
}

const CASES: Case[] = [
  {
    name: 'no credentials on a protected task',
    agent: 'sales',
    task: 'get_media_buys',
    params: {},
    as: 'none',
    code: 'AUTH_REQUIRED',
    status: 401,
    challenge: /^Bearer realm="[^"]+"(, resource_metadata="[^"]+")?$/,
  },
  {
    name: 'a key that is not ours',
    agent: 'signals',
    task: 'get_signals',
    params: { signal_spec: 'x' },
    as: 'bad',
    code: 'AUTH_INVALID',
    status: 401,
    challenge: /error="invalid_token"/,
  },
  {
    name: 'a read-only principal creating a buy',
    agent: 'sales',
    task: 'create_media_buy',
    params: { idempotency_key: '11111111-2222-4333-8444-555555555555' },
    as: 'viewer',
    // The spec's INSUFFICIENT_PERMISSIONS (service-spec Authentication rule 3) is not in
    // the published enum: SVC_BRAND=adcp answers its published equivalent.
    code: 'PERMISSION_DENIED',
    status: 403,
    challenge: /error="insufficient_scope"/,
  },
  {
    name: 'an unsupported adcp_major_version',
    agent: 'sales',
    task: 'list_authorized_properties',
    params: { adcp_major_version: 99 },
    code: 'VERSION_UNSUPPORTED',
    status: 400,
    fields: ['adcp_major_version'],
  },
  {
    name: 'an unsupported adcp_major_version on the creative agent',
    agent: 'creative',
    task: 'list_creative_formats',
    params: { adcp_major_version: 2 },
    code: 'VERSION_UNSUPPORTED',
    status: 400,
    fields: ['adcp_major_version'],
  },
  {
    name: 'a malformed request names every offending field',
    agent: 'sales',
    task: 'get_media_buys',
    params: { media_buy_ids: 'x', status_filter: 7 },
    code: 'VALIDATION_ERROR',
    status: 400,
    fields: ['media_buy_ids', 'status_filter'],
  },
  {
    name: 'an unknown media buy',
    agent: 'sales',
    task: 'update_media_buy',
    params: {
      media_buy_id: 'mb_nope',
      paused: true,
      idempotency_key: '21111111-2222-4333-8444-555555555555',
    },
    code: 'MEDIA_BUY_NOT_FOUND',
    status: 404,
  },
  {
    name: 'an unknown task id',
    agent: 'signals',
    task: 'tasks/get',
    params: { task_id: 'task_nope' },
    code: 'REFERENCE_NOT_FOUND',
    status: 404,
    fields: ['task_id'],
  },
];

t.test('every refusal in the protocol error shape, the same on MCP and A2A', async (t) => {
  const service = await startAdcpService(t, { testController: false });
  const cred = (agent: AgentKind, principal: string) => {
    const c = service.credentials.find((x) => x.agent === agent && x.principal_id === principal);
    if (!c) throw new Error(`no ${principal} credential at ${agent}`);
    return c;
  };
  for (const c of CASES) {
    const headers: Record<string, string> =
      c.as === 'none'
        ? {}
        : c.as === 'bad'
          ? { authorization: 'Bearer not-a-key-of-ours-0123456789' }
          : {
              authorization: `Bearer ${cred(c.agent, c.as === 'viewer' ? 'demo-viewer' : 'demo-buyer').bearer_token}`,
            };
    const answers: Partial<Record<Wire, Answer>> = {};
    for (const wire of WIRES) {
      const context = { correlation_id: `${c.name} over ${wire}` };
      const a = await call(service.urls[c.agent], wire, c.task, { ...c.params, context }, headers);
      answers[wire] = a;
      const what = `${c.name} over ${wire}`;
      t.match(
        a.body,
        {
          status: 'failed',
          errors: [{ code: c.code }],
          adcp_error: { code: c.code },
          context,
        },
        what,
      );
      // MCP carries the status in `_meta.http_status`; an A2A answered call has no carrier.
      if (wire === 'mcp' || c.challenge) t.equal(a.status, c.status, `${what}: status ${c.status}`);
      if (c.challenge) {
        t.equal(a.http, c.status, `${what}: a real HTTP ${c.status}`);
        t.match(a.challenge, c.challenge, `${what}: WWW-Authenticate`);
      } else {
        t.equal(a.http, 200, `${what}: an answered call`);
        t.equal(a.challenge, null);
      }
      for (const f of c.fields ?? []) {
        t.ok(
          (a.body.errors as Array<{ field?: string; issues?: Array<{ pointer?: string }> }>).some(
            (e) =>
              String(e.field).startsWith(f) ||
              (e.issues ?? []).some((i) => String(i.pointer).startsWith(`/${f}`)),
          ),
          `${what}: names ${f} (${JSON.stringify(a.body.errors).slice(0, 400)})`,
        );
      }
      for (const release of RELEASES) {
        const task = c.task === 'tasks/get' ? 'get_task_status' : c.task;
        const issues = validateResponse(c.agent, task, a.body, release);
        t.same(issues ?? [], [], `${what}: valid in ${release}`);
      }
    }
    // The same body on every wire form (the echoed context aside).
    const strip = (a: Answer | undefined) => ({ ...a?.body, context: undefined });
    t.same(strip(answers['a2a-0.3']), strip(answers.mcp), `${c.name}: A2A 0.3 = MCP`);
    t.same(strip(answers['a2a-1.0']), strip(answers.mcp), `${c.name}: A2A 1.0 = MCP`);
  }
});
