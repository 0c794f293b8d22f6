/**
 * Response validation against the published schemas. `validateResponse` answers one
 * release; `checkResponse` applies the configured mode (SVC_AGENTS_VALIDATE_RESPONSES)
 * to a wire body over every release that publishes the task: `off` returns at once (the
 * production default, nothing loaded), `warn` logs each drift, `strict` throws
 * ResponseSchemaDrift (tests run strict, so a drifting field fails the test that made it).
 */
import { BRANDS } from '../../shared/brand.js';
import { issuesFromAjv, type ValidationIssue } from './issues.js';
import {
  errorEnvelopeValidator,
  publishedAsyncValidator,
  publishedValidator,
  RELEASES,
  type Release,
} from './published-schemas.js';
import { SvcError } from '../../shared/errors/base.js';

export type ResponseValidationMode = 'off' | 'warn' | 'strict';
export const RESPONSE_VALIDATION_MODES = ['off', 'warn', 'strict'] as const;

const CAPABILITIES_TASKS = new Set(BRANDS.map((b) => `get_${b}_capabilities`));

/** Our brand's capabilities task (`get_svc_capabilities`) is the protocol's `get_adcp_capabilities`. */
export function publishedTaskName(task: string): string {
  return CAPABILITIES_TASKS.has(task) ? 'get_adcp_capabilities' : task;
}

const PROBE_FAILURE = { status: 'failed', errors: [{ code: 'PROBE', message: 'probe' }] };
const errorBranch = new Map<string, boolean>();

/** Whether the task's response schema has its own branch for a failed task. */
function hasErrorBranch(release: Release, agent: string, task: string): boolean {
  const key = `${release} ${agent} ${task}`;
  let has = errorBranch.get(key);
  if (has === undefined) {
    has = publishedValidator(release, agent, task, 'response')?.(PROBE_FAILURE) === true;
    errorBranch.set(key, has);
  }
  return has;
}

function isFailure(body: unknown): boolean {
  return (
    typeof body === 'object' &&
    body !== null &&
    (body as { status?: unknown }).status === 'failed' &&
    Array.isArray((body as { errors?: unknown }).errors)
  );
}

/**
 * The issues of a wire body against one release's response schema of the task: `[]` when
 * valid, null when the release does not publish that task. A failed task (`status:
 * 'failed'` with `errors[]`) is checked against the task's own error branch where its
 * schema has one (create_media_buy...), else against the protocol's error envelope
 * (a list's response schema requires the list, which a refusal does not have).
 */
export function validateResponse(
  agent: string,
  task: string,
  body: unknown,
  release: Release,
): ValidationIssue[] | null {
  const name = publishedTaskName(task);
  const fn = publishedValidator(release, agent, name, 'response');
  if (!fn) return null;
  // A working / input-required answer is the task's status-specific payload where the
  // release publishes one (async-response-data: "use the status-specific schemas").
  const status = (body as { status?: unknown } | null)?.status;
  const nonTerminal =
    typeof status === 'string' &&
    !(status === 'submitted' && hasSubmittedBranch(release, agent, name, fn))
      ? publishedAsyncValidator(release, agent, name, status)
      : null;
  if (nonTerminal) return nonTerminal(body) ? [] : issuesFromAjv(nonTerminal.errors);
  const check =
    isFailure(body) && !hasErrorBranch(release, agent, name) ? errorEnvelopeValidator(release) : fn;
  return check(body) ? [] : issuesFromAjv(check.errors);
}

const submittedBranches = new Map<string, boolean>();

/**
 * Whether the task's response schema has a `submitted` branch of its own (create_media_buy:
 * "status 'submitted' with task_id when no media_buy_id is being returned"). Such a task's
 * submitted answer is checked by that branch, which is stricter than the status-specific
 * payload (that one allows any member, a media_buy_id included); a task without one
 * (get_products) is checked by the status-specific payload.
 */
function hasSubmittedBranch(
  release: Release,
  agent: string,
  name: string,
  fn: (body: unknown) => boolean,
): boolean {
  const key = `${release} ${agent} ${name}`;
  let has = submittedBranches.get(key);
  if (has === undefined) {
    has = fn({ status: 'submitted', task_id: 'probe' });
    submittedBranches.set(key, has);
  }
  return has;
}

/** The issues of a request against one release's request schema (null: unpublished). */
export function validateRequest(
  agent: string,
  task: string,
  params: unknown,
  release: Release,
): ValidationIssue[] | null {
  const fn = publishedValidator(release, agent, publishedTaskName(task), 'request');
  if (!fn) return null;
  return fn(params) ? [] : issuesFromAjv(fn.errors);
}

export interface DriftItem {
  release: Release;
  issues: ValidationIssue[];
}

export class ResponseSchemaDrift extends SvcError {
  static override readonly code = 'ERR_RESPONSE_SCHEMA_DRIFT';

