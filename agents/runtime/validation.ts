/**
 * Request validation: zod issues become the spec's errors, with `field` written the way
 * the spec writes paths (`packages[0].budget`). A format id that is not an object with
 * `agent_url` and `id` is `INVALID_FORMAT_ID`, whatever the path.
 */
import { z } from 'zod';
import type { TaskError } from '../../shared/errors/task-errors.js';
import type { ErrorIssue } from '../../shared/errors/task-errors.js';
import { pointerOf, taskError, validationError, type AnyTaskErrorCode } from './errors.js';

export function fieldPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out;
}

export interface FormatId {
  agent_url: string;
  id: string;
  [member: string]: unknown;
}

function isHttpUrl(v: unknown): boolean {
  if (typeof v !== 'string') return false;
  try {
    const u = new URL(v);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

export function isFormatId(v: unknown): v is FormatId {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const o = v as Record<string, unknown>;
  return (
    isHttpUrl(o.agent_url) && typeof o.id === 'string' && /^[A-Za-z0-9_.:-]{1,128}$/.test(o.id)
  );
}

/** A structured format id; anything else is INVALID_FORMAT_ID (a plain string included). */
export const FormatIdSchema = z.custom<FormatId>(isFormatId, {
  message: 'format_id must be an object with agent_url (an http(s) URL) and id, not a string',
  params: { taskCode: 'INVALID_FORMAT_ID' },
});

/** Parses params; the first issue becomes the TaskError (thrown). */
export function parseParams<S extends z.ZodType>(schema: S, params: unknown): z.output<S> {
  const parsed = schema.safeParse(params);
  if (parsed.success) return parsed.data;
  throw issueToError(parsed.error.issues);
}

/** The JSON Schema keyword a zod issue corresponds to (the published `issues[].keyword`). */
function keywordOf(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return (issue as { input?: unknown }).input === undefined ? 'required' : 'type';
    case 'too_small':
      return issue.origin === 'array'
        ? 'minItems'
        : issue.origin === 'string'
          ? 'minLength'
          : 'minimum';
    case 'too_big':
      return issue.origin === 'array'
        ? 'maxItems'
        : issue.origin === 'string'
          ? 'maxLength'
          : 'maximum';
    case 'invalid_value':
      return 'enum';
    case 'invalid_format':
      return issue.format === 'regex' ? 'pattern' : 'format';
    case 'unrecognized_keys':
      return 'additionalProperties';
    case 'invalid_union':
      return (issue as { input?: unknown }).input === undefined ? 'required' : 'anyOf';
    case 'custom':
      // A refinement may name the schema keyword it stands for (`params.keyword`).
      return (issue.params as { keyword?: string } | undefined)?.keyword ?? 'custom';
    default:
      return issue.code;
  }
}

/** Every zod issue as a published `issues[]` item (RFC 6901 pointer, message, keyword). */
export function issuesOf(issues: readonly z.core.$ZodIssue[]): ErrorIssue[] {
  return issues.map((i) => ({
    pointer: pointerOf(i.path),
    message: i.message,
    keyword: keywordOf(i),
  }));
}

/**
 * A refused request as one error naming every offending field at once (`issues[]`, with
 * `field` the first), not one field per call. A format id that is not structured is
 * INVALID_FORMAT_ID: it has its own code and callers look for it first.
 */
export function issueToError(issues: z.core.$ZodIssue[]): TaskError {
  const formatIssue = issues.find(
    (i) => i.code === 'custom' && (i.params as { taskCode?: string })?.taskCode,
  );
  if (formatIssue) {
    const field = fieldPath(formatIssue.path);
    const code = (formatIssue as { params?: { taskCode: string } }).params!
      .taskCode as AnyTaskErrorCode;
    const message = field ? `${field}: ${formatIssue.message}` : formatIssue.message;
    return taskError(code, message, {
      ...(field ? { field } : {}),
      issues: issuesOf([formatIssue]),
    });
  }
  return validationError(issuesOf(issues));
}

/** ISO 8601 date-time with an offset (Z or ±hh:mm). */
export const DateTimeSchema = z.iso.datetime({ offset: true });
export const DateSchema = z.iso.date();

export const BrandManifestSchema = z.union(
  [
    z.looseObject({
      url: z.url(),
      name: z.string().min(1).max(200).optional(),
      tagline: z.string().max(500).optional(),
      colors: z
        .looseObject({ primary: z.string().optional(), secondary: z.string().optional() })
        .optional(),
    }),
    z.looseObject({
      name: z.string().min(1).max(200),
      url: z.url().optional(),
      tagline: z.string().max(500).optional(),
      colors: z
        .looseObject({ primary: z.string().optional(), secondary: z.string().optional() })
        .optional(),
    }),
  ],
  { error: 'brand_manifest must be {url} or an inline manifest with name' },
);
export type BrandManifest = z.infer<typeof BrandManifestSchema>;

const IDEMPOTENCY_KEY_REQUIRED =
  'idempotency_key is required (a unique key per distinct request, stable across retries)';

/**
 * `idempotency_key` of a task with no older form (the published request is the only one):
 * required as a member, so the derived tool schema lists it too.
 */
export const RequiredIdempotencyKeySchema = z.string({
  error: (iss) =>
    iss.input === undefined ? IDEMPOTENCY_KEY_REQUIRED : 'idempotency_key must be a string',
});

/**
 * `idempotency_key` as the published request schemas require it: a request in the published
 * form without the key is refused naming it; the spec's older form of the task (`olderForm`
 * says which requests are in it) had no key and stays accepted without one. The key, when
 * present, is honoured by the dispatcher whatever the form (runtime/dispatcher.ts).
 * Checked with the other members (`when`), so a request missing the key and wrong
 * elsewhere names every offending field at once.
 */
export function requireIdempotencyKey(
  olderForm: (v: Record<string, unknown>) => boolean,
): [
  (v: object) => boolean,
  { message: string; path: PropertyKey[]; params: Record<string, unknown>; when: () => boolean },
] {
  return [
    (v) => {
      const r = v as Record<string, unknown>;
      return r.idempotency_key !== undefined || olderForm(r);
    },
    {
      message: IDEMPOTENCY_KEY_REQUIRED,
      path: ['idempotency_key'],
      params: { keyword: 'required' },
      when: () => true,
    },
  ];
}
