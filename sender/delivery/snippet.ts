/**
 * What an attempt keeps of the receiver's answer for the operator (webhook_activity
 * `response_snippet`): the first bytes of the body as text, bounded, without control
 * characters, and with anything that looks like a credential masked. A receiver may echo
 * the request (an `Authorization` header, a legacy HMAC secret's signature) or leak its
 * own secrets in an error page: none of that is stored.
 */

/** Characters kept at most. */
export const SNIPPET_CHARS = 300;
/** Response bytes read for it (UTF-8: at most 4 per character). */
export const SNIPPET_BYTES = SNIPPET_CHARS * 4;

const MASK = '[redacted]';

// Member or parameter names whose value is a credential (JSON, form, header or key=value).
const SECRET_NAME =
  '(?:[\\w-]*(?:secret|token|password|passwd|pwd|api[_-]?key|apikey|authorization|signature|credential|private[_-]?key|cookie|session)[\\w-]*)';
const NAMED_VALUES: RegExp[] = [
  // "name": "value" (JSON)
  new RegExp(`("${SECRET_NAME}"\\s*:\\s*)"(?:[^"\\\\]|\\\\.)*"?`, 'gi'),
  // name=value or name: value (forms, headers, logs)
  new RegExp(`(\\b${SECRET_NAME}\\s*[=:]\\s*)(?!\\[redacted\\])[^\\s&,;"]+`, 'gi'),
];
const SCHEMES = /\b(Bearer|Basic|Digest|HMAC|Token)\s+[A-Za-z0-9._~+/=:-]{6,}/gi;
const PEM = /-----BEGIN [A-Z ]*-----[\s\S]*?(?:-----END [A-Z ]*-----|$)/g;
// Long unbroken base64/hex runs (keys, tokens, signatures) are no help when debugging.
const OPAQUE = /[A-Za-z0-9+/_-]{40,}={0,2}/g;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/g;

/**
 * The snippet of `body` (the bytes read of the response), or null when empty. `secrets`
 * are this delivery's own credentials (HMAC secret, bearer token), masked wherever they
 * appear, before anything else is cut.
 */
export function responseSnippet(
  body: Buffer | null | undefined,
  secrets: string[] = [],
): string | null {
  if (!body || body.length === 0) return null;
  let text = body.subarray(0, SNIPPET_BYTES).toString('utf8');
  // A character cut in half at the byte bound decodes as U+FFFD: drop it.
  if (body.length > SNIPPET_BYTES) text = text.replace(/\uFFFD+$/, '');
  for (const s of secrets) if (s.length >= 4) text = text.split(s).join(MASK);
  text = text.replace(PEM, MASK).replace(SCHEMES, `$1 ${MASK}`);
  for (const re of NAMED_VALUES) text = text.replace(re, `$1${MASK}`);
  text = text.replace(OPAQUE, MASK).replace(CONTROL, ' ').trim();
  if (text === '') return null;
  const cut = text.length > SNIPPET_CHARS || body.length > SNIPPET_BYTES;
  return cut ? `${text.slice(0, SNIPPET_CHARS)}…` : text;
}
