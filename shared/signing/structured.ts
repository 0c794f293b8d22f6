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
// of the time; anything else goes through structured-headers.
const SF_STRING = '"[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]*"';
const SF_KEY = '[a-z*][a-z0-9_.*-]*';
const FAST_BYTES = new RegExp(`^(${SF_KEY})=:([A-Za-z0-9+/=_-]*):$`);
const FAST_INNER_LIST = new RegExp(
  `^(${SF_KEY})=\\(((?:${SF_STRING}(?: ${SF_STRING})*)?)\\)((?:;${SF_KEY}=(?:0|-?[1-9]\\d{0,14}|${SF_STRING}))*)$`,
);
const FAST_PARAM = new RegExp(`;(${SF_KEY})=(0|-?[1-9]\\d{0,14}|${SF_STRING})`, 'g');
const FAST_ITEM = new RegExp(SF_STRING, 'g');

function fastParse(input: string, profile: BinaryProfile): ParsedField | null {
  let m = FAST_BYTES.exec(input);
  if (m) {
    let bytes: Buffer;
    try {
      bytes = profile === 'webhook-v1' ? decodeWebhookBinary(m[2]!) : decodeRfc8941Binary(m[2]!);
    } catch (err) {
      throw new StructuredFieldError((err as Error).message);
    }
    const ab = bytes.buffer.slice(
      bytes.byteOffset,
      bytes.byteOffset + bytes.byteLength,
    ) as ArrayBuffer;
    return {
      dictionary: new Map([[m[1]!, [ab, new Map()]]]),
      members: [{ key: m[1]!, paramKeys: [] }],
    };
  }
  m = FAST_INNER_LIST.exec(input);
  if (!m) return null;
  const items: Item[] = (m[2]!.match(FAST_ITEM) ?? []).map((q) => [q.slice(1, -1), new Map()]);
  const params = new Map<string, BareItem>();
  const paramKeys: string[] = [];
  for (const p of m[3]!.matchAll(FAST_PARAM)) {
    const raw = p[2]!;
    paramKeys.push(p[1]!);
    params.set(p[1]!, raw.startsWith('"') ? raw.slice(1, -1) : Number(raw));
  }
  return {
    dictionary: new Map([[m[1]!, [items, params]]]),
    members: [
      {
        key: m[1]!,
        paramKeys,
        // With a repeated parameter the serialised form (last one wins) differs from the text.
        ...(new Set(paramKeys).size === paramKeys.length && {
          canonicalText: input.slice(m[1]!.length + 1),
        }),
      },
    ],
  };
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
