/**
 * Memoised @target-uri canonicalisation for the hot paths: senders and receivers see the
 * same few URLs over and over. Bounded; cleared whole when full (cheap, and a working set
 * larger than the bound just falls back to computing).
 */
import {
  canonicalizeAuthority,
  canonicalizeTargetUri,
  type CanonicalTargetUri,
} from '../http/target-uri.js';

const MAX = 512;
const strict = new Map<string, CanonicalTargetUri>();
const lenient = new Map<string, CanonicalTargetUri>();

/** `rejectRawNonAscii`: true on the verifier path, false on the signer path. */
export function canonicalTarget(url: string, rejectRawNonAscii: boolean): CanonicalTargetUri {
  const cache = rejectRawNonAscii ? strict : lenient;
  let hit = cache.get(url);
  if (!hit) {
    hit = canonicalizeTargetUri(url, { rejectRawNonAscii });
    if (cache.size >= MAX) cache.clear();
    cache.set(url, hit);
  }
  return hit;
}

const authorities = new Map<string, string>();

/**
 * The verifier's canonical Host/:authority (raw non-ASCII rejected), memoised like the target:
 * a pure function of (value, scheme), and only successes are kept, so a malformed value throws
 * its TargetUriError every time.
 */
export function canonicalAuthority(value: string, scheme: string): string {
  const id = `${scheme} ${value}`;
  let hit = authorities.get(id);
  if (hit === undefined) {
    hit = canonicalizeAuthority(value, scheme);
    if (authorities.size >= MAX) authorities.clear();
    authorities.set(id, hit);
  }
  return hit;
}
