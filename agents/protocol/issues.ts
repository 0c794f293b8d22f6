/**
 * Validation failures in the protocol's own words: the published `core/error.json`
 * `issues[]` item (`pointer` RFC 6901, `message`, `keyword` as JSON Schema validators name
 * it).
 */
import type { ErrorObject } from 'ajv';

export interface ValidationIssue {
  /** RFC 6901 pointer into the request or response (`/packages/0/budget`). */
  pointer: string;
  message: string;
  /** The schema keyword that rejected it (`required`, `type`, `enum`, ...). */
  keyword: string;
}

function escapePointerToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * Ajv's errors as issues: a missing member points at the member itself, and combinator
 * summaries (`oneOf`, `anyOf`, `if`) that only restate their branches' errors are
 * dropped when a more specific error names the same place. Duplicates collapse.
 */
export function issuesFromAjv(
  errors: readonly ErrorObject[] | null | undefined,
): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  const seen = new Set<string>();
  const list = errors ?? [];
  for (const e of list) {
    let pointer = e.instancePath;
    if (e.keyword === 'required') {
      pointer += `/${escapePointerToken(String((e.params as { missingProperty: string }).missingProperty))}`;
    } else if (e.keyword === 'additionalProperties') {
      pointer += `/${escapePointerToken(String((e.params as { additionalProperty: string }).additionalProperty))}`;
    }
    const combinator = e.keyword === 'oneOf' || e.keyword === 'anyOf' || e.keyword === 'if';
    if (
      combinator &&
      list.some(
        (o) =>
          o !== e &&
          !['oneOf', 'anyOf', 'if'].includes(o.keyword) &&
          o.instancePath.startsWith(e.instancePath),
      )
    ) {
      continue;
    }
    const key = `${pointer} ${e.keyword} ${e.message ?? ''}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ pointer, keyword: e.keyword, message: e.message ?? 'is not valid' });
  }
  return out;
}
