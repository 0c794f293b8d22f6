/**
 * Pure helpers of ordering and convergence (supplement §5.3) that every store
 * implementation shares: which statuses are terminal, which timestamps order, and the
 * channel-neutral comparison record of a terminal result.
 */
import { canonicalJson, fingerprint } from '../../shared/json/canonical.js';

/** Terminal task statuses; `unknown` neither settles nor reopens a task. */
export const TERMINAL_STATUSES: ReadonlySet<string> = new Set([
  'completed',
  'failed',
  'canceled',
  'rejected',
]);

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})$/;

/** The timestamp when it is one PostgreSQL orders exactly, else null (unordered). */
export function orderableTimestamp(at: string | null): string | null {
  if (at === null || !RFC3339.test(at) || Number.isNaN(Date.parse(at))) return null;
  return at;
}

/**
 * The terminal comparison record JCS({task_type, status, value}), and the fingerprint of
 * the result itself, SHA-256 of JCS({status, value}): channel-neutral, because an A2A
 * payload carries no task type. A task-type mismatch, where both name one, is a conflict
 * decided in SQL from the records.
 */
export function terminalRecord(input: {
  taskType: string | null;
  status: string;
  value: unknown;
}): { record: string; fingerprint: string } {
  const value = input.value === undefined ? null : input.value;
  const record = canonicalJson({ task_type: input.taskType, status: input.status, value });
  return { record, fingerprint: fingerprint({ status: input.status, value }) };
}
