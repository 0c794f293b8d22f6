/**
 * The Deliveries filter and its cursor, parsed from a query string (pages, JSON API and
 * CLI share it). Bad input is a `ConsoleInputError` naming the parameter and what it takes.
 */
import { ConsoleInputError } from '../../shared/console/errors.js';
import type { OutboxState } from '../outbox/outbox.js';

export const DELIVERY_STATES: readonly OutboxState[] = [
  'pending',
  'delivered',
  'stopped',
  'expired',
];

export interface DeliveryFilter {
  status?: OutboxState;
  /**
   * `scheme://host[:port]`, lower case; or `host[:port]` (either scheme); or a search
   * pattern (`textMatch`): `https://buyer*` (prefix), `*buyer*` (contains).
   */
  origin?: string;
  mediaBuyId?: string;
  principalId?: string;
  taskId?: string;
  eventType?: string;
  idempotencyKey?: string;
  /**
   * A value inside the frozen body: `path=value`, the path dot-separated keys and array
   * indexes (`result.media_buy_id=mb_1`, `packages.0.package_id=p1`), compared as text.
   */
  payload?: string;
  /** created_at >= from */
  from?: Date;
  /** created_at < to */
  to?: Date;
}

/** Keyset position: the last row shown, (created_at in µs since the epoch, id). */
export interface Cursor {
  createdUs: string;
  id: string;
}

export { ConsoleInputError };

/** Query-string names of the filter fields, as the pages and the API spell them. */
export const FILTER_PARAMS = {
  status: 'status',
  origin: 'origin',
  mediaBuyId: 'media_buy',
  principalId: 'principal',
  taskId: 'task',
  eventType: 'type',
  idempotencyKey: 'key',
  payload: 'payload',
  from: 'from',
  to: 'to',
} as const;

const TEXT_MAX = 256;

function text(field: string, v: string): string {
  if (v.length > TEXT_MAX) throw new ConsoleInputError(field, `at most ${TEXT_MAX} characters`);
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  if (/[\u0000-\u001f]/.test(v)) throw new ConsoleInputError(field, 'control characters');
  return v;
}

export function parseTime(field: string, v: string): Date {
  const d = new Date(v);
  if (!/^\d{4}-\d{2}-\d{2}/.test(v) || Number.isNaN(d.getTime())) {
    throw new ConsoleInputError(field, 'an ISO 8601 time, e.g. 2026-11-23T12:00:00Z');
  }
  return d;
}

/**
 * How a text filter matches (task, principal, media buy, destination): `abc` exactly,
 * `abc*` as a prefix, `*abc*` anywhere. A `*` elsewhere is refused, as is an empty pattern.
 */
export type TextMatch =
  { op: 'eq'; value: string } | { op: 'prefix'; value: string } | { op: 'contains'; value: string };

export function textMatch(field: string, v: string): TextMatch {
  const contains = /^\*([^*]+)\*$/.exec(v);
  if (contains) return { op: 'contains', value: contains[1]! };
  const prefix = /^([^*]+)\*$/.exec(v);
  if (prefix) return { op: 'prefix', value: prefix[1]! };
  if (v.includes('*')) {
    throw new ConsoleInputError(field, 'a value, value* (prefix) or *value* (contains)');
  }
  return { op: 'eq', value: v };
}

/** `host[:port]` without a scheme: what an operator copies from a log line. */
const HOST_PORT =
  /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*|\[[0-9a-f:.]+\])(?::\d{1,5})?$/i;

/** The origins a filter's origin stands for: itself, or both schemes of a `host:port`. */
export function originCandidates(origin: string): string[] {
  return origin.includes('://') ? [origin] : [`http://${origin}`, `https://${origin}`];
}

/**
 * `https://Host:8443/any/path` -> `https://host:8443`; `Host:8443` -> `host:8443` (either
 * scheme, see originCandidates); anything else is refused.
 */
