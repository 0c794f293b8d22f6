/**
 * Legacy credentials (HMAC secrets and Bearer tokens, spec "Webhook authentication",
 * supplement §6.8): at least 32 characters and not an obviously weak value. Checked when a
 * registration or receiver configuration is accepted, never per request.
 */
import { TaskError } from '../errors/task-errors.js';

export const MIN_LEGACY_CREDENTIAL_LENGTH = 32;

/** A credential made of one unit of at most this many characters repeated is refused. */
const MAX_REPEATED_UNIT = 8;

export interface LegacyCredentialOptions {
  /** Bearer tokens travel in `Authorization`; they must be visible ASCII. */
  scheme?: 'Bearer' | 'HMAC-SHA256';
  /** Field named in the error, e.g. `push_notification_config.authentication.credentials`. */
  field?: string;
}

/** Why a credential is refused, or null when it is acceptable. */
export function legacyCredentialProblem(
  credential: unknown,
  opts: Pick<LegacyCredentialOptions, 'scheme'> = {},
): string | null {
  if (typeof credential !== 'string') return 'credentials must be a string';
  const chars = [...credential];
  if (chars.length < MIN_LEGACY_CREDENTIAL_LENGTH) {
    return `credentials must be at least ${MIN_LEGACY_CREDENTIAL_LENGTH} characters`;
  }
  // All one character (all zero, all 'a') or a short unit repeated ('abab...'): no entropy.
  for (let unit = 1; unit <= MAX_REPEATED_UNIT; unit++) {
    if (chars.every((c, i) => c === chars[i % unit])) {
      return 'credentials are a repeated pattern with no entropy';
    }
  }
  if (opts.scheme === 'Bearer' && !/^[\x21-\x7e]+$/.test(credential)) {
    return 'a Bearer token must be visible ASCII without spaces';
  }
  return null;
}

/**
 * Throws `VALIDATION_ERROR` (400, naming the field) when the credential is too short or
 * weak; this is the answer a seller gives to such a registration.
 */
export function assertLegacyCredential(
  credential: unknown,
  opts: LegacyCredentialOptions = {},
): void {
  const problem = legacyCredentialProblem(credential, opts);
  if (problem !== null) {
    throw new TaskError('VALIDATION_ERROR', problem, {
      field: opts.field ?? 'authentication.credentials',
    });
  }
}
