/**
 * MCP over Streamable HTTP (official SDK), one endpoint per agent. Every task of the agent
 * is a tool whose arguments are the task parameters; `get_task_status` polls tasks.
 *
 * Stateless mode: each POST gets a fresh SDK `Server` + transport (no `Mcp-Session-Id`),
 * so any process behind a load balancer can answer any call and nothing lives in memory
 * between calls; task state is in PostgreSQL. GET (server-initiated SSE) and DELETE
 * (session end) have no meaning without sessions and answer 405. Answers are always JSON,
 * so a client accepting only `application/json` (the reference SDK's probes) is served.
 *
 * Auth comes before the call: a `tools/call` whose credentials are missing (for a task
 * that needs them), rejected, or without the right answers HTTP 401/403 with a Bearer
 * challenge (`auth-challenge.ts`), not a tool result. Other refusals are tool results
 * with `isError: true` and the protocol's error envelope (`{status: failed, errors,
 * <brand>_error, context?}`) in `structuredContent` and as JSON text; the exchange itself
 * is HTTP 200 (the JSON-RPC call worked, the task was refused) and the refusal's own HTTP
 * status is in `_meta.http_status`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Middleware } from 'koa';
import { TaskError } from '../../shared/errors/task-errors.js';
import type { Logger } from '../../shared/infra/logger.js';
import type { AgentKind, Principal } from '../auth/principal.js';
import { checkResponse, releasesOf } from '../protocol/index.js';
import type { TaskDispatcher } from '../runtime/dispatcher.js';
import { taskInputJsonSchema } from '../runtime/describe.js';
import { contextOf, errorResponse } from '../runtime/errors.js';
import type { TaskDefinition, TaskResult } from '../runtime/types.js';
import { isAuthRefusal, writeAuthRefusal } from './auth-challenge.js';
import { readJsonBody } from './body.js';
import { internalError } from '../runtime/errors.js';
import { credentialsOf, dryRunOf, type HeaderBag } from './request-headers.js';

export interface McpEndpointOptions {
  agent: AgentKind;
  dispatcher: TaskDispatcher;
  /** Server name announced in `initialize` (e.g. `svc-sales-agent`). */
  serverName: string;
  version?: string;
  logger?: Logger;
  /** The endpoint's public URL (`<origin>/mcp`): the realm of auth challenges. */
  endpointUrl?: string;
  /** RFC 9728 metadata URL named in auth challenges (when the origin runs OAuth). */
  resourceMetadata?: string;
}

/** The tool list of an agent: task name, description, JSON Schema of the parameters. */
export function toolsOf(dispatcher: TaskDispatcher, agent: AgentKind): Tool[] {
  return dispatcher.registry.list(agent).map(toolOf);
}

function toolOf(def: TaskDefinition): Tool {
  // Derived from the published request schemas (plus the older forms still accepted), so
  // SDK clients that filter arguments by it keep every member; the dispatcher validates.
  const js = taskInputJsonSchema(def) as Record<string, unknown>;
  const inputSchema = (js && js.type === 'object' ? js : { type: 'object' }) as Tool['inputSchema'];
  const tier =
    def.auth.tier === 'public'
      ? 'public'
      : def.auth.tier === 'public-limited'
        ? 'public (full results with credentials)'
        : 'requires credentials';
  return {
    name: def.name,
    description: `${def.name} (${def.agent} agent; ${tier}; ${def.mode}, expected ${def.expectedDuration})`,
    inputSchema,
    annotations: { readOnlyHint: !def.mutating },
  };
}

/** A task answer as an MCP tool result (`context`: the request's, echoed on refusals). */
export function toolResult(
  brand: string,
  result: TaskResult,
  context?: Record<string, unknown>,
): CallToolResult {
  if (result instanceof TaskError) {
    const { status, body } = errorResponse(result, { brand, context });
    return {
      isError: true,
      content: [{ type: 'text', text: JSON.stringify(body) }],
      structuredContent: body,
      _meta: { http_status: status },
    };
  }
  const body = result as Record<string, unknown>;
  return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body };
}

// One validator for every per-request Server: the SDK would build a new Ajv each time,
// which dominated the cost of a call (it is only used for elicitation, which we never send).
let sharedValidator: AjvJsonSchemaValidator | null = null;
const toolLists = new WeakMap<McpEndpointOptions, Tool[]>();

