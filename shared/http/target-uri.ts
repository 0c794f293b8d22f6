/**
 * `@target-uri` and `@authority` canonicalisation (supplement §3): the eight rules that signer
 * and verifier both apply before comparing bytes.
 *
 * Written as a plain RFC 3986 splitter on purpose: WHATWG `new URL()` re-encodes queries,
 * resolves `\` as `/`, reads `0x7f.1` as an IPv4 address and more, none of which the rules
 * allow. IDN goes through `tr46` (UTS-46), because node's `url.domainToASCII` implements the
 * WHATWG profile of UTS-46: CheckHyphens, CheckBidi and UseSTD3ASCIIRules are off there, so
 * `-a.example`, `a_b.example` and mixed-direction labels would pass.
 *
 * Choices where the supplement leaves room (each tested):
 * - Raw non-ASCII. The rules say receivers reject hosts the producer did not ToASCII, while the
 *   case table maps `bücher.example` to its A-label [conflict]. Both are served by one option:
 *   `rejectRawNonAscii: true` on the verifier path (the bytes came off the wire), false (the
 *   default) on the signer path, where the URL comes from configuration and is converted the
 *   way RFC 3987 maps an IRI to a URI: ToASCII for the host, UTF-8 percent-encoding for path
 *   and query.
 * - Percent-encoding is normalised in the path only; the query is byte-preserved (the safe
 *   reading of the step 6 / step 7 [conflict]). Unreserved escapes are decoded before
 *   remove_dot_segments (RFC 3986 §6.2.2 order), so `%2E%2E` is a dot segment and the result is
 *   a fixed point: canonical(canonical(x)) === canonical(x).
 * - Rejected beyond the table: schemes other than http/https, a scheme without `//`, ASCII
 *   controls and spaces anywhere, the characters of PATH_EXCLUDED in the path and of
 *   QUERY_EXCLUDED in the query, malformed `%` escapes in the path, percent-encoded or non-STD3 host names,
 *   two `@` in the authority or userinfo characters RFC 3986 does not allow, port 0 or above
 *   65535, IPvFuture literals.
 * - Senders must put the canonical path and query on the wire as they are (undici's
 *   `dispatcher.request({ origin, path })`), not through WHATWG `new URL()`, which for example
 *   percent-encodes `'` in a query.
 * - An empty port (`host:`) is dropped, like a default port (RFC 3986 §6.2.3); leading zeros
 *   in a port are dropped.
 */
import { isIPv6 } from 'node:net';
import tr46 from 'tr46';
import { SvcError } from '../errors/base.js';

export type TargetUriRejectReason =
  | 'invalid_syntax'
  | 'invalid_character'
  | 'unsupported_scheme'
  | 'missing_authority'
  | 'ambiguous_userinfo'
  | 'empty_host'
  | 'invalid_host'
  | 'raw_non_ascii'
  | 'empty_label'
  | 'multiple_trailing_dots'
  | 'missing_bracket'
  | 'unbracketed_ipv6'
  | 'invalid_ipv6'
  | 'ipv6_zone_id'
  | 'invalid_port'
  | 'invalid_percent_encoding';

/**
 * A URI the rules reject. Callers map it to `webhook_target_uri_malformed` (webhook path) or
 * `request_target_uri_malformed` (request path). The message never echoes the input, which
 * may carry credentials in its userinfo or query.
 */
export class TargetUriError extends SvcError {
  static override readonly code = 'ERR_TARGET_URI';

  declare readonly code: TargetUriRejectReason;
  /** @deprecated use `code` (the same value). */
  get reason(): TargetUriRejectReason {
    return this.code;
  }
  constructor(reason: TargetUriRejectReason) {
    super(`malformed target URI: ${reason}`, { code: reason });
  }
}

export type TargetUriScheme = 'http' | 'https';

export interface CanonicalTargetUri {
  /** The `@target-uri` value: scheme://authority path [?query], no userinfo, no fragment. */
  targetUri: string;
  /** The `@authority` value: host [":" port], default port stripped. */
  authority: string;
  scheme: TargetUriScheme;
  /** Lowercase A-label host without root dot, or an IPv6 literal WITH its brackets. */
  host: string;
  /** The explicit non-default port, or null when the scheme's default applies. */
  port: number | null;
}

