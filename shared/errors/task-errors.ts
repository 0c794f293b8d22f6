/**
 * Task errors: the codes of the spec's Errors section with their HTTP statuses, and the two
 * response shapes (`{error: {...}}` and the signal agent's `{errors: [...]}`).
 *
 * The spec gives no code -> status mapping; ours follows its HTTP statuses table:
 * - credentials missing/invalid -> 401; authenticated but not allowed -> 403;
 * - invalid parameters, format ids, registrations -> 400 ("invalid parameters" row);
 *   VALIDATION_ERROR is 400 too: its example (budget not greater than 0) is a parameter
 *   failure, and callers that reject a whole document against a schema (the 422 row) pass
 *   `{ status: 422 }` for that instance;
 * - unknown ids -> 404; state conflicts (idempotency, already active) -> 409;
 * - ACTIVATION_FAILED -> 422: the request was understood and valid but the target could not
 *   take it (no 5xx: it is a definite answer, not a server fault).
 * `webhook_signature_*` codes live in ./webhook-codes.ts (always 401).
 */
import { z } from 'zod';
import { JsonParseError, parseStrictJson, sanitizeForLog } from '../json/strict-parse.js';
import { SvcError } from './base.js';
import type { SvcErrorCode } from './codes.js';

export const TASK_ERROR_STATUS = {
  AUTH_REQUIRED: 401,
  AUTH_INVALID: 401,
  INSUFFICIENT_PERMISSIONS: 403,
  VALIDATION_ERROR: 400,
  INVALID_FORMAT_ID: 400,
  INVALID_REQUEST: 400,
  IDEMPOTENCY_CONFLICT: 409,
  SIGNAL_AGENT_SEGMENT_NOT_FOUND: 404,
  ACTIVATION_FAILED: 422,
  ALREADY_ACTIVATED: 409,
  DEPLOYMENT_UNAUTHORIZED: 403,
  AGENT_NOT_FOUND: 404,
  AGENT_ACCESS_DENIED: 403,
  /** Supplement §7.5: a `time_granularity` the seller does not declare. */
  UNSUPPORTED_GRANULARITY: 400,
} as const satisfies Record<string, number>;

export type TaskErrorCode = keyof typeof TASK_ERROR_STATUS;
export const TASK_ERROR_CODES = Object.keys(TASK_ERROR_STATUS) as TaskErrorCode[];

export function isTaskErrorCode(value: unknown): value is TaskErrorCode {
  return typeof value === 'string' && Object.hasOwn(TASK_ERROR_STATUS, value);
}

export interface TaskErrorOptions {
  /** Path of the offending parameter, e.g. `packages[0].budget`. */
  field?: string;
  /** Signal agent shape only: what the caller can do about it. */
  suggestion?: string;
  /** Overrides the code's default status (e.g. 422 for a whole-document schema failure). */
  status?: number;
  /** Every offending field of a validation failure (the published error's `issues[]`). */
  issues?: readonly ErrorIssue[];
  /** Code-specific details (e.g. VERSION_UNSUPPORTED's `supported_versions`). */
  details?: Record<string, unknown>;
  cause?: unknown;
}

/** One rejected field: RFC 6901 pointer into the request, why, and the schema keyword. */
export interface ErrorIssue {
  pointer: string;
  message: string;
  keyword: string;
}

export interface ErrorBody {
  error: { code: string; message: string; field?: string };
}

export interface SignalErrorItem {
  code: string;
  message: string;
  field?: string;
  suggestion?: string;
}

export interface SignalErrorsBody {
  errors: SignalErrorItem[];
}

/** A refusal of a task call: the code, status and field are the contract. */
export class TaskError extends SvcError {
  static override readonly code: SvcErrorCode = 'ERR_TASK';

