/**
 * A2A push payloads (supplement §6.2) in both versions, their builders for the sender and
 * the AdCP-data extraction rules for the receiver.
 *
 * - 0.3: bare objects tagged with `kind` (`task`, `status-update`, ...), lowercase states,
 *   roles `user`/`agent`, parts `{kind: 'text'|'data'|'file', ...}`.
 * - 1.0: a StreamResponse one-of with exactly one key (`task`, `statusUpdate`,
 *   `artifactUpdate`, `message`), states `TASK_STATE_*`, roles `ROLE_*`, parts without
 *   `kind` (`{text}`, `{data}`, `{url}`, `{raw}`).
 * Parsing is lenient where real senders differ (0.3 objects without `kind`, as in the
 * protocol's own extraction vectors) and strict where ambiguity would change meaning
 * (the one-of wrapper: exactly one key, unwrapped exactly once).
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { a2a10State, isInterimStatus, isTerminalStatus } from './task-status.js';
import type { TaskStatus } from './task-status.js';

export type A2aVersion = '0.3' | '1.0';
export type A2aKind = 'task' | 'status-update' | 'artifact-update' | 'message';

/** The StreamResponse members of A2A 1.0 and the object each one carries. */
export const STREAM_RESPONSE_KEYS = {
  task: 'task',
  statusUpdate: 'status-update',
  artifactUpdate: 'artifact-update',
  message: 'message',
} as const satisfies Record<string, A2aKind>;

// --- schemas (structure only; states are normalised separately) -------------------------

const part = z.looseObject({});
const parts = z.array(part);

export const A2aMessageSchema = z.looseObject({
  messageId: z.string().optional(),
  role: z.string().optional(),
  parts,
  taskId: z.string().optional(),
  contextId: z.string().optional(),
});

export const A2aStatusSchema = z.looseObject({
  state: z.string(),
  message: A2aMessageSchema.optional(),
  timestamp: z.string().optional(),
});

export const A2aArtifactSchema = z.looseObject({
  artifactId: z.string().optional(),
  name: z.string().optional(),
  parts,
});

export const A2aTaskSchema = z.looseObject({
  id: z.string().min(1),
  contextId: z.string().optional(),
  status: A2aStatusSchema,
  artifacts: z.array(A2aArtifactSchema).optional(),
  history: z.array(z.unknown()).optional(),
});
export type A2aTask = z.infer<typeof A2aTaskSchema>;

export const A2aStatusUpdateSchema = z.looseObject({
  taskId: z.string().min(1),
  contextId: z.string().optional(),
  status: A2aStatusSchema,
  /** Required by A2A 0.3; AdCP's 1.0 examples carry none. */
  final: z.boolean().optional(),
});
export type A2aStatusUpdate = z.infer<typeof A2aStatusUpdateSchema>;

export const A2aArtifactUpdateSchema = z.looseObject({
  taskId: z.string().min(1),
  contextId: z.string().optional(),
  artifact: A2aArtifactSchema,
  append: z.boolean().optional(),
  lastChunk: z.boolean().optional(),
});

// --- extraction (§6.2) ----------------------------------------------------------------

type Part = Record<string, unknown>;

/** A DataPart: `kind: 'data'` in 0.3; a `data` member and no other kind in 1.0. */
function dataOf(p: unknown): { found: boolean; data: unknown } {
  if (p === null || typeof p !== 'object' || Array.isArray(p)) return { found: false, data: null };
  const part = p as Part;
  if (part.kind !== undefined && part.kind !== 'data') return { found: false, data: null };
  if (!('data' in part)) return { found: false, data: null };
  return { found: true, data: unwrapResponse(part.data) };
}

/**
 * `{response: {...}}` as the whole DataPart is a known sender wrapper bug (§6.2); the
 * AdCP payload is the inner object.
 */
function unwrapResponse(data: unknown): unknown {
  if (data !== null && typeof data === 'object' && !Array.isArray(data)) {
    const keys = Object.keys(data);
    const inner = (data as Record<string, unknown>).response;
    if (
      keys.length === 1 &&
      keys[0] === 'response' &&
      inner !== null &&
      typeof inner === 'object'
    ) {
      return inner;
    }
  }
  return data;
}

function firstData(list: unknown): { found: boolean; data: unknown } {
  if (!Array.isArray(list)) return { found: false, data: null };
  for (const p of list) {
    const d = dataOf(p);
    if (d.found) return d;
  }
  return { found: false, data: null };
}

