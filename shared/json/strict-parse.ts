/**
 * Strict JSON parsing for signed bodies (supplement §1 step 14).
 *
 * `JSON.parse` silently keeps the last of two equal keys, so a body could mean one thing to
 * the verifier and another to the handler. This module first runs a hand-written scanner
 * over the text (structure, duplicate keys at any depth, nesting bound, escapes, UTF-8 and
 * surrogate checks), then lets the native `JSON.parse` build the value and judge what the
 * fast scan skips (raw control characters inside strings). The fast scan jumps through
 * strings with `indexOf` and allocates little. Any failure is scanned again in exact mode,
 * character by character, to report the first defect and its position.
 * `JSON.parse` defines `__proto__` as an ordinary own property, so such keys stay data.
 */
import { isUtf8 } from 'node:buffer';
import { SvcError } from '../errors/base.js';

export type JsonParseErrorKind = 'syntax' | 'duplicate_key' | 'too_deep' | 'invalid_utf8';

export class JsonParseError extends SvcError {
  static override readonly code = 'ERR_JSON_PARSE';

  /** What went wrong (the finer code; the class code is `ERR_JSON_PARSE`). */
  declare readonly code: JsonParseErrorKind;
  /** Every key name that occurred twice in one object, each once, in order of discovery. */
  readonly duplicateKeys: string[];
  /** Byte offset (byte input) or UTF-16 index (string input) where the problem was found. */
  readonly position: number;
  constructor(
    kind: JsonParseErrorKind,
    message: string,
    position: number,
    duplicateKeys: string[] = [],
  ) {
    super(message, { code: kind });
    this.position = position;
    this.duplicateKeys = duplicateKeys;
  }
}

export interface StrictParseOptions {
  /** Deepest allowed nesting of arrays and objects; the top-level container is depth 1. */
  maxDepth?: number;
}

export const DEFAULT_MAX_DEPTH = 64;

/** An object's keys are kept in an array while small (indexOf beats hashing), then a Set. */
const SET_THRESHOLD = 16;

// Character codes used by the scanner.
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

/** Internal error carrying a string index; converted to the public error at the boundary. */
class ScanFailure {
  constructor(
    readonly kind: JsonParseErrorKind,
    readonly message: string,
    readonly index: number,
  ) {}
}

function fail(kind: JsonParseErrorKind, message: string, index: number): never {
  throw new ScanFailure(kind, message, index);
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66);
}

function hex4(s: string, i: number): number {
  let v = 0;
  for (let k = 0; k < 4; k++) {
    const c = s.charCodeAt(i + k);
    if (!isHex(c)) fail('syntax', 'invalid \\u escape', i + k);
    v = v * 16 + (c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x57);
  }
  return v;
}

function skipWs(s: string, i: number): number {
  for (;;) {
    const c = s.charCodeAt(i);
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
    else return i;
  }
}

/** Validates the escape at `i` (a backslash); returns the index after it. */
function scanEscape(s: string, i: number): number {
  const e = s.charCodeAt(i + 1);
  if (e === 0x75 /* u */) {
    const cu = hex4(s, i + 2);
    if (cu >= 0xd800 && cu <= 0xdbff) {
      // A high surrogate must be followed by an escaped low one (I-JSON, RFC 7493 §2.1).
      if (s.charCodeAt(i + 6) !== BACKSLASH || s.charCodeAt(i + 7) !== 0x75) {
        fail('invalid_utf8', 'unpaired surrogate escape', i);
      }
      const lo = hex4(s, i + 8);
      if (lo < 0xdc00 || lo > 0xdfff) fail('invalid_utf8', 'unpaired surrogate escape', i);
      return i + 12;
    }
    if (cu >= 0xdc00 && cu <= 0xdfff) fail('invalid_utf8', 'unpaired surrogate escape', i);
    return i + 6;
  }
  // " \ / b f n r t
  if (
    e === QUOTE ||
    e === BACKSLASH ||
    e === 0x2f ||
    e === 0x62 ||
    e === 0x66 ||
    e === 0x6e ||
    e === 0x72 ||
    e === 0x74
  ) {
    return i + 2;
  }
  return fail('syntax', 'invalid escape', i);
}

/** Per-scan state: whether the last string had escapes, and where the next backslash is. */
interface ScanState {
  escaped: boolean;
  /** Index of the next backslash at or after the scan point; -1 none left; -2 unknown. */
  backslash: number;
  /** Exact mode checks every character; fast mode leaves control characters to JSON.parse. */
  exact: boolean;
}

