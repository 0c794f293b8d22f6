/**
 * RFC 8941 dictionary parsing for the signature headers, with the two things the
 * structured-headers library cannot do on its own here:
 * - the webhook-v1 binary profile (base64url inside `:...:`), by rewriting each byte
 *   sequence to the RFC 8941 form before parsing;
 * - duplicate detection: RFC 8941 keeps the last of duplicate dictionary keys and
 *   parameters, while the verifier must reject a duplicate label, a digest algorithm
 *   listed twice, or a second `tag` (supplement §1 step 1 and 2).
 */
import { parseDictionary, type BareItem, type Dictionary, type Item } from 'structured-headers';
import { decodeRfc8941Binary, decodeWebhookBinary, type BinaryProfile } from './base64.js';
import { SvcError } from '../errors/base.js';

export class StructuredFieldError extends SvcError {
  static override readonly code = 'ERR_STRUCTURED_FIELD';

  constructor(message: string) {
    super(message);
    this.name = 'StructuredFieldError';
  }
}

export interface MemberShape {
  key: string;
  /** The member's value exactly as received, when it was already in canonical form. */
  canonicalText?: string;
  /** Keys of the member's own parameters (after an inner list or item), in order, duplicates kept. */
  paramKeys: string[];
}

/**
 * One pass over the raw field: top-level member keys and their parameter keys, and the text
 * with webhook-v1 byte sequences rewritten to RFC 8941 base64.
 */
function scan(input: string, profile: BinaryProfile): { text: string; members: MemberShape[] } {
  const members: MemberShape[] = [];
  let out = '';
  let depth = 0;
  let atMemberStart = true;
  let current: MemberShape | null = null;
  let i = 0;
  const n = input.length;
  while (i < n) {
    const c = input[i]!;
    if (c === '"') {
      // Quoted string: copy through to the closing quote, honouring backslash escapes.
      let j = i + 1;
      while (j < n && input[j] !== '"') j += input[j] === '\\' ? 2 : 1;
      if (j >= n) throw new StructuredFieldError('unterminated string');
      out += input.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (c === ':') {
      const end = input.indexOf(':', i + 1);
      if (end < 0) throw new StructuredFieldError('unterminated byte sequence');
      const token = input.slice(i + 1, end);
      if (profile === 'webhook-v1') {
        let bytes: Buffer;
        try {
          bytes = decodeWebhookBinary(token);
        } catch (err) {
          throw new StructuredFieldError((err as Error).message);
        }
        out += `:${bytes.toString('base64')}:`;
      } else {
        out += input.slice(i, end + 1);
      }
      i = end + 1;
      continue;
    }
    if (depth === 0 && atMemberStart && c !== ' ' && c !== '\t') {
      const m = /^[a-z*][a-z0-9_.*-]*/.exec(input.slice(i, i + 64));
      if (!m) throw new StructuredFieldError(`invalid dictionary key at offset ${i}`);
      current = { key: m[0], paramKeys: [] };
      members.push(current);
      atMemberStart = false;
      out += m[0];
      i += m[0].length;
      continue;
    }
    if (c === '(') depth++;
    else if (c === ')') {
      depth--;
      if (depth < 0) throw new StructuredFieldError('unbalanced parenthesis');
    } else if (c === ',' && depth === 0) {
      atMemberStart = true;
    } else if (c === ';' && depth === 0 && current) {
      const m = /^;\s*([a-z*][a-z0-9_.*-]*)/.exec(input.slice(i, i + 72));
      if (m) current.paramKeys.push(m[1]!);
    }
    out += c;
    i++;
  }
  if (depth !== 0) throw new StructuredFieldError('unbalanced parenthesis');
  return { text: out, members };
}

export interface ParsedField {
  dictionary: Dictionary;
  members: MemberShape[];
}

// Fast paths for the exact shapes signers emit: one member, canonical serialisation. They
// give the same result as the full parser (a property test holds them to it) in a fraction
// of the time; anything else goes through structured-headers. Hand-written scanners rather
// than regular expressions: this runs three times per verified request and a CPU profile put
// the regex version (matchAll, match, spread) at several µs per request. Each accepts
// exactly the language of the expression documented above it and answers null otherwise.

/** `[a-z*]` */
function isKeyStart(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || c === 0x2a;
}

/** `[a-z0-9_.*-]` */
function isKeyChar(c: number): boolean {
  return isKeyStart(c) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c === 0x2e || c === 0x2d;
}

/** `[a-z*][a-z0-9_.*-]*` at i: the index after it, or -1. */
function scanKey(s: string, i: number): number {
  if (i >= s.length || !isKeyStart(s.charCodeAt(i))) return -1;
  i++;
  while (i < s.length && isKeyChar(s.charCodeAt(i))) i++;
  return i;
}

/** `"[\x20\x21\x23-\x5b\x5d-\x7e]*"` at i (no escapes): the index after it, or -1. */
function scanString(s: string, i: number): number {
  if (s.charCodeAt(i) !== 0x22) return -1;
  for (i++; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) return i + 1;
    if (c < 0x20 || c > 0x7e || c === 0x5c) return -1;
  }
  return -1;
}

