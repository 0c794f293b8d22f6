/**
 * The local deployment `svc start` runs, as the other commands on the same machine need
 * it: `<data dir>/deployment.json` (mode 0600: it holds the embedded server's URL with
 * its password) names the PostgreSQL and Redis it uses (the embedded server, a private
 * redis-server), its BullMQ prefix and its sender allow-list. `svc approve`, `svc worker`,
 * `svc send` and `svc receiver` read it for every setting their own environment leaves
 * unset, so one configuration serves every command. Removed when `svc start` stops; a
 * file whose process is gone is ignored.
 */
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';

export interface LocalDeployment {
  pid: number;
  databaseUrl: string;
  redisUrl: string;
  queuePrefix: string;
  senderAllowHosts: string[];
  keysDir: string;
}

export function deploymentFile(dataDir: string): string {
  return join(resolve(dataDir), 'deployment.json');
}

export async function writeDeployment(dataDir: string, d: LocalDeployment): Promise<void> {
  const file = deploymentFile(dataDir);
  // SVC_DATA_DIR may name a directory that does not exist yet (DATABASE_URL set: nothing
  // else created it).
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify(d, null, 2)}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The running `svc start`'s deployment under dataDir, or null. */
export async function readLiveDeployment(dataDir: string): Promise<LocalDeployment | null> {
  try {
    const d = JSON.parse(await readFile(deploymentFile(dataDir), 'utf8')) as LocalDeployment;
    return Number.isInteger(d.pid) && alive(d.pid) ? d : null;
  } catch {
    return null;
  }
}

export async function removeDeployment(dataDir: string): Promise<void> {
  await rm(deploymentFile(dataDir), { force: true });
}
