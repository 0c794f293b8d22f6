/**
 * Loads the public webhook-signing conformance vectors from `conformance-vectors/` (the
 * repository's copy of `../shared/conformance/`) and builds the key resolver each vector describes.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JWK } from 'jose';
import type { KeyResolver } from '../../shared/signing/verify.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const CONFORMANCE_DIR = join(repoRoot, 'conformance-vectors', 'webhook-signing');

export interface SigningVector {
  file: string;
  kind: 'positive' | 'negative';
  name: string;
  reference_now: number;
  request: { method: string; url: string; headers: Record<string, string>; body: string };
  jwks_ref: string[];
  jwks_override?: Record<string, JWK>;
  expected_signature_base: string;
  expected_outcome: { success: boolean; error_code?: string; failed_step?: number };
  test_harness_state?: {
    replay_cache_entries?: Array<{ keyid: string; nonce: string }>;
    revoked_kids?: string[];
    per_keyid_cap_filled_for?: string;
    revocation_list_stale_seconds?: number;
  };
  black_box_behavior?: string;
}

export type VectorKey = JWK & { _private_d_for_test_only?: string };

export function loadKeys(): VectorKey[] {
  return (
    JSON.parse(readFileSync(join(CONFORMANCE_DIR, 'keys.json'), 'utf8')) as { keys: VectorKey[] }
  ).keys;
}

export function loadVectors(): SigningVector[] {
  const out: SigningVector[] = [];
  for (const kind of ['positive', 'negative'] as const) {
    for (const file of readdirSync(join(CONFORMANCE_DIR, kind)).sort()) {
      if (!file.endsWith('.json')) continue;
      const v = JSON.parse(readFileSync(join(CONFORMANCE_DIR, kind, file), 'utf8'));
      out.push({ ...v, file: `${kind}/${file}`, kind });
    }
  }
  return out;
}

/** The public JWK of a vector key, without its test-only private scalar or comments. */
export function publicJwk(key: VectorKey): JWK {
  const { _private_d_for_test_only: _d, ...rest } = key;
  delete (rest as Record<string, unknown>)['$comment'];
  return rest;
}

/** The sender key set a vector names (`jwks_ref`, with `jwks_override` applied). */
export function vectorKeyResolver(v: SigningVector, senderId = 'vector-sender'): KeyResolver {
  const keys = new Map<string, JWK>();
  for (const key of loadKeys()) {
    if (v.jwks_ref.includes(key.kid!)) keys.set(key.kid!, publicJwk(key));
  }
  for (const [kid, jwk] of Object.entries(v.jwks_override ?? {})) keys.set(kid, jwk);
  return {
    async resolve(kid) {
      const jwk = keys.get(kid);
      return jwk ? { jwk, senderId } : null;
    },
  };
}

/** Lower-cased header names, as a node server sees them. */
export function lowerHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}
