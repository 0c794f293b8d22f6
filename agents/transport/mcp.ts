/**
 * MCP over Streamable HTTP (official SDK), one endpoint per agent. Every task of the agent
 * is a tool whose arguments are the task parameters; `get_task_status` polls async tasks.
 *
 * Stateless mode: each POST gets a fresh SDK `Server` + transport (no `Mcp-Session-Id`),
 * so any process behind a load balancer can answer any call and nothing lives in memory
 * between calls; task state is in PostgreSQL. GET (server-initiated SSE) and DELETE
 * (session end) have no meaning without sessions and answer 405.
 *
 * Refusals come back as tool results with `isError: true`, the spec's error body in
 * `structuredContent` and as JSON text: `{error:{code,message,field}}`, or the signal
 * agent's `{errors:[...]}`. The spec's HTTP status of the refusal is not the HTTP status
 * of the MCP exchange (a JSON-RPC call that worked is 200); it is given in
 * `_meta.http_status` of the result.
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
import { z } from 'zod';
import { TaskError } from '../../shared/errors/task-errors.js';
import type { Logger } from '../../shared/infra/logger.js';
import type { AgentKind } from '../auth/principal.js';
import type { TaskDispatcher } from '../runtime/dispatcher.js';
import { errorResponse } from '../runtime/errors.js';
import type { TaskDefinition, TaskResult } from '../runtime/types.js';
import { credentialsOf, dryRunOf, type HeaderBag } from './request-headers.js';

export interface McpEndpointOptions {
  agent: AgentKind;
  dispatcher: TaskDispatcher;
  /** Server name announced in `initialize` (e.g. `svc-sales-agent`). */
  serverName: string;
  version?: string;
  logger?: Logger;
}

/** The tool list of an agent: task name, description, JSON Schema of the parameters. */
export function toolsOf(dispatcher: TaskDispatcher, agent: AgentKind): Tool[] {
  return dispatcher.registry.list(agent).map(toolOf);
}

function toolOf(def: TaskDefinition): Tool {
  let inputSchema: Tool['inputSchema'] = { type: 'object' };
  try {
    const js = z.toJSONSchema(def.schema, { io: 'input', unrepresentable: 'any' }) as Record<
      string,
      unknown
    >;
    delete js.$schema;
    if (js.type === 'object') inputSchema = js as Tool['inputSchema'];
  } catch {
    // A schema zod cannot express keeps the permissive object schema; the dispatcher validates.
  }
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

/** A task answer as an MCP tool result. */
export function toolResult(agent: AgentKind, result: TaskResult): CallToolResult {
  if (result instanceof TaskError) {
    const { status, body } = errorResponse(agent, result);
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

function buildServer(o: McpEndpointOptions, headers: HeaderBag): Server {
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
      });
    } catch (err) {
      if (err instanceof TaskError) result = err;
      else {
        o.logger?.error({ err, task: req.params.name }, 'mcp tool call failed');
        throw err;
      }
    }
    return toolResult(o.agent, result);
  });
  return server;
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
  const server = buildServer(o, req.headers);
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res);
}

/** Koa middleware serving the MCP endpoint (mount at `/mcp`). */
export function mcpMiddleware(o: McpEndpointOptions): Middleware {
  return async (ctx) => {
    ctx.respond = false;
    await handleMcpRequest(o, ctx.req, ctx.res);
  };
}