/**
 * Scans a string token whose opening quote is at `start`; returns the index after the
 * closing quote. Fast mode jumps between quotes and backslashes with `indexOf` (native,
 * vectorised) and validates escapes only; raw control characters are left to `JSON.parse`
 * and raw surrogates to the up-front well-formedness check.
 */
function scanString(s: string, start: number, st: ScanState): number {
  st.escaped = false;
  let i = start + 1;
  if (!st.exact) {
    for (;;) {
      const q = s.indexOf('"', i);
      if (q < 0) fail('syntax', 'unterminated string', start);
      if (st.backslash !== -1 && st.backslash < i) st.backslash = s.indexOf('\\', i);
      if (st.backslash === -1 || st.backslash > q) return q + 1;
      st.escaped = true;
      i = scanEscape(s, st.backslash);
    }
  }
  const n = s.length;
  while (i < n) {
    const c = s.charCodeAt(i);
    if (c === QUOTE) return i + 1;
    if (c === BACKSLASH) {
      st.escaped = true;
      i = scanEscape(s, i);
      continue;
    }
    if (c < 0x20) fail('syntax', 'control character in string', i);
    if (c >= 0xd800 && c <= 0xdfff) {
      const lo = s.charCodeAt(i + 1);
      if (c > 0xdbff || !(lo >= 0xdc00 && lo <= 0xdfff)) {
        fail('invalid_utf8', 'unpaired surrogate', i);
      }
      i += 2;
      continue;
    }
    i++;
  }
  return fail('syntax', 'unterminated string', start);
}

function scanDigits(s: string, i: number): number {
  const from = i;
  for (;;) {
    const c = s.charCodeAt(i);
    if (c >= ZERO && c <= NINE) i++;
    else break;
  }
  if (i === from) fail('syntax', 'digit expected', i);
  return i;
}

/** RFC 8259 number grammar; also refuses numbers that overflow to Infinity. */
function scanNumber(s: string, start: number): number {
  let i = start;
  if (s.charCodeAt(i) === MINUS) i++;
  const c = s.charCodeAt(i);
  if (c === ZERO) {
    i++;
    const d = s.charCodeAt(i);
    if (d >= ZERO && d <= NINE) fail('syntax', 'leading zero', i);
  } else {
    i = scanDigits(s, i);
  }
  if (s.charCodeAt(i) === DOT) i = scanDigits(s, i + 1);
  let exp = false;
  const e = s.charCodeAt(i);
  if (e === 0x65 || e === 0x45) {
    exp = true;
    i++;
    const sign = s.charCodeAt(i);
    if (sign === PLUS || sign === MINUS) i++;
    i = scanDigits(s, i);
  }
  if ((exp || i - start > 300) && !Number.isFinite(Number(s.slice(start, i)))) {
    fail('syntax', 'number out of range', start);
  }
  return i;
}

function scanLiteral(s: string, i: number, word: string): number {
  if (!s.startsWith(word, i)) fail('syntax', 'unexpected token', i);
  return i + word.length;
}

/** Decodes a key with escapes; in fast mode it may still hide a raw control character. */
function decodeKey(raw: string, at: number): string {
  try {
    return JSON.parse(raw) as string;
  } catch {
    return fail('syntax', 'control character in string', at);
  }
}

/**
 * Validates `s` as one JSON text. Returns the duplicate names found (empty if none) and
 * the index of the first duplicate key; throws ScanFailure on any other problem.
 */
interface ScanResult {
  duplicates: string[];
  firstAt: number;
}

