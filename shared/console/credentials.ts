/**
 * The consoles' sections of the demo-credentials file (`<data dir>/demo-credentials.json`,
 * mode 0600, one member per component): read-modify-write that keeps every other member,
 * written to a temporary file and renamed so a reader never sees half a file.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

export const CREDENTIALS_FILE = 'demo-credentials.json';

export interface ConsoleCredentials {
  url?: string;
  operator: string;
  token: string;
}

export function credentialsPath(dataDir: string): string {
  return join(dataDir, CREDENTIALS_FILE);
}

async function readAll(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw err;
  }
  const v: unknown = JSON.parse(text);
  if (!v || typeof v !== 'object' || Array.isArray(v)) {
    throw new Error(`${path} does not hold a JSON object: fix or remove it`);
  }
  return v as Record<string, unknown>;
}

/** Merges `section` into the file under `name`, keeping the other members; 0600. */
export async function writeCredentialsSection(
  path: string,
  name: string,
  section: Record<string, unknown>,
): Promise<void> {
  const all = await readAll(path);
  const prev = all[name];
  all[name] = { ...(prev && typeof prev === 'object' ? prev : {}), ...section };
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(tmp, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, path);
}

/**
 * The token of a console's section (`console`: the seller's; `receiver_console`: the
 * sidecar's) from the file, or a new one written there (first start).
 */
export async function ensureConsoleToken(
  path: string,
  url?: string,
  section = 'console',
): Promise<ConsoleCredentials> {
  const all = await readAll(path);
  const c = all[section] as Partial<ConsoleCredentials> | undefined;
  const token = typeof c?.token === 'string' && c.token.length >= 16 ? c.token : null;
  const creds: ConsoleCredentials = {
    operator: typeof c?.operator === 'string' && c.operator ? c.operator : 'operator',
    token: token ?? `sct_${randomBytes(24).toString('base64url')}`,
    ...(url ? { url } : {}),
  };
  if (!token || (url && c?.url !== url)) {
    await writeCredentialsSection(path, section, { ...creds });
  }
  return creds;
}
