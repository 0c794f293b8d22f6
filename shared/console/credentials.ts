/**
 * The consoles' sections of the local credentials file (`<data dir>/credentials.json`,
 * 0600, one section per component: shared/infra/credentials-file.ts): the seller console's
 * `console` and the sidecar's `receiver_console`, each `{url?, operator, token}`.
 */
import { randomBytes } from 'node:crypto';
import { dirname } from 'node:path';
import {
  credentialsFilePath,
  readCredentials,
  writeCredentialsSection,
} from '../infra/credentials-file.js';

export interface ConsoleCredentials {
  url?: string;
  operator: string;
  token: string;
}

export function credentialsPath(dataDir: string): string {
  return credentialsFilePath(dataDir);
}

/**
 * The token of a console's section from the file at `path`, or a new one written there
 * (first start); the section's url is kept current.
 */
export async function ensureConsoleToken(
  path: string,
  url?: string,
  section = 'console',
): Promise<ConsoleCredentials> {
  const dataDir = dirname(path);
  const c = (await readCredentials(dataDir))[section] as Partial<ConsoleCredentials> | undefined;
  const token = typeof c?.token === 'string' && c.token.length >= 16 ? c.token : null;
  const creds: ConsoleCredentials = {
    operator: typeof c?.operator === 'string' && c.operator ? c.operator : 'operator',
    token: token ?? `sct_${randomBytes(24).toString('base64url')}`,
    ...(url ? { url } : c?.url ? { url: c.url } : {}),
  };
  if (!token || (url && c?.url !== url)) await writeCredentialsSection(dataDir, section, creds);
  return creds;
}