/** `0|-?[1-9]\d{0,14}` at i: the index after it, or -1 (the caller checks what follows). */
function scanInteger(s: string, i: number): number {
  if (s.charCodeAt(i) === 0x30) return i + 1;
  const start = s.charCodeAt(i) === 0x2d ? i + 1 : i;
  const first = s.charCodeAt(start);
  if (!(first >= 0x31 && first <= 0x39)) return -1;
  let j = start + 1;
  while (j < s.length && s.charCodeAt(j) >= 0x30 && s.charCodeAt(j) <= 0x39) j++;
  return j - start > 15 ? -1 : j;
}

const BYTES_ALPHABET = /^[A-Za-z0-9+/=_-]*$/;

/**
 * A field of exactly one byte-sequence member, `^(key)=:([A-Za-z0-9+/=_-]*):$`, as signers emit
 * Signature and Content-Digest: its key and bytes, without building a dictionary or copying the
 * bytes; null for any other shape (parse those with parseSignatureDictionary, which agrees).
 * Throws StructuredFieldError when the token does not decode under the profile.
 */
export function parseBytesMember(
  input: string,
  profile: BinaryProfile,
): { key: string; bytes: Buffer } | null {
  const keyEnd = scanKey(input, 0);
  const last = input.length - 1;
  if (keyEnd < 0 || last <= keyEnd + 1) return null;
  if (input.charCodeAt(keyEnd) !== 0x3d || input.charCodeAt(keyEnd + 1) !== 0x3a) return null;
  if (input.charCodeAt(last) !== 0x3a) return null;
  const token = input.slice(keyEnd + 2, last);
  if (!BYTES_ALPHABET.test(token)) return null;
  try {
    const bytes =
      profile === 'webhook-v1' ? decodeWebhookBinary(token) : decodeRfc8941Binary(token);
    return { key: input.slice(0, keyEnd), bytes };
  } catch (err) {
    throw new StructuredFieldError((err as Error).message);
  }
}

/** One inner-list member as signers emit Signature-Input, without the dictionary around it. */
export interface InnerListMember {
  key: string;
  /** The inner list's items: strings, none with parameters. */
  items: string[];
  params: Map<string, BareItem>;
  /** Parameter keys in order, duplicates kept. */
  paramKeys: string[];
  /** The member's value as received, when canonical (no parameter repeated). */
  canonicalText?: string;
}

/**
 * A field of exactly one inner-list member,
 * `^(key)=\(((?:STRING(?: STRING)*)?)\)((?:;key=(?:INTEGER|STRING))*)$` with STRING and INTEGER
 * as above; null for any other shape (parse those with parseSignatureDictionary, which agrees).
 * The verifier reads Signature-Input through it: no per-item tuples and parameter maps.
 */
