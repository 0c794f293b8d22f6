/**
 * `call_<brand>_agent` as an MCP server over stdio: one tool that runs any task against
 * any agent over MCP or A2A, for MCP hosts (IDEs, assistants) that launch `svc mcp`.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { BrandProfile } from '../../shared/brand.js';
import { plainErrorBody } from '../runtime/errors.js';
import { callAgent } from './agent-client.js';

const ArgsSchema = z.strictObject({
  agent_url: z.url({ protocol: /^https?$/ }),
  task: z.string().regex(/^[a-z][a-z0-9_]{0,99}$/),
  params: z.record(z.string(), z.unknown()).optional(),
  protocol: z.enum(['mcp', 'a2a']).optional(),
  a2a_version: z.enum(['0.3', '1.0']).optional(),
  api_key: z.string().min(1).max(512).optional(),
  token: z.string().min(1).max(8192).optional(),
  dry_run: z.boolean().optional(),
});

export function callAgentTool(profile: BrandProfile): Tool {
  const schema = z.toJSONSchema(ArgsSchema, { io: 'input' }) as Record<string, unknown>;
  delete schema.$schema;
  return {
    name: profile.callAgentTool,
    description:
      'Run any task of any sales, creative or signal agent (MCP or A2A) and return its answer',
    inputSchema: schema as Tool['inputSchema'],
  };
}

function result(body: unknown, isError: boolean): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(body) }],
    structuredContent: body as Record<string, unknown>,
    ...(isError ? { isError: true } : {}),
  };
}

/** Handles one `tools/call` of the tool (also used by tests without stdio). */
export async function runCallAgentTool(
  profile: BrandProfile,
  name: string,
  args: unknown,
): Promise<CallToolResult> {
  if (name !== profile.callAgentTool) {
    return result(plainErrorBody(profile.brand, 'UNSUPPORTED_FEATURE', `no tool ${name}`), true);
  }
  const parsed = ArgsSchema.safeParse(args ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.map(String).join('.') || 'arguments';
    return result(plainErrorBody(profile.brand, 'VALIDATION_ERROR', issue.message, field), true);
  }
  const a = parsed.data;
  try {
    const r = await callAgent({
      agentUrl: a.agent_url,
      task: a.task,
      params: a.params ?? {},
      transport: a.protocol ?? 'mcp',
      ...(a.a2a_version ? { a2aVersion: a.a2a_version } : {}),
      ...(a.api_key ? { apiKey: a.api_key } : {}),
      ...(a.token ? { token: a.token } : {}),
      ...(a.dry_run ? { dryRun: true } : {}),
    });
    return result(r.body, !r.ok);
  } catch (err) {
    const message = (err as Error).message;
    return result(plainErrorBody(profile.brand, 'AGENT_UNREACHABLE', message, 'agent_url'), true);
  }
}

export async function serveCallAgentStdio(profile: BrandProfile): Promise<void> {
  const server = new Server(
    { name: `${profile.brand}-call-agent`, version: '1.0.0' },
    { capabilities: { tools: { listChanged: false } } },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [callAgentTool(profile)] }));
  server.setRequestHandler(CallToolRequestSchema, (req) =>
    runCallAgentTool(profile, req.params.name, req.params.arguments),
  );
  const transport = new StdioServerTransport();
  await server.connect(transport);
  await new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
  });
}