function scan(s: string, maxDepth: number, exact: boolean): ScanResult {
  const n = s.length;
  // Per open container: null for arrays, the keys seen so far for objects.
  const stack: (string[] | Set<string> | null)[] = [];
  let duplicates: string[] | null = null;
  let firstAt = -1;
  const st: ScanState = { escaped: false, backslash: -2, exact };
  let i = skipWs(s, 0);
  // true: a value is expected at i; false: a value just ended.
  let wantValue = true;
  // When wantValue and the top container is an object, the next token is a key.
  let wantKey = false;

  for (;;) {
    if (wantValue) {
      if (wantKey) {
        if (s.charCodeAt(i) !== QUOTE) fail('syntax', 'object key expected', i);
        const start = i;
        i = scanString(s, i, st);
        const key = st.escaped ? decodeKey(s.slice(start, i), start) : s.slice(start + 1, i - 1);
        const top = stack[stack.length - 1] as string[] | Set<string>;
        let seen: boolean;
        if (Array.isArray(top)) {
          seen = top.includes(key);
          if (!seen) {
            top.push(key);
            if (top.length > SET_THRESHOLD) stack[stack.length - 1] = new Set(top);
          }
        } else {
          seen = top.has(key);
          if (!seen) top.add(key);
        }
        if (seen) {
          if (duplicates === null) {
            duplicates = [];
            firstAt = start;
          }
          if (!duplicates.includes(key)) duplicates.push(key);
        }
        i = skipWs(s, i);
        if (s.charCodeAt(i) !== COLON) fail('syntax', "':' expected", i);
        i = skipWs(s, i + 1);
        wantKey = false;
      }
      const c = s.charCodeAt(i);
      if (c === LBRACE || c === LBRACKET) {
        if (stack.length >= maxDepth) fail('too_deep', `nesting deeper than ${maxDepth}`, i);
        i = skipWs(s, i + 1);
        const close = c === LBRACE ? RBRACE : RBRACKET;
        if (s.charCodeAt(i) === close) {
          i++;
          wantValue = false;
        } else {
          stack.push(c === LBRACE ? [] : null);
          wantKey = c === LBRACE;
          continue;
        }
      } else if (c === QUOTE) {
        i = scanString(s, i, st);
        wantValue = false;
      } else if (c === MINUS || (c >= ZERO && c <= NINE)) {
        i = scanNumber(s, i);
        wantValue = false;
      } else if (c === 0x74) {
        i = scanLiteral(s, i, 'true');
        wantValue = false;
      } else if (c === 0x66) {
        i = scanLiteral(s, i, 'false');
        wantValue = false;
      } else if (c === 0x6e) {
        i = scanLiteral(s, i, 'null');
        wantValue = false;
      } else {
        fail('syntax', i >= n ? 'unexpected end of input' : 'unexpected token', i);
      }
    }
    // A value has ended.
    i = skipWs(s, i);
    if (stack.length === 0) {
      if (i !== n) fail('syntax', 'unexpected data after the JSON value', i);
      return { duplicates: duplicates ?? [], firstAt };
    }
    const top = stack[stack.length - 1];
    const c = s.charCodeAt(i);
    if (c === COMMA) {
      i = skipWs(s, i + 1);
      wantValue = true;
      wantKey = top !== null;
    } else if (c === (top === null ? RBRACKET : RBRACE)) {
      i++;
      stack.pop();
    } else {
      fail('syntax', i >= n ? 'unexpected end of input' : "',' or closing bracket expected", i);
    }
  }
}

/** Offset of the first ill-formed UTF-8 sequence (RFC 3629 table); error path only. */
function firstInvalidUtf8(b: Uint8Array): number {
  const n = b.length;
  let i = 0;
  while (i < n) {
    const c = b[i] as number;
    if (c < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) need = 1;
    else if (c >= 0xe0 && c <= 0xef) {
      need = 2;
      if (c === 0xe0) lo = 0xa0;
      if (c === 0xed) hi = 0x9f; // no encoded surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      need = 3;
      if (c === 0xf0) lo = 0x90;
      if (c === 0xf4) hi = 0x8f;
    } else return i;
    for (let k = 1; k <= need; k++) {
      const d = b[i + k];
      if (d === undefined) return i;
      if (k === 1 ? d < lo || d > hi : d < 0x80 || d > 0xbf) return i;
    }
    i += need + 1;
  }
  return n;
}

/**
 * Parses one JSON text strictly. Byte input must be UTF-8 without a BOM.
 * Throws JsonParseError (never anything else) on any defect; duplicates are reported
 * only when the rest of the text is well-formed, all of them at once.
 */
export function parseStrictJson(
  input: Uint8Array | string,
  opts: StrictParseOptions = {},
): unknown {
  const maxDepth = opts.maxDepth ?? DEFAULT_MAX_DEPTH;
  let text: string;
  let bytes: Uint8Array | null = null;
  if (typeof input === 'string') {
    text = input;
  } else {
    bytes = input;
    if (!isUtf8(bytes)) {
      throw new JsonParseError('invalid_utf8', 'body is not valid UTF-8', firstInvalidUtf8(bytes));
    }
    text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  }
  // Raw lone surrogates can only come from string input (isUtf8 vetted the bytes).
  if (bytes === null && !isWellFormed(text)) exactScan(text, maxDepth, bytes);
  let found: ScanResult;
  try {
    found = scan(text, maxDepth, false);
  } catch (err) {
    if (!(err instanceof ScanFailure)) throw err;
    exactScan(text, maxDepth, bytes);
    throw toParseError(err, text, bytes); // not reached: the exact scan fails as early
  }
  if (found.duplicates.length > 0) {
    found = exactScan(text, maxDepth, bytes);
    throw new JsonParseError(
      'duplicate_key',
      `duplicate object key(s): ${sanitizeForLog(found.duplicates).join(', ')}`,
      positionOf(found.firstAt, text, bytes),
      found.duplicates,
    );
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    // The fast scan leaves raw control characters in strings to JSON.parse.
    if (!(err instanceof SyntaxError)) throw err;
    exactScan(text, maxDepth, bytes);
    throw new JsonParseError('syntax', 'invalid JSON', 0);
  }
}

