/**
 * `svc call`: run one task against any agent, or `--list` its tasks with their required
 * fields. Over MCP the tool list is read first, so a mistyped task is answered with the
 * nearest names and every invalid field is reported at once (the agent itself stops at the
 * first); a network failure names the URL and its cause. `--as <principal>` takes that
 * principal's API key from the credentials file `svc start` wrote.
 */
import { Ajv, type ErrorObject } from 'ajv';
import { nearestNames } from '../../shared/text/nearest.js';
import { readCredentials } from '../../shared/infra/credentials-file.js';
import { AgentClient, type AgentCallResult } from './agent-client.js';

export interface CallCommandOptions {
  agentUrl: string;
  task?: string;
  params: Record<string, unknown>;
  list?: boolean;
  a2a?: boolean;
  a2aVersion: '1.0' | '0.3';
  apiKey?: string;
  token?: string;
  as?: string;
  dryRun?: boolean;
  dataDir: string;
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
}

interface ToolInfo {
  name: string;
  inputSchema?: {
    required?: string[];
    properties?: Record<string, unknown>;
    allOf?: unknown[];
  };
}

/**
 * The `allOf[].anyOf` groups of `required` alternatives an input schema carries (our
 * agents publish one per member a form needs and another replaces: `packages` or
 * `proposal_id`), each as its member names; other `allOf` items are left to ajv.
 */
function requiredGroups(schema: { allOf?: unknown[] } | undefined): string[][] {
  const groups: string[][] = [];
  for (const item of schema?.allOf ?? []) {
    const anyOf = (item as { anyOf?: unknown[] } | null)?.anyOf;
    if (!Array.isArray(anyOf) || Object.keys(item as object).length !== 1) continue;
    const names = anyOf.map((a) => {
      const r = (a as { required?: unknown } | null)?.required;
      return Array.isArray(r) && r.length === 1 && Object.keys(a as object).length === 1
        ? String(r[0])
        : null;
    });
    if (names.length > 0 && names.every((n) => n !== null)) groups.push(names as string[]);
  }
  return groups;
}

function isRequiredGroup(item: unknown): boolean {
  return requiredGroups({ allOf: [item] }).length === 1;
}

/** The endpoint a call goes to, for messages. */
function endpointOf(agentUrl: string, a2a: boolean): string {
  const u = new URL(agentUrl);
  return u.pathname === '/' || u.pathname === '' ? `${u.origin}${a2a ? '/a2a' : '/mcp'}` : u.href;
}

/** `connect ECONNREFUSED 127.0.0.1:1` rather than `fetch failed`. */
export function networkCause(err: unknown): string | null {
  const seen = new Set<unknown>();
  let e: unknown = err;
  let best: string | null = null;
  let fetchFailed = false;
  while (e && typeof e === 'object' && !seen.has(e)) {
    seen.add(e);
    const x = e as { code?: unknown; message?: unknown; cause?: unknown };
    const message = typeof x.message === 'string' ? x.message : '';
    if (typeof x.code === 'string' && /^E[A-Z]+/.test(x.code)) best = message || x.code;
    // undici's "fetch failed" carries the reason (connect ECONNREFUSED, bad port...) as cause.
    else if (fetchFailed && !best && message) best = message;
    if (/fetch failed/i.test(message)) fetchFailed = true;
    e = x.cause;
  }
  if (best) return best;
  const m = err instanceof Error ? err.message : '';
  return /fetch failed|ECONN|ETIMEDOUT|ENOTFOUND|socket/i.test(m) ? m : null;
}

async function apiKeyOf(dataDir: string, agentUrl: string, principal: string): Promise<string> {
  const section = (await readCredentials(dataDir)).agents as
    { urls?: Record<string, string>; principals?: Array<Record<string, string>> } | undefined;
  const origin = new URL(agentUrl).origin;
  const agent = Object.entries(section?.urls ?? {}).find(
    ([, u]) => new URL(u).origin === origin,
  )?.[0];
  const hit = section?.principals?.find((p) => p.agent === agent && p.principal_id === principal);
  if (!hit?.api_key) {
    const known = [...new Set((section?.principals ?? []).map((p) => p.principal_id))];
    throw new Error(
      agent
        ? `--as ${principal}: no such principal of the ${agent} agent in ${dataDir}/credentials.json` +
            (known.length ? ` (known: ${known.join(', ')})` : '')
        : `--as: ${origin} is not an agent of the svc start whose credentials are in ${dataDir}/credentials.json`,
    );
  }
  return hit.api_key;
}

/** `start_time, end_time, packages (or proposal_id)`: what a request must carry. */
export function describeRequired(tool: ToolInfo): string {
  const req = [
    ...(tool.inputSchema?.required ?? []),
    ...requiredGroups(tool.inputSchema).map(([first, ...alternatives]) =>
      alternatives.length ? `${first} (or ${alternatives.join(', ')})` : first!,
    ),
  ];
  return req.length ? req.join(', ') : '(none)';
}

