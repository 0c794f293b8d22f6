/**
 * Version negotiation of a task request (the published `core/version-envelope.json`):
 * `<brand>_major_version` (integer, deprecated) and `<brand>_version` (release precision,
 * `3.1`, `3.2-beta.1`) pin the buyer's protocol. Within major 3 the seller serves its own
 * release (a downshift, as the envelope allows); another major is VERSION_UNSUPPORTED with
 * the versions to re-pin to. Both members are envelope fields, so the task's own schema
 * never sees them.
 */
import { taskError } from './errors.js';

export const SUPPORTED_MAJORS = [3] as const;
/** Release-precision versions this seller speaks (re-pin targets). */
export const SUPPORTED_VERSIONS = ['3.0', '3.1', '3.2'] as const;

const RELEASE = /^(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?)?$/;

function unsupported(member: string, value: unknown) {
  return taskError(
    'VERSION_UNSUPPORTED',
    `${member} ${JSON.stringify(value)} is not supported; this agent speaks ${SUPPORTED_VERSIONS.join(', ')} (major ${SUPPORTED_MAJORS.join(', ')})`,
    {
      field: member,
      details: {
        supported_versions: [...SUPPORTED_VERSIONS],
        supported_majors: [...SUPPORTED_MAJORS],
      },
    },
  );
}

/**
 * Checks the pin and returns the parameters without the version members (the same
 * object when there are none). Malformed pins are VALIDATION_ERROR naming the member.
 */
export function checkVersionPin(
  params: Record<string, unknown>,
  brand: string,
): Record<string, unknown> {
  const majorMember = `${brand}_major_version`;
  const versionMember = `${brand}_version`;
  const major = params[majorMember];
  const version = params[versionMember];
  if (major === undefined && version === undefined) return params;
  if (major !== undefined) {
    if (typeof major !== 'number' || !Number.isInteger(major) || major < 1 || major > 99) {
      throw taskError('VALIDATION_ERROR', `${majorMember} must be an integer from 1 to 99`, {
        field: majorMember,
      });
    }
    if (!(SUPPORTED_MAJORS as readonly number[]).includes(major)) {
      throw unsupported(majorMember, major);
    }
  }
  if (version !== undefined) {
    const m = typeof version === 'string' ? RELEASE.exec(version) : null;
    if (!m) {
      throw taskError(
        'VALIDATION_ERROR',
        `${versionMember} must be a release such as "3.1" (MAJOR.RELEASE, optional -prerelease)`,
        { field: versionMember },
      );
    }
    if (!(SUPPORTED_MAJORS as readonly number[]).includes(Number(m[1]))) {
      throw unsupported(versionMember, version);
    }
  }
  const rest = { ...params };
  delete rest[majorMember];
  delete rest[versionMember];
  return rest;
}

/**
 * The minor release a request pins, as `3.0` / `3.1` / `3.2`, or null when it pins none.
 * A 3.0 buyer sends only the integer `<brand>_major_version` (3.0 has no `<brand>_version`
 * member; 3.1+ buyers send both), so the integer alone reads as 3.0. Call after
 * checkVersionPin has accepted the members.
 */
export function pinnedRelease(params: Record<string, unknown>, brand: string): string | null {
  const version = params[`${brand}_version`];
  if (typeof version === 'string') {
    const m = RELEASE.exec(version);
    return m ? `${m[1]}.${m[2]}` : null;
  }
  return params[`${brand}_major_version`] !== undefined ? `${SUPPORTED_MAJORS[0]}.0` : null;
}

/**
 * The release an answer is served in, echoed as `<brand>_version` (3.2 version
 * negotiation: "On a response: the release the seller actually served"): the buyer's
 * pinned release when this seller speaks it (the highest supported release at or below the
 * pin), else the seller's own; null when the request pins none. A malformed or other-major
 * pin never gets here (checkVersionPin refused it).
 */
export function servedRelease(params: unknown, brand: string, own: string): string | null {
  const pinned =
    params && typeof params === 'object' && !Array.isArray(params)
      ? pinnedRelease(params as Record<string, unknown>, brand)
      : null;
  if (pinned === null) return null;
  const minor = (r: string) => Number(r.split('.')[1]);
  if (minor(pinned) >= minor(own)) return own;
  const served = [...SUPPORTED_VERSIONS].reverse().find((v) => minor(v) <= minor(pinned));
  return served ?? own;
}