export interface CanonicalizeOptions {
  /**
   * Reject any non-ASCII character instead of converting it (host: UTS-46 ToASCII; path and
   * query: UTF-8 percent-encoding). True on the verifier path, false (default) on the signer.
   */
  rejectRawNonAscii?: boolean;
}

// Printable ASCII that RFC 3986 excludes and a WHATWG client would re-encode or reinterpret
// on the wire (a backslash becomes `/` there): accepting them raw would let the signed bytes differ
// from the sent ones. `|`, `^`, `[`, `]` pass through WHATWG untouched, so they stay accepted.
const PATH_EXCLUDED = /["<>`{}\\]/;
const QUERY_EXCLUDED = /["<>]/;
// RFC 3986 userinfo: unreserved, pct-encoded, sub-delims, ':' (checked although stripped, so
// that a backslash or other delimiters cannot make two parsers disagree about the host).
const USERINFO = /^[A-Za-z0-9\-._~%!$&'()*+,;=:]*$/;

const DEFAULT_PORTS: Record<TargetUriScheme, number> = { http: 80, https: 443 };

// UTS-46 as supplement §3 step 2 pins it.
const UTS46 = {
  transitionalProcessing: false,
  checkHyphens: true,
  checkBidi: true,
  checkJoiners: true,
  useSTD3ASCIIRules: true,
  verifyDNSLength: false,
} as const;

export function defaultPort(scheme: TargetUriScheme): number {
  return DEFAULT_PORTS[scheme];
}

/** Canonicalises an absolute http(s) URI; throws TargetUriError on every reject case. */
export function canonicalizeTargetUri(
  input: string,
  opts: CanonicalizeOptions = {},
): CanonicalTargetUri {
  if (typeof input !== 'string') throw new TargetUriError('invalid_syntax');
  const rejectRaw = opts.rejectRawNonAscii ?? false;
  rejectControlsAndSpaces(input);

  const schemeMatch = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(input);
  if (!schemeMatch) throw new TargetUriError('invalid_syntax');
  const scheme = schemeMatch[1]!.toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') throw new TargetUriError('unsupported_scheme');
  let rest = input.slice(schemeMatch[0].length);
  if (!rest.startsWith('//')) throw new TargetUriError('missing_authority');
  rest = rest.slice(2);

  // Rule 8: the fragment goes; '#' cannot occur earlier in a valid URI.
  const hash = rest.indexOf('#');
  if (hash >= 0) rest = rest.slice(0, hash);

  const authorityEnd = rest.search(/[/?]/);
  const rawAuthority = authorityEnd < 0 ? rest : rest.slice(0, authorityEnd);
  const pathAndQuery = authorityEnd < 0 ? '' : rest.slice(authorityEnd);
  const q = pathAndQuery.indexOf('?');
  const rawPath = q < 0 ? pathAndQuery : pathAndQuery.slice(0, q);
  const rawQuery = q < 0 ? null : pathAndQuery.slice(q + 1);

  rejectAny(rawPath, PATH_EXCLUDED);
  rejectAny(rawQuery ?? '', QUERY_EXCLUDED);
  const { host, port } = parseAuthority(rawAuthority, scheme, rejectRaw, true);
  const authority = port === null ? host : `${host}:${port}`;
  const path = canonicalPath(rawPath, rejectRaw);
  const query = rawQuery === null ? '' : `?${convertNonAscii(rawQuery, rejectRaw)}`;
  return { targetUri: `${scheme}://${authority}${path}${query}`, authority, scheme, host, port };
}

/**
 * Canonicalises a `Host` / `:authority` header value for comparison with the signed
 * `@authority`: lowercase, one root dot removed, default port stripped, IPv6 brackets kept.
 * Raw non-ASCII is rejected by default: this is the verifier's path.
 */
export function canonicalizeAuthority(
  hostHeaderValue: string,
  scheme: string,
  opts: CanonicalizeOptions = {},
): string {
  if (typeof hostHeaderValue !== 'string') throw new TargetUriError('invalid_syntax');
  const s = scheme.toLowerCase();
  if (s !== 'http' && s !== 'https') throw new TargetUriError('unsupported_scheme');
  rejectControlsAndSpaces(hostHeaderValue);
  if (/[/?#]/.test(hostHeaderValue)) throw new TargetUriError('invalid_host');
  const { host, port } = parseAuthority(hostHeaderValue, s, opts.rejectRawNonAscii ?? true, false);
  return port === null ? host : `${host}:${port}`;
}

function parseAuthority(
  raw: string,
  scheme: TargetUriScheme,
  rejectRaw: boolean,
  allowUserinfo: boolean,
): { host: string; port: number | null } {
  // Rule 3: userinfo is stripped; with two '@' it is unclear which part is the host.
  const at = raw.lastIndexOf('@');
  if (at >= 0) {
    if (!allowUserinfo) throw new TargetUriError('invalid_host');
    if (raw.indexOf('@') !== at) throw new TargetUriError('ambiguous_userinfo');
    if (!USERINFO.test(raw.slice(0, at))) throw new TargetUriError('invalid_character');
  }
  const hostPort = raw.slice(at + 1);
  if (hostPort === '') throw new TargetUriError('empty_host');

  let host: string;
  let portText: string | null;
  if (hostPort.startsWith('[')) {
    const close = hostPort.indexOf(']');
    if (close < 0) throw new TargetUriError('missing_bracket');
    host = canonicalIpv6Literal(hostPort.slice(1, close));
    const after = hostPort.slice(close + 1);
    if (after !== '' && !after.startsWith(':')) throw new TargetUriError('invalid_port');
    portText = after === '' ? null : after.slice(1);
  } else {
    const colon = hostPort.indexOf(':');
    if (colon >= 0 && hostPort.indexOf(':', colon + 1) >= 0) {
      throw new TargetUriError('unbracketed_ipv6');
    }
    const name = colon < 0 ? hostPort : hostPort.slice(0, colon);
    portText = colon < 0 ? null : hostPort.slice(colon + 1);
    host = canonicalRegName(name, rejectRaw);
  }
  return { host, port: canonicalPort(portText, scheme) };
}

/** Rule 2, IPv6: brackets kept, hex lowercased, no zone id, no IPvFuture. */
function canonicalIpv6Literal(literal: string): string {
  if (literal.includes('%')) throw new TargetUriError('ipv6_zone_id');
  if (!isIPv6(literal)) throw new TargetUriError('invalid_ipv6');
  return `[${literal.toLowerCase()}]`;
}

/** Rule 2, names and IPv4: UTS-46 ToASCII, then exactly one root dot stripped. */
function canonicalRegName(name: string, rejectRaw: boolean): string {
  if (name === '') throw new TargetUriError('empty_host');
  if (hasNonAscii(name)) {
    if (rejectRaw) throw new TargetUriError('raw_non_ascii');
    if (!isWellFormedUnicode(name)) throw new TargetUriError('invalid_character');
  }
  // A percent-encoded reg-name is legal RFC 3986 but never a Host header; tr46 with STD3 rules
  // would reject '%' too, this only names the reason.
  if (name.includes('%')) throw new TargetUriError('invalid_host');
  const ascii = asciiHostFastPath(name) ?? tr46.toASCII(name, UTS46);
  if (ascii === null || ascii === '') throw new TargetUriError('invalid_host');
  if (ascii.endsWith('..')) throw new TargetUriError('multiple_trailing_dots');
  const stripped = ascii.endsWith('.') ? ascii.slice(0, -1) : ascii;
  if (stripped === '' || stripped.split('.').some((label) => label === '')) {
    throw new TargetUriError('empty_label');
  }
  return stripped;
}

/**
 * UTS-46 ToASCII for the common case, a plain LDH name: with all-ASCII input and no `xn--`
 * label, the mapping step only lowercases, CheckBidi and CheckJoiners cannot trigger, and what
 * remains is STD3 (`[a-z0-9-]`) and CheckHyphens (no hyphen at either end or in positions 3-4).
 * tr46 costs tens of microseconds per call; this costs well under one. Returns undefined to
 * defer to tr46 for anything else (a test checks both agree on generated ASCII names).
 */
export function asciiHostFastPath(name: string): string | undefined {
  // Tested before lowercasing: toLowerCase maps some non-ASCII (U+212A KELVIN SIGN) to ASCII.
  if (!/^[A-Za-z0-9.-]*$/.test(name)) return undefined;
  const lower = name.toLowerCase();
  for (const label of lower.split('.')) {
    if (label.startsWith('xn--')) return undefined;
    if (label.startsWith('-') || label.endsWith('-') || label.slice(2, 4) === '--')
      return undefined;
  }
  return lower;
}

/** Rule 4: the scheme's default port and an empty port are dropped. */
function canonicalPort(text: string | null, scheme: TargetUriScheme): number | null {
  if (text === null || text === '') return null;
  if (!/^[0-9]+$/.test(text)) throw new TargetUriError('invalid_port');
  const port = Number(text);
  if (port < 1 || port > 65535) throw new TargetUriError('invalid_port');
  return port === DEFAULT_PORTS[scheme] ? null : port;
}

/** Rules 5 and 6 for the path (the query is left alone, see the header comment). */
function canonicalPath(raw: string, rejectRaw: boolean): string {
  return removeDotSegments(normalisePercentEncoding(convertNonAscii(raw, rejectRaw)));
}

function isUnreservedByte(b: number): boolean {
  return (
    (b >= 0x41 && b <= 0x5a) ||
    (b >= 0x61 && b <= 0x7a) ||
    (b >= 0x30 && b <= 0x39) ||
    b === 0x2d ||
    b === 0x2e ||
    b === 0x5f ||
    b === 0x7e
  );
}

const HEX_PAIR = /^[0-9A-Fa-f]{2}$/;

/** Uppercase hex; decode escapes of unreserved characters; reserved ones stay encoded. */
function normalisePercentEncoding(s: string): string {
  if (!s.includes('%')) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c !== '%') {
      out += c;
      continue;
    }
    const hex = s.slice(i + 1, i + 3);
    if (!HEX_PAIR.test(hex)) throw new TargetUriError('invalid_percent_encoding');
    const byte = parseInt(hex, 16);
    out += isUnreservedByte(byte) ? String.fromCharCode(byte) : `%${hex.toUpperCase()}`;
    i += 2;
  }
  return out;
}

/**
 * RFC 3986 §5.2.4 on a path-abempty, segment by segment (linear time). Empty segments are
 * ordinary segments, so consecutive slashes survive (`/a/.//b` -> `/a//b`) and `..` removes
 * exactly one of them (`/a//../b` -> `/a/b`). A final `.` or `..` leaves a trailing slash.
 * An empty path becomes `/`.
 */
export function removeDotSegments(path: string): string {
  if (path === '') return '/';
  const segments = path.split('/');
  segments.shift(); // the empty string before the leading '/'
  const out: string[] = [];
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    const last = i === segments.length - 1;
    if (seg === '.' || seg === '..') {
      if (seg === '..') out.pop();
      if (last) out.push('');
    } else {
      out.push(seg);
    }
  }
  return `/${out.join('/')}`;
}

/** Non-ASCII in path or query: rejected, or UTF-8 percent-encoded with uppercase hex. */
function convertNonAscii(s: string, rejectRaw: boolean): string {
  if (!hasNonAscii(s)) return s;
  if (rejectRaw) throw new TargetUriError('raw_non_ascii');
  let out = '';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (cp < 0x80) {
      out += ch;
    } else if (cp >= 0xd800 && cp <= 0xdfff) {
      throw new TargetUriError('invalid_character');
    } else {
      for (const b of Buffer.from(ch, 'utf8')) out += `%${b.toString(16).toUpperCase()}`;
    }
  }
  return out;
}

/** C0 controls, space and DEL never appear in a URI that went over the wire. */
function rejectControlsAndSpaces(s: string): void {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f) throw new TargetUriError('invalid_character');
  }
}

function rejectAny(s: string, excluded: RegExp): void {
  if (excluded.test(s)) throw new TargetUriError('invalid_character');
}

function hasNonAscii(s: string): boolean {
  return /[\u0080-\uffff]/.test(s);
}

function isWellFormedUnicode(s: string): boolean {
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (cp >= 0xd800 && cp <= 0xdfff) return false;
  }
  return true;
}
