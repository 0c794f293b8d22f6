/**
 * RFC 8785 (JCS) canonical JSON and the payload fingerprint built on it (supplement §5.2).
 *
 * We checked the `canonicalize` package against RFC 8785's own examples
 * (test/shared/json/canonical.test.ts). It gets the two hard parts right: numbers go through
 * the ECMAScript Number-to-String algorithm (`1e+21`, `1e-7`, `-0` -> `0`), and members are
 * ordered by UTF-16 code units. It is lax about input that is not JSON data:
 * - it writes a function member as `"k":undefined` (invalid JSON), and a top-level
 *   `undefined` comes back as `undefined`, not a string;
 * - it escapes lone surrogates (`"\ud800"`), but RFC 8785 §3.2.2.2 requires I-JSON
 *   (RFC 7493) input, which forbids them;
 * - BigInt throws a bare TypeError, NaN/Infinity a bare Error, and cycles or deep nesting
 *   overflow the stack;
 * - class instances go through `toJSON` or `Object.keys`, so a Map becomes `{}`.
 * It is also about 2x slower than this module on a 1 KB envelope (`npm run bench -- json`),
 * and the fingerprint sits on the receiver's hot path. So this module does the serialising
 * itself, using the same primitives: `JSON.stringify` for strings and numbers, and the
 * default (code unit) sort for keys. The package stays in the tests as an oracle: a
 * property test checks that both give the same bytes for any JSON value.
 * Anything that is not JSON data raises CanonicalJsonError with the path of the
 * offending value.
 */
import { createHash } from 'node:crypto';
import { SvcError } from '../errors/base.js';

export class CanonicalJsonError extends SvcError {
  static override readonly code = 'ERR_CANONICAL_JSON';

  /** JSON-pointer-like path of the offending value, e.g. `/result/items/0`. */
  readonly path: string;
  constructor(message: string, path: string) {
    super(`${message} at ${path || '/'}`);
    this.name = 'CanonicalJsonError';
    this.path = path;
  }
}

/** Deeper values are refused (this also stops cycles) instead of overflowing the stack. */
export const CANONICAL_MAX_DEPTH = 512;

/** `String.prototype.isWellFormed` is native in Node 20 (ES2024) but not in our ES2023 lib. */
function isWellFormed(s: string): boolean {
  return (s as unknown as { isWellFormed(): boolean }).isWellFormed();
}

type Path = (string | number)[];

function fail(message: string, path: Path): never {
  throw new CanonicalJsonError(message, path.length ? `/${path.join('/')}` : '');
}

/** Keys JS objects enumerate in numeric order, ahead of insertion order (over-approximated). */
const ARRAY_INDEX_KEY = /^(?:0|[1-9][0-9]*)$/;

/** Thrown inside the fast path when an object has index-like keys. */
const NEEDS_SLOW_PATH = Symbol('needs slow path');

function vetScalar(v: unknown, path: Path): void {
  switch (typeof v) {
    case 'string':
      if (!isWellFormed(v)) fail('lone surrogate in string', path);
      return;
    case 'number':
      if (!Number.isFinite(v)) fail(`${v} is not JSON`, path);
      return;
    case 'boolean':
      return;
    default:
      fail(`${typeof v} is not JSON`, path);
  }
}

function vetObject(v: object, depth: number, path: Path): void {
  if (depth >= CANONICAL_MAX_DEPTH) fail('nesting too deep (or a cycle)', path);
  if (!Array.isArray(v)) {
    const proto: unknown = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) fail('not a plain object', path);
  }
}

/**
 * Fast path: copies the value with every object's members in canonical order, so the
 * native `JSON.stringify` writes the canonical form. Copies are ordinary objects (fast
 * for the native writer); a `__proto__` member is defined as data, never assigned.
 * Objects with index-like keys can't keep a chosen member order; they abort to the slow
 * path.
 */