  /** The spec's task error code (the wire contract), not the class code `ERR_TASK`. */
  declare readonly code: TaskErrorCode;
  readonly status: number;
  readonly field: string | undefined;
  readonly suggestion: string | undefined;
  readonly issues: readonly ErrorIssue[] | undefined;
  readonly details: Record<string, unknown> | undefined;
  constructor(code: TaskErrorCode, message: string, options: TaskErrorOptions = {}) {
    super(message, { cause: options.cause, code });
    this.status = options.status ?? TASK_ERROR_STATUS[code];
    this.field = options.field;
    this.suggestion = options.suggestion;
    this.issues = options.issues;
    this.details = options.details;
  }

  /** `{error: {code, message, field?}}`. */
  toErrorBody(): ErrorBody {
    const error: ErrorBody['error'] = { code: this.code, message: this.message };
    if (this.field !== undefined) error.field = this.field;
    return { error };
  }

  /** One item of the signal agent's `errors` array. */
  toSignalItem(): SignalErrorItem {
    const item: SignalErrorItem = { code: this.code, message: this.message };
    if (this.field !== undefined) item.field = this.field;
    if (this.suggestion !== undefined) item.suggestion = this.suggestion;
    return item;
  }

  /** `{errors: [{code, message, field, suggestion}]}` for this one error. */
  toSignalErrorsBody(): SignalErrorsBody {
    return signalErrorsBody([this]);
  }
}

/**
 * The signal agent shape for several errors at once; the HTTP status is the first
 * error's (callers put the most significant first).
 */
export function signalErrorsBody(errors: readonly TaskError[]): SignalErrorsBody {
  return { errors: errors.map((e) => e.toSignalItem()) };
}

const ItemSchema = z.object({
  code: z.string().min(1),
  message: z.string(),
  field: z.string().optional(),
  suggestion: z.string().optional(),
});
export const ErrorBodySchema = z.object({ error: ItemSchema.omit({ suggestion: true }) });
export const SignalErrorsBodySchema = z.object({ errors: z.array(ItemSchema).min(1) });

/**
 * Reads a task error back out of a response body of either shape (the client side of
 * `call_<brand>_agent`). Unknown codes are kept as text in `code` of the returned item;
 * null when the body is neither shape.
 */
export function readErrorBody(body: unknown): SignalErrorItem[] | null {
  const single = ErrorBodySchema.safeParse(body);
  if (single.success) return [single.data.error];
  const many = SignalErrorsBodySchema.safeParse(body);
  if (many.success) return many.data.errors;
  return null;
}

// ---------------------------------------------------------------------------------------
// Sender side: duplicate-key input (supplement §4.3)

/**
 * The sender refuses a payload whose JSON text repeats a key in any object, at any depth,
 * before canonicalising it. The error id is fixed by the supplement.
 */
export class DuplicateKeyInputError extends SvcError {
  static override readonly code: SvcErrorCode = 'ERR_DUPLICATE_KEY_INPUT';

  declare readonly code: 'duplicate_key_input';
  /** @deprecated use `code` (the same value). */
  get id(): 'duplicate_key_input' {
    return this.code;
  }
  /** Every repeated name (raw; sanitise with `sanitizeForLog` before logging). */
  readonly duplicateKeys: string[];
  readonly status = 400;
  constructor(duplicateKeys: string[]) {
    super(`duplicate_key_input: ${sanitizeForLog(duplicateKeys).join(', ')}`, {
      code: 'duplicate_key_input',
    });
    this.duplicateKeys = duplicateKeys;
  }

  toErrorBody(): ErrorBody {
    return { error: { code: this.code, message: this.message } };
  }
}

/**
 * Parses payload text handed to the sender: duplicates -> DuplicateKeyInputError, any
 * other defect -> the JsonParseError itself.
 */
export function parseSenderPayload(input: Uint8Array | string): unknown {
  try {
    return parseStrictJson(input);
  } catch (err) {
    if (err instanceof JsonParseError && err.code === 'duplicate_key') {
      throw new DuplicateKeyInputError(err.duplicateKeys);
    }
    throw err;
  }
}
