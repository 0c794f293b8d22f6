/**
 * `call_<brand>_agent` as a library: runs any task against any agent over MCP (official
 * MCP client, Streamable HTTP) or A2A (official A2A client; JSON-RPC 1.0, or 0.3 through
 * the SDK's compat transport). One connected client per agent; `call` returns the AdCP
 * response body or the agent's error body, with the task status and id when async.
 */
import { randomUUID } from 'node:crypto';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Role, TaskState, type AgentCard, type Part, type Task } from '@a2a-js/sdk';
import { Client as A2aClient, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { LegacyJsonRpcTransport } from '@a2a-js/sdk/compat/v0_3/client';

export type AgentTransport = 'mcp' | 'a2a';

export interface AgentClientOptions {
  /** The agent's origin (`http://127.0.0.1:3001`) or its `/mcp` / `/a2a` endpoint. */
  agentUrl: string;
  transport?: AgentTransport;
  /** A2A protocol version (default 1.0). */
  a2aVersion?: '0.3' | '1.0';
  apiKey?: string;
  /** Bearer token (JWT). */
  token?: string;
  /** Sends `X-Dry-Run: true`. */
  dryRun?: boolean;
  /** Client name announced over MCP. */
  clientName?: string;
}

export interface CallOptions {
  /** A2A transport-level push config (0.3 `pushNotificationConfig` / 1.0 `taskPushNotificationConfig`). */
  a2aPushConfig?: { url: string; id?: string; token?: string; authentication?: unknown };
  /** A2A contextId. */
  contextId?: string;
}

export interface AgentCallResult {
  /** False when the agent refused (the body is its error shape). */
  ok: boolean;
  /** Task status (`completed`, `submitted`, `working`...). */
  status: string;
  taskId?: string;
  /** The AdCP response body, or the error envelope `{status: failed, errors, ...}`. */
  body: Record<string, unknown>;
  transport: AgentTransport;
  /** Set when the agent refused at the HTTP level (401/403 auth refusals). */
  httpStatus?: number;
}

const A2A_STATE_NAMES: Record<number, string> = {
  [TaskState.TASK_STATE_SUBMITTED]: 'submitted',
  [TaskState.TASK_STATE_WORKING]: 'working',
  [TaskState.TASK_STATE_COMPLETED]: 'completed',
  [TaskState.TASK_STATE_FAILED]: 'failed',
  [TaskState.TASK_STATE_CANCELED]: 'canceled',
  [TaskState.TASK_STATE_INPUT_REQUIRED]: 'input-required',
  [TaskState.TASK_STATE_REJECTED]: 'rejected',
  [TaskState.TASK_STATE_AUTH_REQUIRED]: 'auth-required',
};

function isErrorBody(body: Record<string, unknown>): boolean {
  return (
    (body.status === 'failed' && Array.isArray(body.errors)) ||
    (typeof body.error === 'object' && body.error !== null && body.status === undefined) ||
    (Array.isArray(body.errors) && body.errors.length > 0 && body.status === undefined)
  );
}

function origin(url: string): string {
  const u = new URL(url);
  return u.origin;
}

function endpoint(url: string, path: '/mcp' | '/a2a'): string {
  const u = new URL(url);
  if (u.pathname === '/' || u.pathname === '') return `${u.origin}${path}`;
  return u.toString();
}

function dataOf(parts: Part[] | undefined): Record<string, unknown> | undefined {
  const p = parts?.find((x) => x.content?.$case === 'data');
  const v = p?.content?.$case === 'data' ? (p.content.value as unknown) : undefined;
  return v && typeof v === 'object' && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}

/** The AdCP body of an A2A task: last artifact data part, else the status message's. */
export function bodyOfA2aTask(task: Task): Record<string, unknown> {
  for (const a of [...task.artifacts].reverse()) {
    const d = dataOf([...a.parts].reverse());
    if (d) return d;
  }
  return dataOf(task.status?.message?.parts) ?? {};
}

export class AgentClient {
  readonly options: AgentClientOptions;
  readonly transport: AgentTransport;
  private mcp: McpClient | null = null;
  private a2a: A2aClient | null = null;

  constructor(options: AgentClientOptions) {
    this.options = options;
    this.transport = options.transport ?? 'mcp';
  }

  private headers(): Record<string, string> {
    const h: Record<string, string> = {};
    if (this.options.token) h.authorization = `Bearer ${this.options.token}`;
    if (this.options.apiKey) h['x-api-key'] = this.options.apiKey;
    if (this.options.dryRun) h['x-dry-run'] = 'true';
    return h;
  }

  /** The error envelope of the last HTTP-level refusal (401/403), which SDK clients throw on. */
  private refusal: { status: number; body: Record<string, unknown> } | null = null;

  private fetchWithHeaders(): typeof fetch {
    const extra = this.headers();
    return async (input, init) => {
      const headers = new Headers(init?.headers);
      for (const [k, v] of Object.entries(extra)) headers.set(k, v);
      const res = await fetch(input, { ...init, headers });
      if (res.status === 401 || res.status === 403) {
        const data = await res
          .clone()
          .json()
          .then((j) => (j as { error?: { data?: unknown } } | null)?.error?.data)
          .catch(() => undefined);
        this.refusal = {
          status: res.status,
          body:
            data && typeof data === 'object'
              ? (data as Record<string, unknown>)
              : {
                  status: 'failed',
                  errors: [{ code: 'AUTH_INVALID', message: `HTTP ${res.status}` }],
                },
        };
      }
      return res;
    };
  }

  /** Runs one exchange; an HTTP auth refusal becomes a failed result instead of a throw. */
  private async refusable(run: () => Promise<AgentCallResult>): Promise<AgentCallResult> {
    this.refusal = null;
    try {
      return await run();
    } catch (err) {
      const refusal = this.refusal as { status: number; body: Record<string, unknown> } | null;
      if (!refusal) throw err;
      return {
        ok: false,
        status: 'failed',
        body: refusal.body,
        transport: this.transport,
        httpStatus: refusal.status,
      };
    }
  }

  async connect(): Promise<void> {
    if (this.transport === 'mcp') {
      if (this.mcp) return;
      const client = new McpClient({
        name: this.options.clientName ?? 'agent-client',
        version: '1.0.0',
      });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(endpoint(this.options.agentUrl, '/mcp')), {
          fetch: this.fetchWithHeaders(),
        }),
      );
      this.mcp = client;
      return;
    }
    if (this.a2a) return;
    const cardRes = await fetch(
      new URL('/.well-known/agent-card.json', origin(this.options.agentUrl)),
      {
        headers: { 'A2A-Version': '1.0' },
      },
    );
    if (!cardRes.ok) throw new Error(`agent card: HTTP ${cardRes.status}`);
    const { AgentCard } = await import('@a2a-js/sdk');
    const card: AgentCard = AgentCard.fromJSON(await cardRes.json());
    const version = this.options.a2aVersion ?? '1.0';
    const iface =
      card.supportedInterfaces.find(
        (i) => i.protocolBinding === 'JSONRPC' && i.protocolVersion.startsWith(version),
      ) ?? card.supportedInterfaces[0];
    const url = iface?.url ?? endpoint(this.options.agentUrl, '/a2a');
    const fetchImpl = this.fetchWithHeaders();
    const transport =
      version === '0.3'
        ? new LegacyJsonRpcTransport({ endpoint: url, fetchImpl })
        : await new JsonRpcTransportFactory({ fetchImpl }).create(url, card);
    this.a2a = new A2aClient(transport, card);
  }

  /** MCP tools with their input schemas (MCP only). */
  async listTools(): Promise<Array<{ name: string; inputSchema?: { required?: string[] } }>> {
    await this.connect();
    if (!this.mcp) throw new Error('listTools is MCP only');
    return (await this.mcp.listTools()).tools as Array<{
      name: string;
      inputSchema?: { required?: string[] };
    }>;
  }

  /** The agent's task names (MCP tools or A2A skills). */
  async listTasks(): Promise<string[]> {
    await this.connect();
    if (this.mcp) return (await this.mcp.listTools()).tools.map((t) => t.name);
    const card = await this.a2a!.getAgentCard();
    return card.skills.map((s) => s.id);
  }

  async call(
    task: string,
    params: Record<string, unknown> = {},
    opts: CallOptions = {},
  ): Promise<AgentCallResult> {
    await this.connect();
    return this.refusable(() => this.exchange(task, params, opts));
  }

  private async exchange(
    task: string,
    params: Record<string, unknown>,
    opts: CallOptions,
  ): Promise<AgentCallResult> {
    if (this.mcp) {
      const r = await this.mcp.callTool({ name: task, arguments: params });
      let body = r.structuredContent as Record<string, unknown> | undefined;
      if (!body) {
        const text = (r.content as Array<{ type: string; text?: string }> | undefined)?.find(
          (c) => c.type === 'text',
        )?.text;
        try {
          body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
        } catch {
          body = { message: text };
        }
      }
      const ok = r.isError !== true;
      return {
        ok,
        status: ok ? String(body.status ?? 'completed') : 'failed',
        ...(typeof body.task_id === 'string' ? { taskId: body.task_id } : {}),
        body,
        transport: 'mcp',
      };
    }
    const version = this.options.a2aVersion ?? '1.0';
    const push = opts.a2aPushConfig;
    const result = await this.a2a!.sendMessage({
      tenant: '',
      message: {
        messageId: randomUUID(),
        contextId: opts.contextId ?? '',
        taskId: '',
        role: Role.ROLE_USER,
        parts: [
          {
            content: {
              $case: 'data',
              value: { skill: task, [version === '0.3' ? 'parameters' : 'input']: params },
            },
            metadata: undefined,
            filename: '',
            mediaType: 'application/json',
          },
        ],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: {
        acceptedOutputModes: ['application/json'],
        taskPushNotificationConfig: push
          ? {
              tenant: '',
              id: push.id ?? randomUUID(),
              taskId: '',
              url: push.url,
              token: push.token ?? '',
              authentication: push.authentication as never,
            }
          : undefined,
        returnImmediately: false,
      },
      metadata: undefined,
    });
    return this.fromA2aTask(result as Task);
  }

  private fromA2aTask(task: Task): AgentCallResult {
    const body = bodyOfA2aTask(task);
    // The AdCP status in the data wins (a `rejected` result rides in a completed A2A task).
    const state = A2A_STATE_NAMES[task.status?.state ?? 0] ?? 'unknown';
    const status = typeof body.status === 'string' && state !== 'failed' ? body.status : state;
    const ok = !isErrorBody(body);
    return {
      ok,
      status,
      ...(typeof body.task_id === 'string' ? { taskId: body.task_id } : {}),
      body,
      transport: 'a2a',
    };
  }

  /** Polls an async task once (MCP `get_task_status`, A2A `tasks/get` / `GetTask`). */
  async getTask(taskId: string): Promise<AgentCallResult> {
    await this.connect();
    if (this.mcp) return this.call('get_task_status', { task_id: taskId, include_result: true });
    return this.refusable(async () =>
      this.fromA2aTask(await this.a2a!.getTask({ tenant: '', id: taskId })),
    );
  }

  async close(): Promise<void> {
    await this.mcp?.close();
    this.mcp = null;
    this.a2a = null;
  }
}

/** One call, connect to close. */
export async function callAgent(
  options: AgentClientOptions & { task: string; params?: Record<string, unknown> } & CallOptions,
): Promise<AgentCallResult> {
  const client = new AgentClient(options);
  try {
    return await client.call(options.task, options.params ?? {}, options);
  } finally {
    await client.close();
  }
}