  readonly agent: string;
  readonly task: string;
  readonly drift: DriftItem[];
  constructor(agent: string, task: string, drift: DriftItem[]) {
    const detail = drift
      .map(
        (d) =>
          `${d.release}: ${d.issues
            .slice(0, 8)
            .map((i) => `${i.pointer || '/'} ${i.message}`)
            .join('; ')}`,
      )
      .join(' | ');
    super(`${agent} ${task} response does not match the published schema: ${detail}`);
    this.name = 'ResponseSchemaDrift';
    this.agent = agent;
    this.task = task;
    this.drift = drift;
  }
}

/**
 * The releases a request speaks: its `adcp_version` (`3.1...` or `3.2...`) names one; a
 * request without one is answered in a shape every release accepts. (A 3.2-only value,
 * e.g. the `creative.assignment_changed` event type, cannot be valid 3.1.)
 */
export function releasesOf(params: unknown): readonly Release[] {
  const v =
    params && typeof params === 'object'
      ? (params as { adcp_version?: unknown }).adcp_version
      : null;
  // MAJOR.MINOR of the pin, prerelease or patch after it (`3.2-beta.4`, `3.1.0`).
  const m = typeof v === 'string' ? /^(\d+)\.(\d+)(?:[.-]|$)/.exec(v) : null;
  if (m) {
    const match = RELEASES.filter((r) => r.startsWith(`${m[1]}.${m[2]}.`));
    if (match.length > 0) return match;
  }
  return RELEASES;
}

const NEUTRAL_BRANDS = BRANDS.filter((b) => b !== 'adcp');

/**
 * A neutral-brand answer (`SVC_BRAND=svc`) names the protocol's branded members with its own
 * word (`svc`, `svc_error`, `svc/webhook-signing/v1`): checked as the protocol's names, so
 * the same shape is held to the published schema under either brand.
 */
export function asPublishedBrand(task: string, body: unknown): unknown {
  const brand = NEUTRAL_BRANDS.find((b) => task === `get_${b}_capabilities`) ?? brandOf(body);
  if (brand === undefined) return body;
  const rename = (v: unknown): unknown => {
    if (typeof v === 'string')
      return v.startsWith(`${brand}/`) ? `adcp${v.slice(brand.length)}` : v;
    if (Array.isArray(v)) return v.map(rename);
    if (!v || typeof v !== 'object') return v;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const key =
        k === brand ? 'adcp' : k.startsWith(`${brand}_`) ? `adcp${k.slice(brand.length)}` : k;
      out[key] = rename(x);
    }
    return out;
  };
  return rename(body);
}

/** The neutral brand whose word a body's own top-level members carry, if any. */
function brandOf(body: unknown): string | undefined {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const keys = Object.keys(body);
  return NEUTRAL_BRANDS.find((b) => keys.some((k) => k === b || k.startsWith(`${b}_`)));
}

const LEGACY_STATUS_TASKS = new Set(['create_media_buy', 'update_media_buy']);

/**
 * A create/update_media_buy answer in the 3.0 shape (the answer to a buyer pinned to 3.0):
 * top-level `status` is the buy's status, equal to `media_buy_status`. 3.1 keeps that form
 * through its deprecation window ("sellers MAY emit both ... identical values"), though its
 * schema also binds top-level `status` to the task status (adcp#4895); 3.2 removed it. Such
 * a body is checked as 3.1 reads it (the task status, `completed`, in `status`) and not
 * against 3.2; null when the body is not in that shape (or says `completed`, which every
 * release accepts as is).
 */
function legacyStatusView(task: string, body: unknown): Record<string, unknown> | null {
  if (!LEGACY_STATUS_TASKS.has(task) || !body || typeof body !== 'object') return null;
  const b = body as Record<string, unknown>;
  // `completed` is both a task and a buy status: every release reads that body as is.
  const legacy = typeof b.media_buy_status === 'string' && b.status === b.media_buy_status;
  if (!legacy || b.status === 'completed') return null;
  return { ...b, status: 'completed' };
}

/** Every release's drift of a wire body (empty when it matches each that publishes it). */
export function responseDrift(
  agent: string,
  task: string,
  wire: unknown,
  releases: readonly Release[] = RELEASES,
): DriftItem[] {
  const drift: DriftItem[] = [];
  let body = asPublishedBrand(task, wire);
  const legacy = legacyStatusView(task, body);
  if (legacy) {
    body = legacy;
    releases = releases.filter((r) => r.startsWith('3.1.'));
  }
  for (const release of releases) {
    const issues = validateResponse(agent, task, body, release);
    if (issues && issues.length > 0) drift.push({ release, issues });
  }
  return drift;
}

export interface DriftLogger {
  warn(obj: object, msg: string): void;
}

/** Applies the mode to one wire body; see the module comment. */
export function checkResponse(
  mode: ResponseValidationMode | undefined,
  agent: string,
  task: string,
  body: unknown,
  options: { logger?: DriftLogger; releases?: readonly Release[] } = {},
): void {
  if (mode === undefined || mode === 'off') return;
  const drift = responseDrift(agent, task, body, options.releases);
  const logger = options.logger;
  if (drift.length === 0) return;
  const err = new ResponseSchemaDrift(agent, task, drift);
  if (mode === 'strict') throw err;
  if (logger) logger.warn({ agent, task, drift }, 'response does not match the published schema');
  else process.emitWarning(err.message, 'ResponseSchemaDrift');
}
