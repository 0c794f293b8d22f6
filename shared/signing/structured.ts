/**
 * RFC 8941 dictionary parsing for the signature headers, with the two things the
 * structured-headers library cannot do on its own here:
 * - the webhook-v1 binary profile (base64url inside `:...:`), by rewriting each byte
 *   sequence to the RFC 8941 form before parsing;
 * - duplicate detection: RFC 8941 keeps the last of duplicate dictionary keys and
 *   parameters, while the verifier must reject a duplicate label, a digest algorithm
 *   listed twice, or a second `tag` (supplement §1 step 1 and 2).
 */
import { parseDictionary, type Dictionary } from 'structured-headers';
import { decodeWebhookBinary, type BinaryProfile } from './base64.js';

export class StructuredFieldError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StructuredFieldError';
  }
}

export interface MemberShape {
  key: string;
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

/**
 * Parses a dictionary field under a binary profile. Throws StructuredFieldError on any
 * syntax error or a duplicate member key.
 */
export function parseSignatureDictionary(input: string, profile: BinaryProfile): ParsedField {
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