export function parseOrigin(field: string, v: string): string {
  if (HOST_PORT.test(v.trim())) return v.trim().toLowerCase();
  const m = /^([a-z][a-z0-9+.-]*):\/\/([^/?#\s]+)\/?$/i.exec(v.trim());
  if (!m) {
    try {
      const u = new URL(v);
      return `${u.protocol}//${u.host}`.toLowerCase();
    } catch {
      throw new ConsoleInputError(field, 'an origin such as https://buyer.example');
    }
  }
  return `${m[1]}://${m[2]}`.toLowerCase();
}

const PATH_SEGMENT = /^[A-Za-z0-9_$@-]{1,64}$/;

/** `a.b.0=value` -> the path's segments and the value; a 400 naming `payload` otherwise. */
export function payloadMatch(v: string): { path: string[]; value: string } {
  const i = v.indexOf('=');
  const path = i > 0 ? v.slice(0, i).split('.') : [];
  if (i <= 0 || path.length > 16 || !path.every((p) => PATH_SEGMENT.test(p))) {
    throw new ConsoleInputError(
      'payload',
      'path=value, the path dot-separated keys or indexes, e.g. result.media_buy_id=mb_1',
    );
  }
  const value = v.slice(i + 1);
  // A lone surrogate has no UTF-8 form: the value could never be found, and its JSON probe
  // would not parse.
  if (/\p{Surrogate}/u.test(value))
    throw new ConsoleInputError('payload', 'a well-formed Unicode value');
  return { path, value };
}

/** What JSON's grammar calls a number: such a value is also looked for as that number. */
const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
/** Beyond this many index-like segments (2^n probes) the payload search skips its index. */
const MAX_INDEX_SEGMENTS = 3;

/**
 * The jsonb documents whose containment (`@>`) finds every body where `path` holds `value`
 * compared as text (`#>>`): the value as a string, and as itself when it is a JSON number,
 * true or false. A segment of digits is an object key or an array index, so both shapes are
 * probed (an array in a probe matches any element; the `#>>` check that follows keeps only
 * the exact position). Null when the path has too many such segments to probe (the search
 * then walks). The documents are JSON text: numbers stay exact (no JavaScript double).
 */
export function payloadProbes(path: string[], value: string): string[] | null {
  const indexLike = path.filter((p) => /^\d+$/.test(p)).length;
  if (indexLike > MAX_INDEX_SEGMENTS) return null;
  const leaves = [JSON.stringify(value)];
  if (JSON_NUMBER.test(value) || value === 'true' || value === 'false') leaves.push(value);
  let docs = leaves;
  for (const seg of [...path].reverse()) {
    const key = JSON.stringify(seg);
    docs = docs.flatMap((d) =>
      /^\d+$/.test(seg) ? [`{${key}:${d}}`, `[${d}]`] : [`{${key}:${d}}`],
    );
  }
  return docs;
}

/** Reads the filter from query parameters; empty values are absent. */
export function parseFilter(q: Record<string, unknown>): DeliveryFilter {
  const get = (name: string): string | undefined => {
    const v = q[name];
    const s = Array.isArray(v) ? v[0] : v;
    if (s === undefined || s === null || s === '') return undefined;
    if (typeof s !== 'string') throw new ConsoleInputError(name, 'a string');
    return s.trim() === '' ? undefined : s.trim();
  };
  const f: DeliveryFilter = {};
  const status = get(FILTER_PARAMS.status);
  if (status !== undefined) {
    if (!(DELIVERY_STATES as readonly string[]).includes(status)) {
      throw new ConsoleInputError('status', `one of ${DELIVERY_STATES.join(', ')}`);
    }
    f.status = status as OutboxState;
  }
  const origin = get(FILTER_PARAMS.origin);
  if (origin !== undefined) {
    // A search pattern is kept as typed (lower case); anything else is an origin.
    f.origin = origin.includes('*')
      ? (textMatch('origin', text('origin', origin.toLowerCase())), origin.toLowerCase())
      : parseOrigin('origin', origin);
  }
  for (const k of ['mediaBuyId', 'principalId', 'taskId', 'eventType', 'idempotencyKey'] as const) {
    const v = get(FILTER_PARAMS[k]);
    if (v !== undefined) f[k] = text(FILTER_PARAMS[k], v);
  }
  // Patterns are checked here, so a malformed one is a 400 naming the parameter.
  for (const k of ['mediaBuyId', 'principalId', 'taskId'] as const) {
    if (f[k] !== undefined) textMatch(FILTER_PARAMS[k], f[k]);
  }
  const payload = get(FILTER_PARAMS.payload);
  if (payload !== undefined) {
    payloadMatch(text('payload', payload));
    f.payload = payload;
  }
  const from = get('from');
  if (from !== undefined) f.from = parseTime('from', from);
  const to = get('to');
  if (to !== undefined) f.to = parseTime('to', to);
  if (f.from && f.to && f.from >= f.to) throw new ConsoleInputError('to', 'must be after from');
  return f;
}

/** The filter back as query parameters (links, the next page). */
export function filterParams(f: DeliveryFilter): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, name] of Object.entries(FILTER_PARAMS)) {
    const v = f[k as keyof DeliveryFilter];
    if (v === undefined) continue;
    out[name] = v instanceof Date ? v.toISOString() : v;
  }
  return out;
}

export function encodeCursor(c: Cursor): string {
  return Buffer.from(`${c.createdUs}.${c.id}`).toString('base64url');
}

export function decodeCursor(v: string): Cursor {
  const m = /^(\d{1,19})\.(\d{1,19})$/.exec(Buffer.from(v, 'base64url').toString());
  if (!m) throw new ConsoleInputError('cursor', 'not a cursor this console gave out');
  return { createdUs: m[1]!, id: m[2]! };
}

export function parseLimit(v: unknown, dflt = 50): number {
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 200) {
    throw new ConsoleInputError('limit', 'an integer from 1 to 200');
  }
  return n;
}
