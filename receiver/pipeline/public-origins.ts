/**
 * The receiver's own public origins (issue 21 item 5; supplement §1 step 10 and §3): the
 * `scheme://host[:port]` values senders address this receiver by. With a list set, a
 * delivery whose target URI / `@authority` names any other origin is refused before any
 * other work (no signature check, no key lookup, no body read, no database round trip):
 * a delivery signed for another receiver that shares a sender cannot be accepted here by
 * sending it with that receiver's `Host`.
 *
 * The authority is derived exactly as the verifier's step 10 derives it: the canonical
 * `@target-uri` (built by the adapter from the scheme and the Host, or the absolute-form
 * request target of RFC 9112 §3.2.2), and each of `:authority` / `Host` that is present must
 * canonicalise to the same authority.
 *
 * Why `webhook_target_uri_malformed`: of the 17 codes (supplement §1), it is the one step 10
 * answers for every disagreement between `@authority` and the target URI, and a target that
 * is not this receiver's is that same class of failure (the URI the sender signed cannot be
 * this receiver's). It is a 401 the sender does not retry, as for any step-10 failure.
 */
import { WebhookVerificationError } from '../../shared/errors/webhook-codes.js';
import { canonicalizeAuthority, TargetUriError } from '../../shared/http/target-uri.js';
import { canonicalTarget } from '../../shared/signing/target-cache.js';
import type { Headers } from './gates.js';
import { SvcError } from '../../shared/errors/base.js';

/** A value of the origin list that is not an origin; the message names the option. */
export class PublicOriginError extends SvcError {
  static override readonly code = 'ERR_PUBLIC_ORIGIN';

  constructor(option: string, value: string, why: string) {
    super(`${option}: ${JSON.stringify(value)} is not an origin (scheme://host[:port]): ${why}`);
    this.name = 'PublicOriginError';
  }
}

const ORIGIN = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(\/?)$/;

/**
 * Canonical origins (`https://buyer.example`, `http://127.0.0.1:8787`) from the configured
 * values: lower-case scheme and host, IDN as A-labels, default port dropped. Refuses an
 * empty list or value, a path, query or fragment, userinfo, and any scheme but http(s).
 */
export function parsePublicOrigins(values: readonly string[], option: string): Set<string> {
  if (values.length === 0) throw new PublicOriginError(option, '', 'the list is empty');
  const out = new Set<string>();
  for (const raw of values) {
    const value = raw.trim();
    if (value === '') throw new PublicOriginError(option, raw, 'empty value');
    const m = ORIGIN.exec(value);
    if (!m) {
      throw new PublicOriginError(option, raw, 'a path, query or fragment is not allowed');
    }
    const scheme = (m[1] as string).toLowerCase();
    if (scheme !== 'http' && scheme !== 'https') {
      throw new PublicOriginError(option, raw, 'the scheme must be http or https');
    }
    if ((m[2] as string).includes('@')) {
      throw new PublicOriginError(option, raw, 'userinfo is not allowed');
    }
    let authority: string;
    try {
      authority = canonicalizeAuthority(m[2] as string, scheme, { rejectRawNonAscii: false });
    } catch (err) {
      if (!(err instanceof TargetUriError)) throw err;
      throw new PublicOriginError(option, raw, `bad host or port (${err.message})`);
    }
    out.add(`${scheme}://${authority}`);
  }
  return out;
}

/** Splits the comma-separated form of the list (the sidecar's option and variable). */
export function splitOriginList(value: string): string[] {
  return value.split(',');
}

function fieldValue(v: string | string[] | undefined): string | undefined | null {
  if (v === undefined) return undefined;
  if (Array.isArray(v)) return v.length === 1 ? (v[0] as string) : null;
  return v;
}

function refuse(message: string): WebhookVerificationError {
  return new WebhookVerificationError('webhook_target_uri_malformed', 10, message);
}

/**
 * The refusal for a request not addressed to one of `origins`, or null when it is. Every
 * failure is the step-10 code, so a malformed Host gets the same answer the verifier gives.
 */
export function foreignOrigin(
  req: { url: string; headers: Headers },
  origins: ReadonlySet<string>,
): WebhookVerificationError | null {
  let target;
  try {
    target = canonicalTarget(req.url, true);
  } catch (err) {
    if (!(err instanceof TargetUriError)) throw err;
    return refuse(`target URI: ${err.message}`);
  }
  for (const name of [':authority', 'host']) {
    const value = fieldValue(req.headers[name]);
    if (value === undefined) continue;
    if (value === null) return refuse(`${name} sent more than once`);
    let authority: string;
    try {
      authority = canonicalizeAuthority(value, target.scheme);
    } catch (err) {
      if (!(err instanceof TargetUriError)) throw err;
      return refuse(`${name} is malformed`);
    }
    if (authority !== target.authority) return refuse(`${name} does not match the target URI`);
  }
  const origin = `${target.scheme}://${target.authority}`;
  return origins.has(origin) ? null : refuse(`${origin} is not one of this receiver's origins`);
}

/** The start-up log line: what the list allows, or what its absence allows. */
export function describePublicOrigins(origins: ReadonlySet<string> | null): {
  level: 'info' | 'warn';
  fields: Record<string, unknown>;
  message: string;
} {
  if (origins) {
    return {
      level: 'info',
      fields: { event: 'public_origins', origins: [...origins] },
      message: `deliveries are accepted only when addressed to ${[...origins].join(', ')}`,
    };
  }
  return {
    level: 'warn',
    fields: { event: 'public_origins_unset' },
    message:
      'no public origins set: a delivery is verified against whatever Host (or absolute-form ' +
      'target) it names, so one signed for another receiver of the same sender is accepted ' +
      'here too; set the receiver public origins to refuse it',
  };
}
