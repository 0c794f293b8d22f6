/**
 * The protocol's published JSON Schemas (vendored by scripts/vendor-schemas.mjs into
 * `./schemas/<release>/`), one Ajv instance per release. Nothing is read or compiled until
 * a task of that release is first validated: a process that never validates (responses
 * off, no describe call) pays nothing. Files are loaded by their `$id`, so `$ref`s resolve
 * among them exactly as the publisher wrote them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type AnySchemaObject, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS: its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ??
  addFormatsModule) as (ajv: Ajv) => Ajv;

export const RELEASES = ['3.1.19', '3.2.0-beta.5'] as const;
export type Release = (typeof RELEASES)[number];

const SCHEMA_DIR = fileURLToPath(new URL('./schemas/', import.meta.url));

interface TaskEntry {
  request: string;
  response: string;
  /** The payload of a non-terminal answer by status (`working`, `input-required`). */
  async?: Partial<Record<string, string>>;
}
type Manifest = Record<Release, Record<string, TaskEntry>>;

let manifest: Manifest | null = null;

function tasksManifest(): Manifest {
  manifest ??= JSON.parse(readFileSync(join(SCHEMA_DIR, 'tasks.json'), 'utf8')) as Manifest;
  return manifest;
}

function listJson(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) listJson(p, out);
    else if (e.name.endsWith('.json')) out.push(p);
  }
  return out;
}

const instances = new Map<Release, Ajv>();
const compiled = new Map<string, ValidateFunction>();

function ajvFor(release: Release): Ajv {
  let ajv = instances.get(release);
  if (ajv) return ajv;
  ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false });
  addFormats(ajv);
  for (const file of listJson(join(SCHEMA_DIR, release))) {
    const schema = JSON.parse(readFileSync(file, 'utf8')) as AnySchemaObject;
    // A few published files repeat another's $id; the first one wins.
    if (typeof schema.$id === 'string' && ajv.getSchema(schema.$id) === undefined) {
      ajv.addSchema(schema);
    }
  }
  instances.set(release, ajv);
  return ajv;
}

/** The manifest key of a task: `<agent>:<task>`, or `*:<task>` for every agent's tasks. */
function entryOf(release: Release, agent: string, task: string): TaskEntry | undefined {
  const tasks = tasksManifest()[release];
  return tasks[`${agent}:${task}`] ?? tasks[`*:${task}`];
}

/** Whether the release publishes this task of this agent. */
export function hasPublishedTask(release: Release, agent: string, task: string): boolean {
  return entryOf(release, agent, task) !== undefined;
}

/** The compiled validator of a task's request or response, or null where unpublished. */
export function publishedValidator(
  release: Release,
  agent: string,
  task: string,
  side: 'request' | 'response',
): ValidateFunction | null {
  const entry = entryOf(release, agent, task);
  if (!entry) return null;
  const id = entry[side];
  const key = `${release} ${id}`;
  let fn = compiled.get(key);
  if (!fn) {
    fn = ajvFor(release).getSchema(id);
    if (!fn)
      throw new Error(`published schema ${id} is not vendored; run scripts/vendor-schemas.mjs`);
    compiled.set(key, fn);
  }
  return fn;
}

const asyncCompiled = new Map<string, ValidateFunction>();

/**
 * The validator of a task's non-terminal answer with this status: the protocol envelope
 * (status, task_id, message, context) with the task's published status-specific payload
 * (`<task>-async-response-<status>.json`); null where the release publishes none.
 */
export function publishedAsyncValidator(
  release: Release,
  agent: string,
  task: string,
  status: string,
): ValidateFunction | null {
  const id = entryOf(release, agent, task)?.async?.[status];
  if (!id) return null;
  const key = `${release} ${id}`;
  let fn = asyncCompiled.get(key);
  if (!fn) {
    fn = ajvFor(release).compile({
      allOf: [{ $ref: `${envelopeBase(release)}/core/protocol-envelope.json` }, { $ref: id }],
      properties: { status: { const: status } },
    });
    asyncCompiled.set(key, fn);
  }
  return fn;
}

function envelopeBase(release: Release): string {
  return release === '3.1.19'
    ? `/schemas/${release}`
    : `https://adcontextprotocol.org/schemas/${release}`;
}

const envelopes = new Map<Release, ValidateFunction>();

/**
 * The protocol's error envelope of a failed task whose response schema has no error
 * branch: the protocol envelope (`status`, `context`, ...) with `errors[]` and
 * `adcp_error` each a published `core/error.json`.
 */
export function errorEnvelopeValidator(release: Release): ValidateFunction {
  let fn = envelopes.get(release);
  if (fn) return fn;
  const base =
    release === '3.1.19'
      ? `/schemas/${release}`
      : `https://adcontextprotocol.org/schemas/${release}`;
  fn = ajvFor(release).compile({
    allOf: [{ $ref: `${base}/core/protocol-envelope.json` }],
    type: 'object',
    required: ['status', 'errors'],
    properties: {
      status: { const: 'failed' },
      errors: { type: 'array', minItems: 1, items: { $ref: `${base}/core/error.json` } },
      adcp_error: { $ref: `${base}/core/error.json` },
    },
  });
  envelopes.set(release, fn);
  return fn;
}

const documents = new Map<string, AnySchemaObject | null>();

/**
 * Resolves an absolute `$id` of a release to its schema document, read from the vendored
 * file it names (no validator is built for this: describing a task stays cheap).
 */
export function resolveRef(release: Release, ref: string): AnySchemaObject | null {
  const path = ref.replace(/^https?:\/\/[^/]+/, '').split('#')[0]!;
  const prefix = `/schemas/${release}/`;
  if (!path.startsWith(prefix) || path.includes('..')) return null;
  const key = `${release} ${path}`;
  if (!documents.has(key)) {
    try {
      const file = join(SCHEMA_DIR, release, path.slice(prefix.length));
      documents.set(key, JSON.parse(readFileSync(file, 'utf8')) as AnySchemaObject);
    } catch {
      documents.set(key, null);
    }
  }
  return documents.get(key) ?? null;
}

/** The raw (unresolved) published schema document of a task's request or response. */
export function publishedSchema(
  release: Release,
  agent: string,
  task: string,
  side: 'request' | 'response',
): AnySchemaObject | null {
  const entry = entryOf(release, agent, task);
  return entry ? resolveRef(release, entry[side]) : null;
}

export type { ErrorObject };

const definitions = new Map<string, ValidateFunction>();

/**
 * The validator of one published schema document by its path in the release
 * (`core/targeting.json`): a request member that a task's own handler reads in the
 * published shape (get_products' 3.2 `targeting_overlay`), checked as the release says.
 */
export function publishedDefinitionValidator(release: Release, path: string): ValidateFunction {
  const id = `${envelopeBase(release)}/${path}`;
  let fn = definitions.get(id);
  if (!fn) {
    fn = ajvFor(release).getSchema(id);
    if (!fn)
      throw new Error(`published schema ${id} is not vendored; run scripts/vendor-schemas.mjs`);
    definitions.set(id, fn);
  }
  return fn;
}
