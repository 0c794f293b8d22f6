/**
 * Agent-side refusals. The spec's codes come from `shared/errors/task-errors.ts`; the
 * 404-class codes for unknown ids (the spec names the status, not the code) and a few
 * state conflicts are added here with the names the real protocol uses, carried by the
 * same `TaskError` class so transports format every refusal alike.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../shared/infra/logger.js';
import {
  TaskError,
  type ErrorIssue,
  type TaskErrorCode,
  type TaskErrorOptions,
} from '../../shared/errors/task-errors.js';

export const AGENT_ERROR_STATUS = {
  /**
   * A task name the agent does not have, under both brands: the spec's digest names no code
   * for it, so the published one (the caller asked for something this seller does not do).
   */
  UNSUPPORTED_FEATURE: 404,
  /** The published code of the spec's INSUFFICIENT_PERMISSIONS / AGENT_ACCESS_DENIED (adcp). */
  PERMISSION_DENIED: 403,
  /** A proposal id create_media_buy cannot execute (published codes; see media-buy-proposal.ts). */
  PROPOSAL_NOT_FOUND: 404,
  PROPOSAL_EXPIRED: 410,
  PROPOSAL_NOT_COMMITTED: 409,
  /** A proposal's total_budget share under an allocation's minimum (published code). */
  BUDGET_TOO_LOW: 400,
  /**
   * An id that names nothing the caller may see (a task id): the published generic
   * not-found code (enums/error-code.json, 3.1.19 and 3.2.0-beta.5; the reference SDK's
   * own `tasks/get` answers it with `field: task_id`). There is no TASK_NOT_FOUND.
   */
  REFERENCE_NOT_FOUND: 404,
  PRODUCT_NOT_FOUND: 404,
  /** A configured (request-specific) product past its `expires_at` (published code, 3.2). */
  PRODUCT_EXPIRED: 410,
  MEDIA_BUY_NOT_FOUND: 404,
  PACKAGE_NOT_FOUND: 404,
  CREATIVE_NOT_FOUND: 404,
  ACCOUNT_NOT_FOUND: 404,
  /** Format id not defined by the creative agent (spec 404 row). */
  FORMAT_NOT_SUPPORTED: 404,
  /** The resource's state does not allow the change (e.g. updating a canceled buy). */
  INVALID_STATE: 409,
  /** `adcp_major_version` / `adcp_version` outside the majors this seller speaks. */
  VERSION_UNSUPPORTED: 400,
  /** A fault of ours: a fixed message and a correlation id, the details only in our log. */
  INTERNAL_ERROR: 500,
  /** A sync_accounts `billing` outside `account.supported_billing` (published code). */
  BILLING_NOT_SUPPORTED: 400,
  /**
   * A billing the seller offers but not to this buyer agent (its onboarding record is
   * passthrough-only: only the operator can be invoiced); published code, 3.1.19 and up.
   */
  BILLING_NOT_PERMITTED_FOR_AGENT: 400,
} as const satisfies Record<string, number>;

export type AgentErrorCode = keyof typeof AGENT_ERROR_STATUS;

/**
 * Codes the spec's digest names that the published enum (`enums/error-code.json`, 3.1.19
 * and 3.2.0-beta.5) lacks, as the published code a buyer of the real protocol dispatches
 * on. Under SVC_BRAND=adcp these are emitted instead; the neutral brand keeps the spec's.
 */
const PUBLISHED_CODE: Partial<Record<string, AgentErrorCode>> = {
  INSUFFICIENT_PERMISSIONS: 'PERMISSION_DENIED',
  AGENT_ACCESS_DENIED: 'PERMISSION_DENIED',
  // An unknown signal: the published generic not-found (error_compliance_signals accepts
  // REFERENCE_NOT_FOUND or INVALID_REQUEST).
  SIGNAL_AGENT_SEGMENT_NOT_FOUND: 'REFERENCE_NOT_FOUND',
};

/** The code a brand emits for a spec code (see PUBLISHED_CODE). */
export function brandedCode(code: AnyTaskErrorCode, brand: string): AnyTaskErrorCode {
  return brand === 'adcp' ? (PUBLISHED_CODE[code] ?? code) : code;
}
export type AnyTaskErrorCode = TaskErrorCode | AgentErrorCode;

/** A TaskError with a spec code or one of the agent codes above. */
export function taskError(
  code: AnyTaskErrorCode,
  message: string,
  options: TaskErrorOptions = {},
): TaskError {
  const status = (AGENT_ERROR_STATUS as Record<string, number>)[code];
  return new TaskError(code as TaskErrorCode, message, {
    ...options,
    ...(status !== undefined && options.status === undefined ? { status } : {}),
  });
}

export { TaskError, type ErrorIssue };

/** What a caller is told of any fault of ours (issue 21 item 6): never the fault itself. */
export const INTERNAL_ERROR_MESSAGE =
  'the agent could not answer; try again, or quote the correlation_id to the seller';

/**
 * A fault of ours (a database error, a bug) as the protocol's INTERNAL_ERROR: the fault is
 * logged with a new correlation id; the caller gets the fixed message and that id only.
 */
export function internalError(
  err: unknown,
  logger: Pick<Logger, 'error'> | undefined,
  where: Record<string, unknown> = {},
): TaskError {
  const correlationId = randomUUID();
  logger?.error({ err, correlation_id: correlationId, ...where }, 'internal error');
  return taskError('INTERNAL_ERROR', INTERNAL_ERROR_MESSAGE, {
    details: { correlation_id: correlationId },
  });
}

/**
 * Several refusals at once (e.g. the signal agent's per-destination refusals): the first
 * is the headline (code, status); all of them go in `errors[]`.
 */
