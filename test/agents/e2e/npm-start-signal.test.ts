/**
 * `npm start`, stopped the way a process manager or a terminal stops it: SIGTERM to the npm
 * process. Every process under it (the shell npm runs the script in, `svc start`, tsx's
 * esbuild service, the embedded PostgreSQL) must be gone afterwards, none left under PID 1.
 */
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';

// A cold tsx start and initdb on a shared machine: bounded, but generously.
t.setTimeout(240_000);

const ROOT = join(import.meta.dirname, '../../..');

/** Every live process id with its parent (from /proc). */
async function processTable(): Promise<Map<number, number>> {
  const table = new Map<number, number>();
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => null);
    if (!stat) continue;
    // pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    table.set(Number(name), ppid);
  }
  return table;
}

async function descendants(root: number): Promise<number[]> {
  const table = await processTable();
  const out: number[] = [];
  const queue = [root];
  while (queue.length) {
    const p = queue.shift()!;
    for (const [pid, ppid] of table) {
      if (ppid === p) {
        out.push(pid);
        queue.push(pid);
      }
    }
  }
  return out;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

t.test('SIGTERM to npm start stops svc start and its embedded PostgreSQL', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'npm-start-'));
  // As root, the embedded server runs as the postgres user, which must enter the dir.
  await chmod(dir, 0o755);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SVC_DATA_DIR: join(dir, 'data'),
    SVC_SALES_PORT: '0',
    SVC_CREATIVE_PORT: '0',
    SVC_SIGNALS_PORT: '0',
    SVC_CONSOLE_PORT: '0',
  };
  delete env.DATABASE_URL;
  delete env.NODE_OPTIONS;
  const npm = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  npm.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  npm.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<void>((r) => npm.once('exit', () => r()));
  let tree: number[] = [];
  t.teardown(async () => {
    // Whatever is left (a failed run): stopped here, then the data dir goes.
    for (const pid of tree.filter(alive)) process.kill(pid, 'SIGKILL');
    if (npm.exitCode === null) npm.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  const end = Date.now() + 180_000;
  while (!/^next: /m.test(out)) {
    if (npm.exitCode !== null || Date.now() > end) throw new Error(`no banner:\n${out}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  tree = await descendants(npm.pid!);
  const postgres = await Promise.all(
    tree.map(async (pid) => await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')),
  );
  t.ok(
    postgres.some((cmd) => cmd.includes('postgres') && cmd.includes(dir)),
    'the embedded PostgreSQL runs under npm start',
  );

  npm.kill('SIGTERM');
  await exited;
  const deadline = Date.now() + 60_000;
  while (tree.some(alive) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
  }
  const left = [];
  for (const pid of tree.filter(alive)) {
    left.push(
      `${pid}: ${(await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '?')).replace(/\0/g, ' ')}`,
    );
  }
  t.same(left, [], 'no process of the tree is left');
  t.match(out, /^stopped$/m, 'svc start stopped cleanly');
});
