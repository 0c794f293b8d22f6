/**
 * The tester's signing keys: read from a JWK file (one private JWK, or `{"keys": [...]}`),
 * or generated for the run (one Ed25519 and one ES256, so both algorithms get graded),
 * and the public JWKS the receiver under test must trust.
 */
import { readFile, writeFile } from 'node:fs/promises';
import type { BrandProfile } from '../../shared/brand.js';
import {
  generateSigningKey,
  importSigningKey,
  publishedJwk,
  type JWK,
  type SigningKey,
} from '../../shared/signing/keys.js';
import { SvcError } from '../../shared/errors/base.js';

export class TesterKeyError extends SvcError {
  static override readonly code = 'ERR_TESTER_KEY';

  constructor(message: string) {
    super(message);
    this.name = 'TesterKeyError';
  }
}

export async function readKeyFile(path: string): Promise<SigningKey[]> {
  let doc: unknown;
  try {
    doc = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new TesterKeyError(`${path}: ${(err as Error).message}`);
  }
  const list =
    typeof doc === 'object' && doc !== null && Array.isArray((doc as { keys?: unknown }).keys)
      ? ((doc as { keys: unknown[] }).keys as JWK[])
      : [doc as JWK];
  if (list.length === 0) throw new TesterKeyError(`${path}: no keys`);
  try {
    return await Promise.all(list.map((jwk) => importSigningKey(jwk)));
  } catch (err) {
    throw new TesterKeyError(`${path}: ${(err as Error).message}`);
  }
}

export interface GeneratedKeys {
  keys: SigningKey[];
  privateJwks: JWK[];
}

export async function generateTesterKeys(): Promise<GeneratedKeys> {
  const stamp = Date.now().toString(36);
  const ed = await generateSigningKey('ed25519', `conformance-ed25519-${stamp}`);
  const es = await generateSigningKey('ecdsa-p256-sha256', `conformance-es256-${stamp}`);
  return { keys: [ed.key, es.key], privateJwks: [ed.privateJwk, es.privateJwk] };
}

/**
 * Writes the private keys (mode 0600). An existing file is kept unless `force`: it holds
 * tester keys a receiver may already trust, and replacing them silently breaks that trust.
 */
export async function saveKeyFile(path: string, privateJwks: JWK[], force = false): Promise<void> {
  try {
    await writeFile(path, `${JSON.stringify({ keys: privateJwks }, null, 2)}\n`, {
      mode: 0o600,
      flag: force ? 'w' : 'wx',
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    throw new TesterKeyError(
      `--save-key ${path}: the file exists (tester keys saved before, which a receiver may trust); ` +
        `reuse them with --key ${path}, or pass --force to replace them`,
    );
  }
}

/** The JWKS a receiver installs to trust the tester (request-signing purpose). */
export function testerJwks(keys: SigningKey[], profile: BrandProfile): { keys: JWK[] } {
  return { keys: keys.map((k) => publishedJwk(k, profile)) };
}