function lastData(list: unknown): { found: boolean; data: unknown } {
  if (!Array.isArray(list)) return { found: false, data: null };
  for (let i = list.length - 1; i >= 0; i--) {
    const d = dataOf(list[i]);
    if (d.found) return d;
  }
  return { found: false, data: null };
}

/**
 * AdCP data of an A2A Task or status update, given its normalised status: finals take the
 * last DataPart of `artifacts[0].parts[]` and fall back to the last DataPart of
 * `status.message.parts[]`; interim states take the first DataPart of
 * `status.message.parts[]`; anything else gives null.
 */
export function extractA2aData(
  object: { artifacts?: unknown; status?: unknown },
  status: TaskStatus | null,
): unknown {
  const statusParts = (object.status as { message?: { parts?: unknown } } | undefined)?.message
    ?.parts;
  if (isTerminalStatus(status)) {
    const artifacts = object.artifacts;
    const first = Array.isArray(artifacts)
      ? (artifacts[0] as { parts?: unknown } | undefined)
      : undefined;
    const fromArtifact = lastData(first?.parts);
    if (fromArtifact.found) return fromArtifact.data;
    return lastData(statusParts).data;
  }
  if (isInterimStatus(status)) return firstData(statusParts).data;
  return null;
}

/** AdCP data of an artifact update: the artifact's last DataPart. */
export function extractArtifactData(artifact: { parts?: unknown } | undefined): unknown {
  return lastData(artifact?.parts).data;
}

// --- builders (sender side) -------------------------------------------------------------

export interface A2aBuildInput {
  version: A2aVersion;
  taskId: string;
  contextId: string;
  /** A2A task state; AdCP `submitted`/`rejected` results ride in a `completed` Task. */
  status: TaskStatus;
  /** ISO 8601 UTC with milliseconds; defaults to now. */
  timestamp?: string;
  /** AdCP payload: one DataPart. */
  data?: Record<string, unknown>;
  /** Human-readable text: one TextPart before the data. */
  text?: string;
  artifactId?: string;
  messageId?: string;
}

function buildParts(version: A2aVersion, text: string | undefined, data: unknown): Part[] {
  const out: Part[] = [];
  if (text !== undefined) out.push(version === '0.3' ? { kind: 'text', text } : { text });
  if (data !== undefined) out.push(version === '0.3' ? { kind: 'data', data } : { data });
  return out;
}

function stateOf(version: A2aVersion, status: TaskStatus): string {
  return version === '0.3' ? status : a2a10State(status);
}

function agentMessage(input: A2aBuildInput): Part {
  const message: Part = {
    messageId: input.messageId ?? randomUUID(),
    taskId: input.taskId,
    contextId: input.contextId,
    role: input.version === '0.3' ? 'agent' : 'ROLE_AGENT',
    parts: buildParts(input.version, input.text, input.data),
  };
  return input.version === '0.3' ? { kind: 'message', ...message } : message;
}

/**
 * A Task push payload, for final states: the data goes in `artifacts[0].parts[]` (a
 * non-final Task carries it in `status.message` instead). 0.3: a bare `{kind: 'task'}`
 * object; 1.0: `{task: {...}}`.
 */
export function buildA2aTask(input: A2aBuildInput): Record<string, unknown> {
  const timestamp = input.timestamp ?? new Date().toISOString();
  const status: Part = { state: stateOf(input.version, input.status), timestamp };
  const task: Part = { id: input.taskId, contextId: input.contextId, status };
  if (isTerminalStatus(input.status)) {
    task.artifacts = [
      {
        artifactId: input.artifactId ?? 'result',
        parts: buildParts(input.version, input.text, input.data),
      },
    ];
  } else if (input.data !== undefined || input.text !== undefined) {
    status.message = agentMessage(input);
  }
  return input.version === '0.3' ? { kind: 'task', ...task } : { task };
}

/**
 * A status-update push payload, for interim states (working, input-required,
 * auth-required): the data goes in `status.message.parts[]`. 0.3: a bare
 * `{kind: 'status-update', final}` object; 1.0: `{statusUpdate: {...}}` without `final`.
 */
export function buildA2aStatusUpdate(input: A2aBuildInput): Record<string, unknown> {
  const timestamp = input.timestamp ?? new Date().toISOString();
  const status: Part = { state: stateOf(input.version, input.status), timestamp };
  if (input.data !== undefined || input.text !== undefined) status.message = agentMessage(input);
  const update: Part = { taskId: input.taskId, contextId: input.contextId, status };
  if (input.version === '0.3') {
    return { kind: 'status-update', ...update, final: isTerminalStatus(input.status) };
  }
  return { statusUpdate: update };
}
