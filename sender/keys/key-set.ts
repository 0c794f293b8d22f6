/**
 * The seller's signing key set: private JWK files in one directory (one key per file,
 * several kids for rotation, Ed25519 and ES256 side by side). The newest file of the
 * preferred algorithm signs unless a kid is named; every key is published, so a
 * receiver that cached the old set finds the new kid by refetching on the miss.
 */
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BrandProfile } from '../../shared/brand.js';
import type { SignatureAlg } from '../../shared/signing/algorithms.js';
import {
  generateSigningKey,
  importSigningKey,
  KeyImportError,
  KeySetError,
  publishedJwk,
  type JWK,
  type SigningKey,
} from '../../shared/signing/keys.js';

export { KeySetError };

export interface KeySetOptions {
  /** The kid that signs; default the newest key of `preferAlg`. */
  activeKid?: string;
  preferAlg?: SignatureAlg;
}

export class KeySet {
  /** Oldest first. */
  readonly keys: readonly SigningKey[];
  private readonly active: SigningKey;

  constructor(keys: SigningKey[], options: KeySetOptions = {}) {
    if (keys.length === 0) throw new KeySetError('the key set is empty: run `svc keys generate`');
    const kids = new Set<string>();
    for (const k of keys) {
      if (kids.has(k.kid)) throw new KeySetError(`kid ${k.kid} appears twice in the key set`);
      kids.add(k.kid);
    }
    this.keys = keys;
    if (options.activeKid) {
      const k = keys.find((x) => x.kid === options.activeKid);
      if (!k) throw new KeySetError(`active kid ${options.activeKid} is not in the key set`);
      this.active = k;
    } else {
      const prefer = options.preferAlg ?? 'ed25519';
      this.active = [...keys].reverse().find((k) => k.alg === prefer) ?? keys[keys.length - 1]!;
    }
  }

  /** The key that signs deliveries. */
  signingKey(): SigningKey {
    return this.active;
  }

  /** The public JWKS: every key, with `<brand>_use: request-signing`, no private part. */
  jwks(profile: BrandProfile): { keys: JWK[] } {
    return { keys: this.keys.map((k) => publishedJwk(k, profile)) };
  }

  /** Reads every `*.json` file of `dir` (a private JWK each), oldest file first. */
  static async fromDirectory(dir: string, options: KeySetOptions = {}): Promise<KeySet> {
    let names: string[];
    try {
      names = (await readdir(dir)).filter((n) => n.endsWith('.json'));
    } catch (err) {
      throw new KeySetError(
        `cannot read key directory ${dir}: ${(err as Error).message} ` +
          `(svc keys generate --out ${dir} creates a key there, as svc start does on its first run; ` +
          'or name another with --keys or SVC_KEYS_DIR)',
      );
    }
    const entries: Array<{ key: SigningKey; mtime: number; name: string }> = [];
    for (const name of names) {
      const path = join(dir, name);
      let jwk: JWK;
      try {
        jwk = JSON.parse(await readFile(path, 'utf8')) as JWK;
      } catch {
        throw new KeySetError(`${name} is not a JSON file`);
      }
      try {
        entries.push({ key: await importSigningKey(jwk), mtime: (await stat(path)).mtimeMs, name });
      } catch (err) {
        const why = err instanceof KeyImportError ? err.message : 'not a private JWK';
        throw new KeySetError(`${name}: ${why}`);
      }
    }
    entries.sort((a, b) => a.mtime - b.mtime || a.name.localeCompare(b.name));
    return new KeySet(
      entries.map((e) => e.key),
      options,
    );
  }
}

/** Generates a key pair and writes its private JWK as `<kid>.json` (mode 0600). */
export async function writeNewKey(
  dir: string,
  alg: SignatureAlg = 'ed25519',
): Promise<{ kid: string; path: string; publicJwk: JWK }> {
  const { key, privateJwk } = await generateSigningKey(alg);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `${key.kid}.json`);
  await writeFile(path, `${JSON.stringify(privateJwk, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  return { kid: key.kid, path, publicJwk: key.publicJwk };
}
