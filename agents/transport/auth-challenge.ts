/**
 * Auth refusals as HTTP answers on both transports: 401 for missing or rejected
 * credentials, 403 for an authenticated caller without the right, each with an RFC 6750
 * `WWW-Authenticate: Bearer` challenge naming the endpoint as realm and, when the origin
 * runs the OAuth server, the RFC 9728 protected-resource metadata of the endpoint
 * (`resource_metadata`). The body is a JSON-RPC error whose `data` is the protocol's
 * error envelope (`{status: failed, errors, <brand>_error, context?}`), where the
 * reference SDK reads a transport-level error from.
 */
import type { ServerResponse } from 'node:http';
import type { TaskError } from '../../shared/errors/task-errors.js';
import { errorResponse } from '../runtime/errors.js';

/** JSON-RPC codes of the two refusals (implementation-defined server-error range). */
export const RPC_UNAUTHORIZED = -32010;
export const RPC_FORBIDDEN = -32011;

const UNAUTHENTICATED = new Set(['AUTH_REQUIRED', 'AUTH_INVALID']);
// The spec's codes (SVC_BRAND=svc) and their published equivalent (adcp).
const FORBIDDEN = new Set(['INSUFFICIENT_PERMISSIONS', 'AGENT_ACCESS_DENIED', 'PERMISSION_DENIED']);

export function isAuthRefusal(err: TaskError): boolean {
  return UNAUTHENTICATED.has(err.code) || FORBIDDEN.has(err.code);
}

export interface ChallengeOptions {
  /** The endpoint URL (`<origin>/mcp`), the challenge's realm. */
  realm: string;
  /** Its RFC 9728 metadata URL, when the origin serves one. */
  resourceMetadata?: string | undefined;
}

/** `/.well-known/oauth-protected-resource/<path>` of an endpoint URL (RFC 9728 §3.1). */
export function protectedResourceMetadataUrl(endpointUrl: string): string {
  const u = new URL(endpointUrl);
  const path = u.pathname === '/' ? '' : u.pathname.replace(/\/$/, '');
  return `${u.origin}/.well-known/oauth-protected-resource${path}`;
}

function quoted(value: string): string {
  // RFC 7235 quoted-string: no raw quotes, backslashes or control characters.
  let out = '';
  for (const ch of value) {
    const c = ch.charCodeAt(0);
    out += c < 0x20 || c === 0x7f ? ' ' : ch === '"' || ch === '\\' ? `\\${ch}` : ch;
  }
  return `"${out}"`;
}

/**
 * The `WWW-Authenticate` value for a refusal. Missing credentials carry no error code
 * (RFC 6750 §3.1: the client did not try); rejected ones `invalid_token`; a caller
 * without the right `insufficient_scope`.
 */
export function bearerChallenge(err: TaskError, o: ChallengeOptions): string {
  const parts = [`realm=${quoted(o.realm)}`];
  if (err.code === 'AUTH_INVALID') {
    parts.push('error="invalid_token"', `error_description=${quoted(err.message)}`);
  } else if (FORBIDDEN.has(err.code)) {
    parts.push('error="insufficient_scope"', `error_description=${quoted(err.message)}`);
  }
  if (o.resourceMetadata) parts.push(`resource_metadata=${quoted(o.resourceMetadata)}`);
  return `Bearer ${parts.join(', ')}`;
}

/** Writes the 401/403 answer of an auth refusal to a JSON-RPC request. */
export function writeAuthRefusal(
  res: ServerResponse,
  err: TaskError,
  o: ChallengeOptions & {
    brand: string;
    rpcId: unknown;
    context?: Record<string, unknown> | undefined;
  },
): void {
  const status = FORBIDDEN.has(err.code) ? 403 : 401;
  const { body } = errorResponse(err, { brand: o.brand, context: o.context });
  const id = typeof o.rpcId === 'string' || typeof o.rpcId === 'number' ? o.rpcId : null;
  res
    .writeHead(status, {
      'content-type': 'application/json',
      'www-authenticate': bearerChallenge(err, o),
      'cache-control': 'no-store',
    })
    .end(
      JSON.stringify({
        jsonrpc: '2.0',
        id,
        error: {
          code: status === 403 ? RPC_FORBIDDEN : RPC_UNAUTHORIZED,
          message: `${err.code}: ${err.message}`,
          data: body,
        },
      }),
    );
}