function buildServer(
  o: McpEndpointOptions,
  headers: HeaderBag,
  principal: Principal | null | undefined,
): Server {
  sharedValidator ??= new AjvJsonSchemaValidator();
  const server = new Server(
    { name: o.serverName, version: o.version ?? '1.0.0' },
    { capabilities: { tools: { listChanged: false } }, jsonSchemaValidator: sharedValidator },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => {
    let tools = toolLists.get(o);
    if (!tools) toolLists.set(o, (tools = toolsOf(o.dispatcher, o.agent)));
    return { tools };
  });
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    let result: TaskResult;
    try {
      result = await o.dispatcher.invoke({
        agent: o.agent,
        task: req.params.name,
        params: req.params.arguments ?? {},
        credentials: credentialsOf(headers),
        dryRun: dryRunOf(headers),
        transport: 'mcp',
        ...(principal !== undefined ? { principal } : {}),
      });
    } catch (err) {
      result =
        err instanceof TaskError
          ? err
          : internalError(err, o.logger ?? o.dispatcher.logger, { task: req.params.name });
    }
    const answer = toolResult(o.dispatcher.brand, result, contextOf(req.params.arguments));
    // The test controller's refusal (ControllerError: `success: false`) is a tool error,
    // as the protocol's reference server answers it (test-controller toMcpResponse): the
    // body stays the published ControllerError; buyers grade a refused scenario by it.
    if (
      req.params.name === 'comply_test_controller' &&
      !(result instanceof TaskError) &&
      (result as { success?: unknown }).success === false
    ) {
      answer.isError = true;
    }
    checkResponse(
      o.dispatcher.settings.validateResponses,
      o.agent,
      req.params.name,
      answer.structuredContent,
      // A pinned request is answered in its release's shapes, an unpinned one in shapes
      // every release accepts.
      {
        releases: releasesOf(req.params.arguments),
        ...(o.logger ? { logger: o.logger } : {}),
      },
    );
    return answer;
  });
  return server;
}

function rpcError(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  data?: Record<string, unknown>,
): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(
    JSON.stringify({
      jsonrpc: '2.0',
      error: { code, message, ...(data ? { data } : {}) },
      id: null,
    }),
  );
}

/**
 * We only ever answer JSON (`enableJsonResponse`), so a client that accepts JSON, any
 * type, or sends no Accept is served: the SDK transport, which insists on both JSON and
 * SSE being acceptable, is shown the header it expects. A client that accepts neither
 * still gets its 406.
 */
function acceptJsonOnly(req: IncomingMessage): void {
  const accept = req.headers.accept;
  if (accept !== undefined && !/application\/json|application\/\*|\*\/\*/i.test(accept)) return;
  if (accept !== undefined && /text\/event-stream/i.test(accept)) return;
  const value = 'application/json, text/event-stream';
  req.headers.accept = value;
  // The SDK rebuilds the request from rawHeaders.
  const raw = req.rawHeaders;
  for (let i = raw.length - 2; i >= 0; i -= 2) {
    if (raw[i]!.toLowerCase() === 'accept') raw.splice(i, 2);
  }
  raw.push('Accept', value);
}

type RpcMessage = {
  id?: unknown;
  method?: unknown;
  params?: { name?: unknown; arguments?: unknown };
};

/**
 * Admits every `tools/call` of the request (one JSON-RPC message, or a batch): the
 * principal when all are allowed, undefined when there is no call, or the refusal.
 */
async function admitCalls(
  o: McpEndpointOptions,
  headers: HeaderBag,
  messages: RpcMessage[],
): Promise<{ principal?: Principal | null; refusal?: { err: TaskError; call: RpcMessage } }> {
  let principal: Principal | null | undefined;
  for (const m of messages) {
    if (m?.method !== 'tools/call') continue;
    const name = typeof m.params?.name === 'string' ? m.params.name : '';
    try {
      principal = await o.dispatcher.admit(o.agent, name, credentialsOf(headers));
    } catch (err) {
      if (err instanceof TaskError && isAuthRefusal(err)) return { refusal: { err, call: m } };
      throw err;
    }
  }
  return principal === undefined ? {} : { principal };
}

/** Answers one HTTP request at the MCP endpoint. */
export async function handleMcpRequest(
  o: McpEndpointOptions,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (req.method !== 'POST') {
    res.writeHead(405, { allow: 'POST', 'content-type': 'application/json' }).end(
      JSON.stringify({
        jsonrpc: '2.0',
        error: { code: -32000, message: 'stateless MCP endpoint: only POST is served' },
        id: null,
      }),
    );
    return;
  }
  acceptJsonOnly(req);
  const read = await readJsonBody(req);
  if (!read.ok) {
    // Valid JSON holding what no task accepts is invalid params, not a parse error.
    const code = read.code ? -32602 : read.status === 400 ? -32700 : -32600;
    rpcError(
      res,
      read.status,
      code,
      read.message,
      read.code ? { code: read.code, field: read.field } : undefined,
    );
    return;
  }
  const messages = (Array.isArray(read.value) ? read.value : [read.value]) as RpcMessage[];
  const admitted = await admitCalls(o, req.headers, messages);
  if (admitted.refusal) {
    const { err, call } = admitted.refusal;
    writeAuthRefusal(res, err, {
      brand: o.dispatcher.brand,
      rpcId: call.id,
      context: contextOf(call.params?.arguments),
      realm: o.endpointUrl ?? 'mcp',
      resourceMetadata: o.resourceMetadata,
    });
    return;
  }
  const server = buildServer(o, req.headers, admitted.principal);
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, read.value);
}

/** Koa middleware serving the MCP endpoint (mount at `/mcp`). */
export function mcpMiddleware(o: McpEndpointOptions): Middleware {
  return async (ctx) => {
    ctx.respond = false;
    await handleMcpRequest(o, ctx.req, ctx.res);
  };
}
