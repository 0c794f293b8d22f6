/**
 * The seller's operator console, the part's one entry point: `startConsole` wires the
 * store, the actions and the authentication onto a listening server (used by `svc start`
 * and `svc console`); the CLI's `svc deliveries` uses the same store and actions.
 */
import type { Logger } from '../../shared/infra/logger.js';
import type { Pool } from '../../shared/infra/pg.js';
import type { DeliveryQueue } from '../delivery/queue.js';
import { ConsoleActions } from './actions.js';
import { ConsoleAuth } from '../../shared/console/auth.js';
import { credentialsPath, ensureConsoleToken } from '../../shared/console/credentials.js';
import { listenConsole, type ConsoleServer } from './server.js';
import { ConsoleStore } from './store.js';

export { ConsoleActions, ConsoleActionError, type Operator } from './actions.js';
export { ConsoleStore } from './store.js';
export { consoleMigrations } from './migrations.js';
export { credentialsPath, ensureConsoleToken } from '../../shared/console/credentials.js';
export type { ConsoleServer } from './server.js';

export interface StartConsoleOptions {
  pool: Pool;
  queue: DeliveryQueue;
  schema: string;
  /** Where credentials.json lives (the token is made there on first start). */
  dataDir: string;
  /** A token to use instead of the file's. */
  token?: string;
  host?: string;
  port?: number;
  brand?: string;
  logger?: Logger;
}

export interface RunningConsole extends ConsoleServer {
  token: string;
  operator: string;
  credentialsFile: string | null;
}

export async function startConsole(o: StartConsoleOptions): Promise<RunningConsole> {
  const file = o.token ? null : credentialsPath(o.dataDir);
  const creds = o.token
    ? { token: o.token, operator: 'operator' }
    : await ensureConsoleToken(file!);
  const auth = new ConsoleAuth({ token: creds.token, operator: creds.operator });
  const store = new ConsoleStore(o.pool, o.schema);
  const actions = new ConsoleActions(o.pool, o.queue, o.schema, o.logger);
  const server = await listenConsole({
    store,
    actions,
    auth,
    ...(o.brand ? { brand: o.brand } : {}),
    ...(o.logger ? { logger: o.logger } : {}),
    ...(o.host ? { host: o.host } : {}),
    port: o.port ?? 0,
  });
  if (file) await ensureConsoleToken(file, server.url);
  return { ...server, token: creds.token, operator: creds.operator, credentialsFile: file };
}
