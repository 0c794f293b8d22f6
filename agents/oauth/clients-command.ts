/**
 * `svc oauth clients list|bind|unbind`: the seller operator's side of dynamic registration
 * (issue 21). A registered client acts as nobody until bound here (or in the seller
 * console) to one principal of its agent; every bind and unbind is audited with the local
 * account that ran it. Works on the database of the running `svc start` (or DATABASE_URL).
 */
import { userInfo } from 'node:os';
import type { Config } from '../../shared/config.js';
import { commandServices } from '../../shared/infra/command-services.js';
import { createPool } from '../../shared/infra/pg.js';
import { TaskError } from '../../shared/errors/task-errors.js';
import { DEFAULT_AGENTS_SCHEMA } from '../store/migrations.js';
import {
  bindClient,
  listClients,
  migrateOAuthBindings,
  unbindClient,
  type BindingActor,
} from './bindings.js';
import { migrateOAuthStore } from './pg-adapter.js';
import { AGENT_KINDS, type AgentKind } from '../auth/principal.js';

export type ClientsAction =
  | { action: 'list'; agent?: string; json?: boolean }
  | { action: 'bind'; agent: string; clientId: string; principalId: string }
  | { action: 'unbind'; agent: string; clientId: string };

export interface ClientsCommandIo {
  out: { write(s: string): unknown };
  err: { write(s: string): unknown };
  /** The agents' schema (default `agents`). */
  schema?: string;
  /** Recorded as who did it (default `cli:<local user>`). */
  actor?: string;
}

function localActor(): string {
  let name = 'unknown';
  try {
    name = userInfo().username;
  } catch {
    // no passwd entry (containers): still audited, as unknown
  }
  const clean = name.replace(/[^\p{L}\p{N}_.@-]/gu, '_').slice(0, 100) || 'unknown';
  return `cli:${clean}`;
}

function table(rows: Awaited<ReturnType<typeof listClients>>): string {
  if (rows.length === 0) return 'no registered clients\n';
  const lines = rows.map((r) =>
    [
      r.agent.padEnd(9),
      r.client_id.padEnd(24),
      (r.principal_id
        ? `bound to ${r.principal_id}`
        : `unbound, expires ${r.expires_at ?? '-'}`
      ).padEnd(48),
      (r.client_name ?? '').slice(0, 40),
    ].join(' '),
  );
  return `${['agent'.padEnd(9), 'client_id'.padEnd(24), 'binding'.padEnd(48), 'name'].join(' ')}\n${lines.join('\n')}\n`;
}

/** Runs one action; resolves to the exit code (0 done, 1 refused, 2 bad arguments). */
export async function runClientsCommand(
  config: Config,
  a: ClientsAction,
  io: ClientsCommandIo,
): Promise<number> {
  if (
    a.action === 'list' &&
    a.agent !== undefined &&
    !(AGENT_KINDS as readonly string[]).includes(a.agent)
  ) {
    io.err.write(`--agent must be one of ${AGENT_KINDS.join(', ')}\n`);
    return 2;
  }
  const schema = io.schema ?? DEFAULT_AGENTS_SCHEMA;
  const services = await commandServices(config, { redis: 'none' });
  const pool = createPool({ connectionString: services.databaseUrl, max: 2 });
  const who: BindingActor = { actor: io.actor ?? localActor(), via: 'cli' };
  try {
    // A database `svc start` never ran on has no client yet; the tables are made empty.
    await migrateOAuthStore(pool, schema);
    await migrateOAuthBindings(pool, schema);
    if (a.action === 'list') {
      const rows = await listClients(pool, schema, a.agent as AgentKind | undefined);
      io.out.write(a.json ? `${JSON.stringify(rows, null, 2)}\n` : table(rows));
      return 0;
    }
    const r =
      a.action === 'bind'
        ? await bindClient(pool, schema, a, who)
        : await unbindClient(pool, schema, a, who);
    io.out.write(`${JSON.stringify({ ...r, action: a.action, by: who.actor })}\n`);
    return 0;
  } catch (err) {
    if (err instanceof TaskError) {
      io.err.write(`${err.code}: ${err.message}\n`);
      return err.code === 'VALIDATION_ERROR' ? 2 : 1;
    }
    throw err;
  } finally {
    await pool.end();
  }
}