export function parseInnerListMember(input: string): InnerListMember | null {
  const keyEnd = scanKey(input, 0);
  if (keyEnd < 0 || input.charCodeAt(keyEnd) !== 0x3d || input.charCodeAt(keyEnd + 1) !== 0x28) {
    return null;
  }
  const n = input.length;
  const items: string[] = [];
  let i = keyEnd + 2;
  if (input.charCodeAt(i) !== 0x29) {
    for (;;) {
      const end = scanString(input, i);
      if (end < 0) return null;
      items.push(input.slice(i + 1, end - 1));
      i = end;
      if (input.charCodeAt(i) !== 0x20) break;
      i++;
    }
    if (input.charCodeAt(i) !== 0x29) return null;
  }
  i++;
  const params = new Map<string, BareItem>();
  const paramKeys: string[] = [];
  while (i < n) {
    if (input.charCodeAt(i) !== 0x3b) return null;
    const kEnd = scanKey(input, i + 1);
    if (kEnd < 0 || input.charCodeAt(kEnd) !== 0x3d) return null;
    const name = input.slice(i + 1, kEnd);
    const quoted = input.charCodeAt(kEnd + 1) === 0x22;
    const vEnd = quoted ? scanString(input, kEnd + 1) : scanInteger(input, kEnd + 1);
    if (vEnd < 0 || (vEnd < n && input.charCodeAt(vEnd) !== 0x3b)) return null;
    const raw = input.slice(kEnd + 1, vEnd);
    paramKeys.push(name);
    params.set(name, quoted ? raw.slice(1, -1) : Number(raw));
    i = vEnd;
  }
  const member: InnerListMember = { key: input.slice(0, keyEnd), items, params, paramKeys };
  // With a repeated parameter the serialised form (last one wins) differs from the text.
  if (params.size === paramKeys.length) member.canonicalText = input.slice(keyEnd + 1);
  return member;
}

function fastParse(input: string, profile: BinaryProfile): ParsedField | null {
  const keyEnd = scanKey(input, 0);
  if (keyEnd < 0 || input.charCodeAt(keyEnd) !== 0x3d) return null;
  const open = input.charCodeAt(keyEnd + 1);
  if (open === 0x28) {
    const m = parseInnerListMember(input);
    if (!m) return null;
    const list: Item[] = m.items.map((item) => [item, new Map()]);
    const shape: MemberShape = { key: m.key, paramKeys: m.paramKeys };
    if (m.canonicalText !== undefined) shape.canonicalText = m.canonicalText;
    return { dictionary: new Map([[m.key, [list, m.params]]]), members: [shape] };
  }
  if (open !== 0x3a) return null;
  const m = parseBytesMember(input, profile);
  if (!m) return null;
  const { key, bytes } = m;
  const ab = bytes.buffer.slice(
    bytes.byteOffset,
    bytes.byteOffset + bytes.byteLength,
  ) as ArrayBuffer;
  return { dictionary: new Map([[key, [ab, new Map()]]]), members: [{ key, paramKeys: [] }] };
}

/**
 * Parses a dictionary field under a binary profile. Throws StructuredFieldError on any
 * syntax error or a duplicate member key.
 */
export function parseSignatureDictionary(input: string, profile: BinaryProfile): ParsedField {
  const fast = fastParse(input, profile);
  if (fast) return fast;
  return parseSignatureDictionarySlow(input, profile);
}

/** The general path through structured-headers (exported so tests can compare the two). */
export function parseSignatureDictionarySlow(input: string, profile: BinaryProfile): ParsedField {
  const { text, members } = scan(input, profile);
  const seen = new Set<string>();
  for (const m of members) {
    if (seen.has(m.key)) throw new StructuredFieldError(`duplicate member "${m.key}"`);
    seen.add(m.key);
  }
  let dictionary: Dictionary;
  try {
    dictionary = parseDictionary(text);
  } catch (err) {
    throw new StructuredFieldError((err as Error).message);
  }
  return { dictionary, members };
}

/** Joins repeated field lines the way HTTP combines them. */
export function fieldValue(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(', ') : value;
}
