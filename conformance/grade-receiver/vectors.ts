/**
 * The public webhook-signing vectors, read from disk for a conformance run. By default the
 * copy the package ships in `conformance-vectors/webhook-signing` (found from the sources in a
 * checkout and from `dist/` in an installed package); `--vectors DIR` points elsewhere (the
 * vector folder itself or a folder holding `webhook-signing/`).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JWK } from '../../shared/signing/keys.js';
import { SvcError } from '../../shared/errors/base.js';

export interface SigningVector {
  /** `positive/001-basic-post.json` */
  file: string;
  kind: 'positive' | 'negative';
  /** The three-digit number, e.g. `009`. */
  number: string;
  /** `001-basic-post` */
  slug: string;
  name: string;
  reference_now: number;
  request: { method: string; url: string; headers: Record<string, string>; body: string };
  jwks_ref: string[];
  jwks_override?: Record<string, JWK>;
  expected_outcome: { success: boolean; error_code?: string };
  test_harness_state?: Record<string, unknown>;
  black_box_behavior?: string;
}

export type VectorKey = JWK & { _private_d_for_test_only?: string };

export class VectorLoadError extends SvcError {
  static override readonly code = 'ERR_VECTOR_LOAD';

  constructor(message: string) {
    super(message);
    this.name = 'VectorLoadError';
  }
}

/**
 * This file sits at `conformance/grade-receiver/` in a checkout, `dist/conformance/grade-receiver/`
 * when built.
 */
function shippedVectorsDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = ['../..', '../../..'].map((up) =>
    join(resolve(here, up), 'conformance-vectors', 'webhook-signing'),
  );
  return candidates.find((dir) => existsSync(join(dir, 'keys.json'))) ?? candidates[0]!;
}

export const DEFAULT_VECTORS_DIR = shippedVectorsDir();

/** The vector folder for a `--vectors` value (or the default). */
export function vectorsDir(option?: string): string {
  if (!option) return DEFAULT_VECTORS_DIR;
  const nested = join(option, 'webhook-signing');
  return existsSync(join(nested, 'keys.json')) ? nested : option;
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new VectorLoadError(`${path}: ${(err as Error).message}`);
  }
}

export function loadVectorKeys(dir: string): VectorKey[] {
  const doc = readJson(join(dir, 'keys.json')) as { keys?: unknown };
  if (!Array.isArray(doc.keys)) throw new VectorLoadError(`${dir}/keys.json has no keys[]`);
  return doc.keys as VectorKey[];
}

export function loadSigningVectors(dir: string): SigningVector[] {
  if (!existsSync(join(dir, 'positive')) || !existsSync(join(dir, 'negative'))) {
    throw new VectorLoadError(`${dir} has no positive/ and negative/ vector folders`);
  }
  const out: SigningVector[] = [];
  for (const kind of ['positive', 'negative'] as const) {
    for (const file of readdirSync(join(dir, kind)).sort()) {
      if (!file.endsWith('.json')) continue;
      const v = readJson(join(dir, kind, file)) as Omit<
        SigningVector,
        'file' | 'kind' | 'number' | 'slug'
      >;
      if (typeof v !== 'object' || v === null || typeof v.request !== 'object') {
        throw new VectorLoadError(`${kind}/${file} is not a signing vector`);
      }
      const slug = file.replace(/\.json$/, '');
      out.push({ ...v, file: `${kind}/${file}`, kind, slug, number: slug.slice(0, 3) });
    }
  }
  return out;
}