export class TaskErrors extends TaskError {
  static override readonly code = 'ERR_TASK_ERRORS';

  readonly items: TaskError[];
  constructor(items: TaskError[]) {
    const first = items[0];
    if (!first) throw new RangeError('TaskErrors needs at least one error');
    super(first.code, first.message, {
      status: first.status,
      ...(first.field !== undefined ? { field: first.field } : {}),
      ...(first.suggestion !== undefined ? { suggestion: first.suggestion } : {}),
      ...(first.issues !== undefined ? { issues: first.issues } : {}),
      ...(first.details !== undefined ? { details: first.details } : {}),
    });
    this.items = items;
  }
}

/** `/packages/0/budget` (RFC 6901) -> `packages[0].budget` (the published `field` form). */
export function fieldOfPointer(pointer: string): string {
  let out = '';
  for (const raw of pointer.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (/^(0|[1-9]\d*)$/.test(part)) out += `[${part}]`;
    else out += out === '' ? part : `.${part}`;
  }
  return out;
}

/** A zod/JS path (`['packages', 0, 'budget']`) as an RFC 6901 pointer. */
export function pointerOf(path: ReadonlyArray<PropertyKey>): string {
  return path.map((p) => `/${String(p).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/**
 * One VALIDATION_ERROR naming every offending field: `issues[]` carries them all,
 * `field` the first (as the published error requires), the message lists each.
 */
export function validationError(issues: readonly ErrorIssue[], message?: string): TaskError {
  const first = issues[0];
  if (!first) return taskError('VALIDATION_ERROR', message ?? 'invalid parameters');
  const named = issues.map((i) => {
    const field = fieldOfPointer(i.pointer);
    return field ? `${field}: ${i.message}` : i.message;
  });
  const field = fieldOfPointer(first.pointer);
  return taskError('VALIDATION_ERROR', message ?? named.join('; '), {
    ...(field ? { field } : {}),
    issues,
  });
}

/**
 * The published recovery class of each code we emit (the protocol's
 * `enums/error-code.json` enumMetadata; our own codes classed alike). Absent: correctable.
 */
const RECOVERY: Partial<Record<string, 'transient' | 'correctable' | 'terminal'>> = {
  AUTH_INVALID: 'terminal',
  ACCOUNT_NOT_FOUND: 'terminal',
  AGENT_ACCESS_DENIED: 'terminal',
  DEPLOYMENT_UNAUTHORIZED: 'terminal',
  INSUFFICIENT_PERMISSIONS: 'terminal',
  ACTIVATION_FAILED: 'terminal',
  INTERNAL_ERROR: 'transient',
};

/** One item of the published `errors[]` (core/error.json). */
export interface ProtocolError {
  code: string;
  message: string;
  field?: string;
  suggestion?: string;
  issues?: ErrorIssue[];
  details?: Record<string, unknown>;
  /** Absent only on IDEMPOTENCY_CONFLICT (see protocolError). */
  recovery?: 'transient' | 'correctable' | 'terminal';
}

export function protocolError(err: {
  code: string;
  message: string;
  field?: string | undefined;
  suggestion?: string | undefined;
  issues?: readonly ErrorIssue[] | undefined;
  details?: Record<string, unknown> | undefined;
}): ProtocolError {
  // A conflict tells the holder of a key nothing about the request first made with it: code
  // and message only (the protocol's field allowlist for IDEMPOTENCY_CONFLICT).
  if (err.code === 'IDEMPOTENCY_CONFLICT') return { code: err.code, message: err.message };
  const out: ProtocolError = {
    code: err.code,
    message: err.message,
    recovery: RECOVERY[err.code] ?? 'correctable',
  };
  if (err.field !== undefined) out.field = err.field;
  if (err.suggestion !== undefined) out.suggestion = err.suggestion;
  if (err.issues !== undefined && err.issues.length > 0) out.issues = [...err.issues];
  if (err.details !== undefined) out.details = err.details;
  return out;
}

/** The envelope member of the fatal error: `adcp_error` (SVC_BRAND=adcp), `svc_error`. */
export function errorMember(brand: string): string {
  return `${brand}_error`;
}

/** The request's `context` when it is an object (echoed verbatim on every answer). */
export function contextOf(params: unknown): Record<string, unknown> | undefined {
  if (!params || typeof params !== 'object' || Array.isArray(params)) return undefined;
  const c = (params as Record<string, unknown>).context;
  return c && typeof c === 'object' && !Array.isArray(c)
    ? (c as Record<string, unknown>)
    : undefined;
}

/**
 * How a transport answers a refusal: the HTTP status and the published error branch of
 * the task's response, `{status: 'failed', errors: [...], <brand>_error: errors[0],
 * context?}` (the two-layer model: payload `errors[]` plus the envelope's typed error).
 */
export function errorResponse(
  err: TaskError,
  options: { brand: string; context?: Record<string, unknown> | undefined },
): { status: number; body: Record<string, unknown> } {
  const items = err instanceof TaskErrors ? err.items : [err];
  const errors = items.map(protocolError);
  const body: Record<string, unknown> = {
    status: 'failed',
    errors,
    [errorMember(options.brand)]: errors[0],
  };
  if (options.context !== undefined) body.context = options.context;
  return { status: err.status, body };
}

/** A fault or refusal outside any task (404 route, 500, a client's own) in the same shape. */
export function plainErrorBody(brand: string, code: string, message: string, field?: string) {
  const error = protocolError({ code, message, ...(field !== undefined ? { field } : {}) });
  return { status: 'failed', errors: [error], [errorMember(brand)]: error };
}
