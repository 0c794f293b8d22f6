/**
 * An attempt in full for the operator (issue 26; webhook_activity `exchange`, migration
 * 074): the request's headers as sent (the RFC 9421 `Signature`, `Signature-Input` and
 * `Content-Digest`, or the legacy HMAC headers, shown whole: they are what a receiver
 * verifies and prove nothing without the key), the response's headers, and the attempt's
 * timing. Bounded when the attempt is made (at most `MAX_HEADERS` headers of
 * `MAX_VALUE_CHARS` characters each side, so a record stays under ~12 KB) and never a
 * credential: a bearer token, cookies, and headers named like secrets are masked, and this
 * delivery's own HMAC secret or bearer token wherever it appears. The body's first bytes
 * are the attempt's `response_snippet` (snippet.ts).
 */
import type { AttemptTiming } from './timing.js';

export const MAX_HEADERS = 40;
export const MAX_VALUE_CHARS = 1024;
const MASK = '[redacted]';

/** Headers whose whole value is a credential. */
const SECRET_HEADER =
  /^(?:authorization|proxy-authorization|cookie|set-cookie|x-api-key|api-key)$|secret|token|password|session/i;
/** Names never masked though they match the pattern above (no credential in them). */
const PUBLIC_HEADER = /^www-authenticate$/i;

export interface AttemptExchange {
  request: { headers: Record<string, string> };
  /** Null when no response came (timeout, refused, connection error). */
  response: { headers: Record<string, string>; truncated?: true } | null;
  timing: AttemptTiming;
}

type RawHeaders = Record<string, string | string[] | undefined>;

function clean(value: string, secrets: string[]): string {
  let v = value;
  for (const s of secrets) if (s.length >= 4) v = v.split(s).join(MASK);
  // eslint-disable-next-line no-control-regex
  v = v.replace(/[\u0000-\u001f\u007f]/g, ' ');
  return v.length > MAX_VALUE_CHARS ? `${v.slice(0, MAX_VALUE_CHARS)}…` : v;
}

function maskedValue(name: string, value: string): string {
  if (PUBLIC_HEADER.test(name) || !SECRET_HEADER.test(name)) return value;
  // Keep the scheme of an Authorization header: "Bearer [redacted]" says what was sent.
  const scheme = /^(Bearer|Basic|Digest|Token)\s/i.exec(value)?.[1];
  return scheme ? `${scheme} ${MASK}` : MASK;
}

/** Headers, lower-cased and bounded, credentials masked; `truncated` when some were left. */
export function recordHeaders(
  raw: RawHeaders,
  secrets: string[],
): { headers: Record<string, string>; truncated: boolean } {
  const headers: Record<string, string> = {};
  let n = 0;
  let truncated = false;
  for (const [k, v] of Object.entries(raw)) {
    if (v === undefined) continue;
    if (n >= MAX_HEADERS) {
      truncated = true;
      break;
    }
    const name = k.toLowerCase().slice(0, 100);
    const value = Array.isArray(v) ? v.join(', ') : String(v);
    headers[name] = clean(maskedValue(name, value), secrets);
    n++;
  }
  return { headers, truncated };
}

/** The exchange of one attempt, as stored. */
export function attemptExchange(
  sent: Record<string, string>,
  received: RawHeaders | null,
  timing: AttemptTiming,
  secrets: string[],
): AttemptExchange {
  const response = received ? recordHeaders(received, secrets) : null;
  return {
    request: { headers: recordHeaders(sent, secrets).headers },
    response: response
      ? { headers: response.headers, ...(response.truncated ? { truncated: true as const } : {}) }
      : null,
    timing,
  };
}
