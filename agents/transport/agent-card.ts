/**
 * The A2A agent card of one agent, served at `/.well-known/agent-card.json` of its origin.
 * A request with `A2A-Version: 1.x` gets the 1.0 card (`supportedInterfaces`); any other
 * (0.3 clients send none) gets the 0.3 card (`url`, `preferredTransport`), as the SDK's
 * own card handler does. Both list every task as a skill and both JSON-RPC versions, and
 * declare their security requirement: a bearer (JWT or API key) or an X-API-Key. Skills
 * that are public answer without credentials all the same (the tiers of agents/README.md).
 */
import { AgentCard, type AgentCard as CoreAgentCard } from '@a2a-js/sdk';
import type { Middleware } from 'koa';
import type { AgentKind } from '../auth/principal.js';
import type { TaskDispatcher } from '../runtime/dispatcher.js';

export interface AgentCardOptions {
  agent: AgentKind;
  dispatcher: TaskDispatcher;
  baseUrl: string;
  name: string;
}

const DESCRIPTION: Record<AgentKind, string> = {
  sales: 'Sales agent: products, creative formats, media buys, creatives and delivery',
  creative: 'Creative agent: creative formats, building and previewing creatives',
  signals: 'Signal agent: discovering and activating audience signals',
};

const BEARER_DESCRIPTION =
  "A JWT (the agent's own, or an OAuth access token of its /oauth issuer) or an API key";

function skills(o: AgentCardOptions) {
  return o.dispatcher.registry.list(o.agent).map((def) => ({
    id: def.name,
    name: def.name,
    description: `${def.name} (${def.mode}, expected ${def.expectedDuration})`,
    tags: [o.agent, def.mutating ? 'mutating' : 'read-only'],
    examples: [],
    inputModes: ['application/json'],
    outputModes: ['application/json'],
    securityRequirements: [],
  }));
}

function a2aUrl(o: AgentCardOptions): string {
  return new URL('/a2a', o.baseUrl).toString();
}

/** The card as the SDK's types have it (1.0). */
export function coreAgentCard(o: AgentCardOptions): CoreAgentCard {
  const url = a2aUrl(o);
  return AgentCard.fromJSON({
    name: o.name,
    description: DESCRIPTION[o.agent],
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ],
    provider: { url: o.baseUrl, organization: o.name },
    version: '1.0.0',
    capabilities: { streaming: false, pushNotifications: true, extendedAgentCard: false },
    securitySchemes: {
      bearer: {
        httpAuthSecurityScheme: {
          scheme: 'Bearer',
          bearerFormat: 'JWT',
          description: BEARER_DESCRIPTION,
        },
      },
      apiKey: { apiKeySecurityScheme: { location: 'header', name: 'X-API-Key' } },
    },
    // Either scheme satisfies the agent (each requirement is an alternative).
    securityRequirements: [
      { schemes: { bearer: { list: [] } } },
      { schemes: { apiKey: { list: [] } } },
    ],
    defaultInputModes: ['application/json', 'text/plain'],
    defaultOutputModes: ['application/json'],
    skills: skills(o),
  });
}

/** The 0.3 card (JSON Schema shape). */
export function legacyAgentCard(o: AgentCardOptions): Record<string, unknown> {
  return {
    protocolVersion: '0.3.0',
    name: o.name,
    description: DESCRIPTION[o.agent],
    url: a2aUrl(o),
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url: a2aUrl(o), transport: 'JSONRPC' }],
    provider: { url: o.baseUrl, organization: o.name },
    version: '1.0.0',
    capabilities: { streaming: false, pushNotifications: true },
    securitySchemes: {
      bearer: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description: BEARER_DESCRIPTION,
      },
      apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
    },
    security: [{ bearer: [] }, { apiKey: [] }],
    defaultInputModes: ['application/json', 'text/plain'],
    defaultOutputModes: ['application/json'],
    skills: skills(o).map(({ id, name, description, tags }) => ({ id, name, description, tags })),
  };
}

export function agentCardMiddleware(o: AgentCardOptions): Middleware {
  return (ctx) => {
    const v = ctx.get('A2A-Version').trim();
    ctx.set('Vary', 'A2A-Version');
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.type = 'application/json';
    ctx.body = /^1(\.|$)/.test(v)
      ? (AgentCard.toJSON(coreAgentCard(o)) as Record<string, unknown>)
      : legacyAgentCard(o);
  };
}
