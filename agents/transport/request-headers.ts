/**
 * What a transport reads from the HTTP request for the dispatcher: credentials
 * (`Authorization`, `X-API-Key`) and the dry-run switch (`X-Dry-Run`). The same for MCP
 * and A2A so both transports treat a request alike.
 */
import { TaskError } from '../../shared/errors/task-errors.js';
import type { Credentials } from '../runtime/types.js';

export type HeaderBag = Record<string, string | string[] | undefined>;

function single(headers: HeaderBag, name: string): string | undefined {
  const v = headers[name];
  if (Array.isArray(v)) {
    // Two credentials of one kind cannot both hold: refuse rather than pick one.
    if (v.length > 1) throw new TaskError('AUTH_INVALID', `${name} sent more than once`);
    return v[0];
  }
  return v;
}

export function credentialsOf(headers: HeaderBag): Credentials {
  const authorization = single(headers, 'authorization');
  const apiKey = single(headers, 'x-api-key');
  return {
    ...(authorization !== undefined && authorization !== '' ? { authorization } : {}),
    ...(apiKey !== undefined && apiKey !== '' ? { apiKey } : {}),
  };
}

/** `X-Dry-Run: true|false` (case-insensitive); anything else is refused, naming the header. */
export function dryRunOf(headers: HeaderBag): boolean {
  const v = headers['x-dry-run'];
  if (v === undefined) return false;
  const s = (Array.isArray(v) ? v.join(',') : v).trim().toLowerCase();
  if (s === 'true') return true;
  if (s === 'false' || s === '') return false;
  throw new TaskError('VALIDATION_ERROR', 'X-Dry-Run must be "true" or "false"', {
    field: 'X-Dry-Run',
  });
}
