/**
 * The local credentials file: `<data dir>/credentials.json`, readable by its owner only
 * (0600), one top-level section per component that writes secrets (`agents`: the demo API
 * keys and bearer tokens of `svc start`; other components add their own, e.g. `console`).
 * A writer replaces only its own section and keeps the others, so components never clobber
 * each other; each write goes to a temporary file renamed over the old one (a reader never
 * sees half a file). The shape is documented in the README ("Demo credentials").
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

export const CREDENTIALS_FILE_NAME = 'credentials.json';

export function credentialsFilePath(dataDir: string): string {
  return join(resolve(dataDir), CREDENTIALS_FILE_NAME);
}

/** Every section; {} when there is no file yet. A file that is not a JSON object is an error. */
export async function readCredentials(dataDir: string): Promise<Record<string, unknown>> {
  const file = credentialsFilePath(dataDir);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw err;
  }
  const parsed: unknown = JSON.parse(text);
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new Error(`${file} is not a JSON object: move it away and start again`);
  }
  return parsed as Record<string, unknown>;
}

/** Replaces one section (keeping the others) and returns the file's path. */
export async function writeCredentialsSection(
  dataDir: string,
  section: string,
  value: unknown,
): Promise<string> {
  if (!/^[a-z][a-z0-9_-]{0,63}$/.test(section)) {
    throw new Error(`credentials section "${section}": lower-case letters, digits, _ and -`);
  }
  await mkdir(resolve(dataDir), { recursive: true });
  const file = credentialsFilePath(dataDir);
  const all = await readCredentials(dataDir);
  all[section] = value;
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(tmp, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, file);
  return file;
}