// (Helpers are module-level on purpose: closures created per call cost a property
// definition each under the tsx loader the package runs with.)

/** Byte offset (byte input) or UTF-16 index (string input) of a string index. */
function positionOf(index: number, text: string, bytes: Uint8Array | null): number {
  return bytes === null ? index : Buffer.byteLength(text.slice(0, index), 'utf8');
}

function toParseError(f: ScanFailure, text: string, bytes: Uint8Array | null): JsonParseError {
  const at = positionOf(f.index, text, bytes);
  return new JsonParseError(f.kind, `${f.message} at ${at}`, at);
}

/**
 * The exact scan decides every error: the first defect in text order wins, and a syntax
 * error anywhere wins over duplicates (such a text has no meaning at all).
 */
function exactScan(text: string, maxDepth: number, bytes: Uint8Array | null): ScanResult {
  try {
    return scan(text, maxDepth, true);
  } catch (err) {
    if (err instanceof ScanFailure) throw toParseError(err, text, bytes);
    throw err;
  }
}

/** `String.prototype.isWellFormed` is native in Node 20 (ES2024) but not in our ES2023 lib. */
function isWellFormed(s: string): boolean {
  return (s as unknown as { isWellFormed(): boolean }).isWellFormed();
}

// ---------------------------------------------------------------------------------------
// Log sanitising (supplement §1 step 14b)

/** Code points a log line must never carry: C0, DEL, C1, bidi controls, separators, ZW*, BOM. */
function isNonPrintable(cp: number): boolean {
  return (
    cp <= 0x1f ||
    (cp >= 0x7f && cp <= 0x9f) ||
    cp === 0x200e ||
    cp === 0x200f ||
    (cp >= 0x202a && cp <= 0x202e) ||
    (cp >= 0x2066 && cp <= 0x2069) ||
    cp === 0x2028 ||
    cp === 0x2029 ||
    (cp >= 0x200b && cp <= 0x200d) ||
    cp === 0xfeff ||
    // A lone surrogate has no UTF-8 form; treat it as unprintable too.
    (cp >= 0xd800 && cp <= 0xdfff)
  );
}

const MAX_NAME_BYTES = 32;
const MAX_NAMES = 4;

function utf8Length(cp: number): number {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/**
 * Makes duplicate key names safe to log: (a) cut at the first non-printable and append
 * `<sanitized:N>`, N = byte length of the kept prefix; (b) keep at most 32 UTF-8 bytes,
 * ending on a code point boundary; (c) at most 4 names, then `<...N more>`.
 * When both apply, the name is cut first (N = the cut prefix's byte length), then the
 * prefix is truncated; the marker itself is not counted in the 32 bytes.
 */
export function sanitizeForLog(names: string[]): string[] {
  const out: string[] = [];
  for (const name of names.slice(0, MAX_NAMES)) {
    // (a) the prefix before the first non-printable, and its UTF-8 length
    let prefixEnd = name.length;
    let prefixBytes = 0;
    for (let i = 0; i < name.length;) {
      const cp = name.codePointAt(i) as number;
      if (isNonPrintable(cp)) {
        prefixEnd = i;
        break;
      }
      prefixBytes += utf8Length(cp);
      i += cp > 0xffff ? 2 : 1;
    }
    // (b) at most 32 bytes of that prefix, never splitting a code point
    let kept = '';
    let bytes = 0;
    for (const ch of name.slice(0, prefixEnd)) {
      const len = utf8Length(ch.codePointAt(0) as number);
      if (bytes + len > MAX_NAME_BYTES) break;
      kept += ch;
      bytes += len;
    }
    out.push(prefixEnd < name.length ? `${kept}<sanitized:${prefixBytes}>` : kept);
  }
  if (names.length > MAX_NAMES) out.push(`<...${names.length - MAX_NAMES} more>`);
  return out;
}
