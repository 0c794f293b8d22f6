/**
 * RFC 8785 (JCS) canonical JSON and the payload fingerprint built on it (supplement §5.2).
 *
 * The `canonicalize` package gets the two hard parts right (checked against RFC 8785's own
 * examples in test/shared/json/canonical.test.ts): numbers through the ECMAScript
 * Number-to-String algorithm (`1e+21`, `1e-7`, `-0` -> `0`) and member order by UTF-16 code
 * units. It is lax about input that is not JSON data, so values are vetted here first:
 * - a function member is written as `"k":undefined` (invalid JSON) and a top-level
 *   `undefined` returns `undefined` instead of a string;
 * - lone surrogates are escaped (`"\ud800"`), where RFC 8785 §3.2.2.2 requires I-JSON
 *   (RFC 7493) input, which forbids them: we refuse them;
 * - BigInt throws a bare TypeError, NaN/Infinity a bare Error, cycles and deep nesting
 *   overflow the stack;
 * - class instances go through `toJSON` or `Object.keys` (a Map becomes `{}`).
 * All of these raise CanonicalJsonError with the path of the offending value.
 */
import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';

// The package is CommonJS (`module.exports = fn`); its typings describe an ES default export.
const canonicalize = canonicalizeModule as unknown as (value: unknown) => string | undefined;

/** `String.prototype.isWellFormed` (ES2024, native in Node 20) is not in our ES2023 lib. */
function isWellFormed(s: string): boolean {
  return (s as unknown as { isWellFormed(): boolean }).isWellFormed();
}

export class CanonicalJsonError extends Error {
  /** JSON-pointer-like path of the offending value, e.g. `/result/items/0`. */
  readonly path: string;
  constructor(message: string, path: string) {
    super(`${message} at ${path || '/'}`);
    this.name = 'CanonicalJsonError';
    this.path = path;
  }
}

/** Deeper values are refused rather than risking the serializer's recursion. */
export const CANONICAL_MAX_DEPTH = 512;

function vet(value: unknown, path: string, depth: number, open: Set<object>): void {
  switch (typeof value) {
    case 'string':
      if (!isWellFormed(value)) throw new CanonicalJsonError('lone surrogate in string', path);
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new CanonicalJsonError(`${value} is not JSON`, path);
      return;
    case 'boolean':
      return;
    case 'object':
      break;
    default:
      throw new CanonicalJsonError(`${typeof value} is not JSON`, path);
  }
  if (value === null) return;
  if (depth >= CANONICAL_MAX_DEPTH) throw new CanonicalJsonError('nesting too deep', path);
  if (open.has(value)) throw new CanonicalJsonError('cycle', path);
  open.add(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      // JSON.stringify semantics: an undefined array slot is written as null.
      if (item !== undefined) vet(item, `${path}/${i}`, depth + 1, open);
    }
  } else {
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      throw new CanonicalJsonError('not a plain object', path);
    }
    for (const key of Object.keys(value)) {
      if (!isWellFormed(key)) throw new CanonicalJsonError('lone surrogate in key', path);
      const member: unknown = (value as Record<string, unknown>)[key];
      // JSON.stringify semantics: an undefined member is omitted.
      if (member !== undefined) vet(member, `${path}/${key}`, depth + 1, open);
    }
  }
  open.delete(value);
}

/** RFC 8785 canonical form of a JSON value; throws CanonicalJsonError on non-JSON input. */
export function canonicalJson(value: unknown): string {
  vet(value, '', 0, new Set());
  return canonicalize(value) as string;
}

/** Lower-case hex SHA-256 of the UTF-8 bytes of the canonical form. */
export function fingerprint(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value), 'utf8').digest('hex');
}