function sortedCopy(v: unknown, depth: number, path: Path): unknown {
  if (v === null) return null;
  if (typeof v !== 'object') {
    vetScalar(v, path);
    return v;
  }
  vetObject(v, depth, path);
  if (Array.isArray(v)) {
    const out: unknown[] = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) {
      const item: unknown = v[i];
      path.push(i);
      // JSON.stringify semantics: an undefined array slot is written as null.
      out[i] = item === undefined ? null : sortedCopy(item, depth + 1, path);
      path.pop();
    }
    return out;
  }
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(v).sort()) {
    if (ARRAY_INDEX_KEY.test(key)) throw NEEDS_SLOW_PATH;
    const member: unknown = (v as Record<string, unknown>)[key];
    // JSON.stringify semantics: an undefined member is omitted.
    if (member === undefined) continue;
    path.push(key);
    if (!isWellFormed(key)) fail('lone surrogate in key', path);
    const copy = sortedCopy(member, depth + 1, path);
    // Plain assignment to `__proto__` would set the prototype; define it as data instead.
    if (key === '__proto__') {
      Object.defineProperty(out, key, {
        value: copy,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else {
      out[key] = copy;
    }
    path.pop();
  }
  return out;
}

/** Slow path: writes the canonical text directly (any keys). */
function write(v: unknown, depth: number, path: Path): string {
  if (v === null) return 'null';
  if (typeof v !== 'object') {
    vetScalar(v, path);
    return JSON.stringify(v);
  }
  vetObject(v, depth, path);
  if (Array.isArray(v)) {
    let out = '[';
    for (let i = 0; i < v.length; i++) {
      const item: unknown = v[i];
      if (i > 0) out += ',';
      path.push(i);
      out += item === undefined ? 'null' : write(item, depth + 1, path);
      path.pop();
    }
    return `${out}]`;
  }
  let out = '{';
  for (const key of Object.keys(v).sort()) {
    const member: unknown = (v as Record<string, unknown>)[key];
    if (member === undefined) continue;
    path.push(key);
    if (!isWellFormed(key)) fail('lone surrogate in key', path);
    if (out.length > 1) out += ',';
    out += `${JSON.stringify(key)}:${write(member, depth + 1, path)}`;
    path.pop();
  }
  return `${out}}`;
}

/**
 * Whether the value is JSON data whose objects already list their members in canonical
 * order (no index-like keys, no undefined members): then `JSON.stringify` writes the
 * canonical form as is, with no copy. Bodies our own sender emits are in this shape, so
 * the receiver's fingerprint takes this path. Any doubt returns false (the copying path
 * then reports errors with their path).
 */
function isCanonicalShape(v: unknown, depth: number): boolean {
  switch (typeof v) {
    case 'string':
      return isWellFormed(v);
    case 'number':
      return Number.isFinite(v);
    case 'boolean':
      return true;
    case 'object':
      break;
    default:
      return false;
  }
  if (v === null) return true;
  if (depth >= CANONICAL_MAX_DEPTH) return false;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      if (!isCanonicalShape(v[i], depth + 1)) return false;
    }
    return true;
  }
  if (Object.getPrototypeOf(v) !== Object.prototype) return false;
  let previous: string | null = null;
  for (const key in v) {
    if (!Object.hasOwn(v, key)) return false;
    if (previous !== null && !(previous < key)) return false;
    if (ARRAY_INDEX_KEY.test(key) || !isWellFormed(key)) return false;
    const member: unknown = (v as Record<string, unknown>)[key];
    if (member === undefined || !isCanonicalShape(member, depth + 1)) return false;
    previous = key;
  }
  return true;
}

/** RFC 8785 canonical form of a JSON value; throws CanonicalJsonError on non-JSON input. */
export function canonicalJson(value: unknown): string {
  if (isCanonicalShape(value, 0)) return JSON.stringify(value);
  try {
    return JSON.stringify(sortedCopy(value, 0, []));
  } catch (err) {
    if (err !== NEEDS_SLOW_PATH) throw err;
    return write(value, 0, []);
  }
}

/** Lower-case hex SHA-256 of the UTF-8 bytes of the canonical form. */
export function fingerprint(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value), 'utf8').digest('hex');
}