function ajvField(e: ErrorObject): string {
  const base = e.instancePath
    .replace(/^\//, '')
    .replace(/\/(\d+)(?=\/|$)/g, '[$1]')
    .replace(/\//g, '.');
  if (e.keyword === 'required') {
    const missing = (e.params as { missingProperty: string }).missingProperty;
    return base ? `${base}.${missing}` : missing;
  }
  if (e.keyword === 'additionalProperties') {
    const extra = (e.params as { additionalProperty: string }).additionalProperty;
    return base ? `${base}.${extra}` : extra;
  }
  return base || '(parameters)';
}

/** Every field the tool's input schema refuses, or [] (or [] when the schema cannot compile). */
export function invalidFields(
  schema: unknown,
  params: Record<string, unknown>,
): Array<{ field: string; message: string }> {
  let validate;
  const groups = requiredGroups(schema as { allOf?: unknown[] });
  try {
    const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
    const { $schema: _s, allOf, ...rest } = schema as Record<string, unknown>;
    void _s;
    // The required-alternative groups are checked below, as one line each.
    const others = Array.isArray(allOf) ? allOf.filter((i) => !isRequiredGroup(i)) : [];
    validate = ajv.compile(others.length ? { ...rest, allOf: others } : rest);
  } catch {
    return [];
  }
  const out: Array<{ field: string; message: string }> = [];
  const seen = new Set<string>();
  for (const e of validate(params) ? [] : (validate.errors ?? [])) {
    const field = ajvField(e);
    const message = e.keyword === 'required' ? 'is required' : (e.message ?? 'is invalid');
    const key = `${field} ${message}`;
    if (seen.has(key) || e.keyword === 'anyOf' || e.keyword === 'oneOf') continue;
    seen.add(key);
    out.push({ field, message });
  }
  for (const [first, ...alternatives] of groups) {
    if ([first!, ...alternatives].some((m) => params[m] !== undefined)) continue;
    const or = alternatives.length ? ` (or ${alternatives.join(', ')})` : '';
    out.push({ field: first!, message: `is required${or}` });
  }
  return out;
}

/** Exit code: 0 answered, 1 refused or unreachable, 2 bad input. */
export async function runCall(o: CallCommandOptions): Promise<number> {
  const endpoint = endpointOf(o.agentUrl, o.a2a === true);
  let apiKey = o.apiKey;
  if (o.as) {
    try {
      apiKey = await apiKeyOf(o.dataDir, o.agentUrl, o.as);
    } catch (err) {
      o.err.write(`${(err as Error).message}\n`);
      return 2;
    }
  }
  const client = new AgentClient({
    agentUrl: o.agentUrl,
    transport: o.a2a ? 'a2a' : 'mcp',
    a2aVersion: o.a2aVersion,
    ...(apiKey ? { apiKey } : {}),
    ...(o.token ? { token: o.token } : {}),
    ...(o.dryRun ? { dryRun: true } : {}),
  });
  try {
    const tools: ToolInfo[] | null = o.a2a ? null : await client.listTools();
    if (o.list || !o.task) {
      const names = tools ?? (await client.listTasks()).map((name) => ({ name }));
      if (!o.list) o.err.write('give a task name (the tasks of this agent follow)\n');
      for (const t of names) {
        o.out.write(`${t.name.padEnd(36)} required: ${describeRequired(t)}\n`);
      }
      return o.list ? 0 : 2;
    }
    if (tools) {
      const tool = tools.find((t) => t.name === o.task);
      if (!tool) {
        const near = nearestNames(
          o.task,
          tools.map((t) => t.name),
        );
        o.err.write(
          `UNKNOWN_TASK: ${endpoint} has no task "${o.task}"` +
            (near.length ? `; did you mean ${near.join(', ')}?` : '') +
            ` (svc call ${o.agentUrl} --list)\n`,
        );
        return 2;
      }
      const bad = tool.inputSchema ? invalidFields(tool.inputSchema, o.params) : [];
      if (bad.length) {
        o.err.write(`VALIDATION_ERROR: ${bad.length} invalid field(s) for ${o.task}:\n`);
        for (const b of bad) o.err.write(`  ${b.field}: ${b.message}\n`);
        return 2;
      }
    }
    const r: AgentCallResult = await client.call(o.task, o.params);
    o.out.write(`${JSON.stringify(r.body, null, 2)}\n`);
    return r.ok ? 0 : 1;
  } catch (err) {
    const cause = networkCause(err);
    o.err.write(
      cause
        ? `call failed: cannot reach ${endpoint}: ${cause}\n`
        : `call failed at ${endpoint}: ${(err as Error).message}\n`,
    );
    return 1;
  } finally {
    await client.close().catch(() => {});
  }
}
