/**
 * What transports publish about a task besides its own one-line `description` (a field of
 * its definition): the JSON Schema of its parameters (MCP tool `inputSchema`, A2A skill
 * docs). The schema is derived, not
 * written again: every member of the protocol's published request schema (3.2 and 3.1,
 * `$ref`s inlined a few levels deep, deeper ones left open), plus the spec's older
 * members our zod schema still accepts (`buyer_ref`, `brand_manifest`, `updates`...).
 * `required` is what the dispatcher's validator names as missing in an empty request
 * (`requiredMembers`, the very schema the dispatcher parses with): the members every
 * accepted form needs sit in `required`; a member one form needs and another replaces
 * (`packages` or `proposal_id`; `idempotency_key` unless the older form) is one
 * `allOf[].anyOf` group of `required` alternatives, probed from the same validator, so
 * no accepted form is refused by a client that checks the schema. A typed client that
 * strips undeclared members (the reference SDK's) so keeps every member we take.
 */
import { z } from 'zod';
import {
  hasPublishedTask,
  publishedSchema,
  publishedTaskName,
  RELEASES,
  resolveRef,
  type Release,
} from '../protocol/index.js';
import type { TaskDefinition } from './types.js';
import { issuesOf } from './validation.js';

type Json = Record<string, unknown>;

/** How deep `$ref`s are inlined; below, a member is described but left open (`{}`). */
const INLINE_DEPTH = 1;

/** Keywords that only point elsewhere or steer validators; dropped from inlined copies. */
const DROPPED = new Set(['$id', '$schema', 'definitions', '$defs', 'examples', 'x-entity']);

/**
 * A published schema with its `$ref`s inlined `depth` levels deep. Only the member's own
 * description is kept (`top`): the nested ones would make a tool list megabytes long.
 */
function inline(
  node: unknown,
  release: Release,
  base: string,
  depth: number,
  top = false,
): unknown {
  if (Array.isArray(node)) return node.map((n) => inline(n, release, base, depth));
  if (!node || typeof node !== 'object') return node;
  const o = node as Json;
  if (typeof o.$ref === 'string') {
    const ref = o.$ref;
    const target = ref.startsWith('#') ? null : resolveRef(release, absolute(ref, base));
    const rest = Object.fromEntries(
      Object.entries(o).filter(([k]) => k !== '$ref' && (top || k !== 'description')),
    );
    if (!target || depth <= 0) {
      const description = top ? ((rest.description ?? target?.description) as string) : undefined;
      return description ? { description } : {};
    }
    const id = typeof target.$id === 'string' ? target.$id : base;
    return { ...(inline(target, release, id, depth - 1) as Json), ...rest };
  }
  const out: Json = {};
  for (const [k, v] of Object.entries(o)) {
    if (DROPPED.has(k) || (!top && (k === 'description' || k === 'title'))) continue;
    out[k] =
      k === 'properties' || k === 'patternProperties'
        ? Object.fromEntries(
            Object.entries(v as Json).map(([pk, pv]) => [pk, inline(pv, release, base, depth)]),
          )
        : inline(v, release, base, depth);
  }
  return out;
}

/** A `$ref` relative to the `$id` of the file it is in, as an absolute `$id`. */
function absolute(ref: string, base: string): string {
  if (ref.startsWith('/') || /^https?:/.test(ref)) return ref.split('#')[0]!;
  const dir = base.slice(0, base.lastIndexOf('/') + 1);
  const parts = (dir + ref.split('#')[0]).split('/');
  const out: string[] = [];
  for (const p of parts) {
    if (p === '..') out.pop();
    else if (p !== '.') out.push(p);
  }
  return out.join('/');
}

/** The top-level members of the published request, newest release first. */
function publishedProperties(def: TaskDefinition): Json {
  const props: Json = {};
  const name = publishedTaskName(def.name);
  for (const release of [...RELEASES].reverse()) {
    if (!hasPublishedTask(release, def.agent, name)) continue;
    const schema = publishedSchema(release, def.agent, name, 'request');
    if (!schema) continue;
    const id = String(schema.$id);
    for (const [k, v] of Object.entries((schema.properties ?? {}) as Json)) {
      if (!(k in props)) props[k] = inline(v, release, id, INLINE_DEPTH, true);
    }
  }
  return props;
}

/** Top-level members the validator names `required` for `request`, in its order. */
function missing(def: TaskDefinition, request: Record<string, unknown>): string[] {
  const parsed = def.schema.safeParse(request);
  if (parsed.success) return [];
  const out: string[] = [];
  for (const issue of issuesOf(parsed.error.issues)) {
    const m = /^\/([^/]+)$/.exec(issue.pointer);
    if (issue.keyword === 'required' && m && !out.includes(m[1]!)) out.push(m[1]!);
  }
  return out;
}

/**
 * What the dispatcher's validator requires of a request in the published form: the
 * members it names as missing in `{}` (`svc call --list` prints these).
 */
export function requiredMembers(def: TaskDefinition): string[] {
  return missing(def, {});
}

/**
 * For each member the validator requires, the other members whose presence alone lifts
 * that requirement (`packages` → `proposal_id`), probed against the validator itself.
 * A member no other one replaces is required outright (empty list).
 */
function requiredAlternatives(def: TaskDefinition, candidates: string[]): Map<string, string[]> {
  const required = requiredMembers(def);
  const out = new Map<string, string[]>(required.map((m) => [m, []]));
  for (const c of candidates) {
    if (required.includes(c)) continue;
    const still = missing(def, { [c]: {} });
    for (const m of required) if (!still.includes(m)) out.get(m)!.push(c);
  }
  return out;
}

const schemas = new WeakMap<TaskDefinition, Json>();

/** The MCP `inputSchema` / A2A skill schema of a task (computed once per definition). */
export function taskInputJsonSchema(def: TaskDefinition): Json {
  const cached = schemas.get(def);
  if (cached) return cached;
  const ours = z.toJSONSchema(def.schema, { unrepresentable: 'any', io: 'input' }) as Json;
  const published = publishedProperties(def);
  const properties: Json = { ...published };
  // The older forms we still accept: members the published request has not, and the
  // older shape of a member it has (e.g. `start_time: {type: 'asap'}`) as an alternative.
  for (const [k, v] of Object.entries((ours.properties ?? {}) as Json)) {
    const pub = properties[k] as Json | undefined;
    if (!pub) properties[k] = v;
    else if (Object.keys(pub).some((key) => key !== 'description')) {
      const { description, ...shape } = pub;
      properties[k] = { ...(description ? { description } : {}), anyOf: [shape, v] };
    }
  }
  const out: Json = { type: 'object', properties, additionalProperties: true };
  const required: string[] = [];
  const groups: Json[] = [];
  for (const [member, alternatives] of requiredAlternatives(def, Object.keys(properties))) {
    if (alternatives.length === 0) required.push(member);
    else groups.push({ anyOf: [member, ...alternatives].map((m) => ({ required: [m] })) });
  }
  if (required.length > 0) out.required = required;
  if (groups.length > 0) out.allOf = groups;
  schemas.set(def, out);
  return out;
}
