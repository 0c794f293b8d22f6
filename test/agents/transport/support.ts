/* eslint-disable @typescript-eslint/no-explicit-any -- wire bodies are read loosely */
/** The three agent apps on 127.0.0.1 (port 0) over one agents core (G1's test harness). */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';
import { brandProfile, type BrandProfile } from '../../../shared/brand.js';
import { AGENT_KINDS, type AgentKind } from '../../../agents/auth/principal.js';
import { createAgentApp } from '../../../agents/server/agent-app.js';
import type { AgentsCoreOptions } from '../../../agents/service.js';
import {
  createOAuthServer,
  type OAuthServer,
  type OAuthServerOptions,
} from '../../../agents/oauth/server.js';
import { DevLogin } from '../../../agents/oauth/dev-login.js';
import { testDatabase } from '../../helpers/db.js';
import { harness, type Harness } from '../support/core.js';

/** The OAuth server's options in tests; `devLogin: 'test'` turns its sign-in on. */
export type OAuthTestOptions = Partial<
  Omit<OAuthServerOptions, 'pool' | 'schema' | 'profile' | 'urls' | 'devLogin'>
> & { devLogin?: 'test' | DevLogin };

/** The last one-time sign-in code a test OAuth server printed. */
export const devCodes = { last: '' };

export interface Agents {
  h: Harness;
  urls: Record<AgentKind, string>;
  oauth: OAuthServer | null;
}

interface T {
  teardown(fn: () => unknown): void;
}

export async function startAgents(
  t: T,
  options: Partial<AgentsCoreOptions> & {
    oauth?: boolean | OAuthTestOptions;
  } = {},
): Promise<Agents> {
  const profile = options.profile ?? brandProfile('svc');
  return startWith(t, profile, options);
}

async function startWith(
  t: T,
  profile: BrandProfile,
  options: Partial<AgentsCoreOptions> & {
    oauth?: boolean | OAuthTestOptions;
  },
): Promise<Agents> {
  const servers = {} as Record<AgentKind, Server>;
  const urls = {} as Record<AgentKind, string>;
  const handlers = {} as Record<AgentKind, ReturnType<Koa['callback']>>;
  for (const agent of AGENT_KINDS) {
    const server = createServer((req, res) => handlers[agent](req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    servers[agent] = server;
    urls[agent] = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    t.teardown(
      () =>
        new Promise<void>((r) => {
          server.closeAllConnections();
          server.close(() => r());
        }),
    );
  }
  const { oauth: withOAuth, ...core } = options;
  let oauth: OAuthServer | null = null;
  // The OAuth tables live beside the principals (client bindings join them), as in svc start.
  const db = withOAuth ? testDatabase(t, 'g2o') : null;
  if (db) {
    const { devLogin, ...rest } = typeof withOAuth === 'object' ? withOAuth : {};
    oauth = await createOAuthServer({
      pool: db.pool,
      schema: db.schema,
      profile,
      urls,
      ...rest,
      // 'test': the development sign-in, its one-time codes in `devCodes.last`.
      ...(devLogin === 'test'
        ? {
            devLogin: new DevLogin({
              pool: db.pool,
              schema: db.schema,
              announce: (code) => (devCodes.last = code),
            }),
          }
        : devLogin
          ? { devLogin }
          : {}),
    });
  }
  const h = await harness(t, {
    ...(db ? { pool: db.pool, schema: db.schema } : {}),
    ...core,
    ...(oauth ? { authKeys: oauth.authKeys() } : {}),
    settings: {
      urls,
      previewBaseUrl: `${urls.creative}/previews`,
      ...(core.settings ?? {}),
    },
  });
  for (const agent of AGENT_KINDS) {
    const app = createAgentApp({
      agent,
      core: h.core,
      profile,
      ...(oauth ? { extra: [oauth.middleware(agent)], oauth: true } : {}),
    });
    handlers[agent] = app.callback();
  }
  return { h, urls, oauth };
}

/** A JSON-RPC MCP `tools/call` of `name`. */
export function mcpCall(name: string, args: Record<string, unknown>, id: unknown = 1) {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } };
}

/** An A2A 0.3 `message/send` of `skill` (one data part). */
export function a2aSend(skill: string, parameters: Record<string, unknown>, id: unknown = 'r1') {
  return {
    jsonrpc: '2.0',
    id,
    method: 'message/send',
    params: {
      message: {
        kind: 'message',
        messageId: `m${String(id)}`,
        role: 'user',
        parts: [{ kind: 'data', data: { skill, parameters } }],
      },
    },
  };
}

/** An A2A 1.0 `SendMessage` of `skill` (one data part). */
export function a2aSendV1(skill: string, input: Record<string, unknown>, id: unknown = 'r1') {
  return {
    jsonrpc: '2.0',
    id,
    method: 'SendMessage',
    params: {
      message: {
        messageId: `m${String(id)}`,
        role: 'ROLE_USER',
        parts: [{ data: { skill, input } }],
      },
    },
  };
}

export async function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: the test sees the text
  }
  return { status: res.status, body: parsed, headers: res.headers };
}
