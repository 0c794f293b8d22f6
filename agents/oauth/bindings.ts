/**
 * Who a dynamically registered OAuth client acts as (issue 21: "a client has no principal
 * until the seller's operator binds it"). RFC 7591 registration only creates a client; the
 * operator binds it to one principal of its agent (`svc oauth clients bind`, or the seller
 * console), and every binding and unbinding is audited. Tokens of an unbound client carry
 * no principal: the token endpoint refuses client_credentials for it and the agents'
 * Authenticator refuses its access tokens. Unbound clients expire (`expires_at` on their
 * `oauth_store` row); binding one clears its expiry.
 */
import { assertSchemaName, migrate, withTransaction, type Pool } from '../../shared/infra/pg.js';
import { taskError } from '../runtime/errors.js';
import { AGENT_KINDS, type AgentKind, type Permissions } from '../auth/principal.js';

/** oidc-provider's client ids (21 url-safe characters by default); generous but bounded. */
const CLIENT_ID = /^[A-Za-z0-9_-]{1,128}$/;
const PRINCIPAL_ID = /^[A-Za-z0-9_.:@-]{1,255}$/;
/** Who did it, as the audit records: the console operator or the local account. */
const ACTOR = /^[\p{L}\p{N}_.:@ -]{1,128}$/u;

export async function migrateOAuthBindings(pool: Pool, schema: string): Promise<void> {
  // Through migrate(), under its advisory lock: concurrent starters never race on the catalog.
  await migrate(pool, assertSchemaName(schema), [
    {
      id: 'oauth_bindings_001',
      sql: (s) => `
        CREATE TABLE IF NOT EXISTS ${s}.oauth_client_bindings (
          agent text NOT NULL,
          client_id text NOT NULL,
          principal_id text NOT NULL,
          bound_by text NOT NULL,
          bound_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (agent, client_id)
        );
        CREATE TABLE IF NOT EXISTS ${s}.oauth_binding_audit (
          id bigserial PRIMARY KEY,
          at timestamptz NOT NULL DEFAULT now(),
          agent text NOT NULL,
          client_id text NOT NULL,
          principal_id text,
          action text NOT NULL,
          actor text NOT NULL,
          via text NOT NULL
        );`,
    },
  ]);
}

export interface BoundPrincipal {
  principalId: string;
  permissions: Permissions;
  signalsAccess: boolean;
}

/** The principal a client is bound to (with its current permissions), or null. */
export async function boundPrincipal(
  pool: Pool,
  schema: string,
  agent: AgentKind,
  clientId: string,
): Promise<BoundPrincipal | null> {
  if (!CLIENT_ID.test(clientId)) return null;
  const s = assertSchemaName(schema);
  // The binding first: an unbound client (the common case) needs no principal lookup.
  const binding = await pool.query<{ principal_id: string }>(
    `SELECT principal_id FROM ${s}.oauth_client_bindings WHERE agent = $1 AND client_id = $2`,
    [agent, clientId],
  );
  const principalId = binding.rows[0]?.principal_id;
  if (principalId === undefined) return null;
  const { rows } = await pool.query<{ permissions: Permissions; signals_access: boolean }>(
    `SELECT permissions, signals_access FROM ${s}.principals
      WHERE agent = $1 AND principal_id = $2`,
    [agent, principalId],
  );
  const r = rows[0];
  return r ? { principalId, permissions: r.permissions, signalsAccess: r.signals_access } : null;
}

export interface ClientRow {
  agent: AgentKind;
  client_id: string;
  client_name: string | null;
  grant_types: string[];
  registered_at: string | null;
  /** When an unbound client is forgotten; null once bound. */
  expires_at: string | null;
  principal_id: string | null;
  bound_by: string | null;
  bound_at: string | null;
}

/** Every registered client (not expired) with its binding, newest first; one agent or all. */
export async function listClients(
  pool: Pool,
  schema: string,
  agent?: AgentKind,
): Promise<ClientRow[]> {
  const s = assertSchemaName(schema);
  const { rows } = await pool.query<{
    namespace: AgentKind;
    id: string;
    payload: { client_name?: string; grant_types?: string[]; client_id_issued_at?: number };
    expires_at: Date | null;
    principal_id: string | null;
    bound_by: string | null;
    bound_at: Date | null;
  }>(
    `SELECT c.namespace, c.id, c.payload, c.expires_at, b.principal_id, b.bound_by, b.bound_at
       FROM ${s}.oauth_store c
       LEFT JOIN ${s}.oauth_client_bindings b ON b.agent = c.namespace AND b.client_id = c.id
      WHERE c.model = 'Client' AND ($1::text IS NULL OR c.namespace = $1)
        AND (c.expires_at IS NULL OR c.expires_at > now())
      ORDER BY (c.payload->>'client_id_issued_at')::bigint DESC NULLS LAST, c.id
      LIMIT 1000`,
    [agent ?? null],
  );
  return rows.map((r) => ({
    agent: r.namespace,
    client_id: r.id,
    client_name: typeof r.payload.client_name === 'string' ? r.payload.client_name : null,
    grant_types: Array.isArray(r.payload.grant_types) ? r.payload.grant_types : [],
    registered_at:
      typeof r.payload.client_id_issued_at === 'number'
        ? new Date(r.payload.client_id_issued_at * 1000).toISOString()
        : null,
    expires_at: r.expires_at?.toISOString() ?? null,
    principal_id: r.principal_id,
    bound_by: r.bound_by,
    bound_at: r.bound_at?.toISOString() ?? null,
  }));
}

export interface BindingActor {
  /** The operator's name (console) or the local account (`svc oauth`). */
  actor: string;
  via: 'cli' | 'console';
}

function checkAgent(agent: unknown): AgentKind {
  if (typeof agent !== 'string' || !(AGENT_KINDS as readonly string[]).includes(agent)) {
    throw taskError('VALIDATION_ERROR', `agent must be one of ${AGENT_KINDS.join(', ')}`, {
      field: 'agent',
    });
  }
  return agent as AgentKind;
}

function checkClientId(clientId: unknown): string {
  if (typeof clientId !== 'string' || !CLIENT_ID.test(clientId)) {
    throw taskError('VALIDATION_ERROR', 'client_id must be 1-128 of [A-Za-z0-9_-]', {
      field: 'client_id',
    });
  }
  return clientId;
}

function checkActor(who: BindingActor): BindingActor {
  if (!ACTOR.test(who.actor)) {
    throw taskError('VALIDATION_ERROR', 'the acting operator name is malformed', {
      field: 'actor',
    });
  }
  return who;
}

/**
 * Binds a registered client to a principal of the same agent (replacing an earlier
 * binding), clears the client's expiry and audits it, in one transaction.
 */
export async function bindClient(
  pool: Pool,
  schema: string,
  input: { agent: unknown; clientId: unknown; principalId: unknown },
  who: BindingActor,
): Promise<{ agent: AgentKind; client_id: string; principal_id: string }> {
  const s = assertSchemaName(schema);
  const agent = checkAgent(input.agent);
  const clientId = checkClientId(input.clientId);
  if (typeof input.principalId !== 'string' || !PRINCIPAL_ID.test(input.principalId)) {
    throw taskError('VALIDATION_ERROR', 'principal_id must be 1-255 of [A-Za-z0-9_.:@-]', {
      field: 'principal_id',
    });
  }
  const principalId = input.principalId;
  checkActor(who);
  return withTransaction(pool, async (db) => {
    const client = await db.query(
      `SELECT 1 FROM ${s}.oauth_store WHERE namespace = $1 AND model = 'Client' AND id = $2
          AND (expires_at IS NULL OR expires_at > now()) FOR UPDATE`,
      [agent, clientId],
    );
    if (client.rowCount === 0) {
      throw taskError(
        'REFERENCE_NOT_FOUND',
        `no registered client ${clientId} at the ${agent} agent`,
        {
          field: 'client_id',
        },
      );
    }
    const principal = await db.query(
      `SELECT 1 FROM ${s}.principals WHERE agent = $1 AND principal_id = $2`,
      [agent, principalId],
    );
    if (principal.rowCount === 0) {
      throw taskError('REFERENCE_NOT_FOUND', `no principal ${principalId} at the ${agent} agent`, {
        field: 'principal_id',
      });
    }
    await db.query(
      `INSERT INTO ${s}.oauth_client_bindings (agent, client_id, principal_id, bound_by)
       VALUES ($1, $2, $3, $4)
       ON CONFLICT (agent, client_id) DO UPDATE SET principal_id = EXCLUDED.principal_id,
         bound_by = EXCLUDED.bound_by, bound_at = now()`,
      [agent, clientId, principalId, who.actor],
    );
    await db.query(
      `UPDATE ${s}.oauth_store SET expires_at = NULL
        WHERE namespace = $1 AND model = 'Client' AND id = $2`,
      [agent, clientId],
    );
    await db.query(
      `INSERT INTO ${s}.oauth_binding_audit (agent, client_id, principal_id, action, actor, via)
       VALUES ($1, $2, $3, 'bind', $4, $5)`,
      [agent, clientId, principalId, who.actor, who.via],
    );
    return { agent, client_id: clientId, principal_id: principalId };
  });
}

/**
 * Unbinds a client: its tokens stop working at once (the Authenticator looks the binding
 * up on every call) and it may not obtain new ones. Audited; NOT_FOUND when it was not bound.
 */
export async function unbindClient(
  pool: Pool,
  schema: string,
  input: { agent: unknown; clientId: unknown },
  who: BindingActor,
): Promise<{ agent: AgentKind; client_id: string; principal_id: string }> {
  const s = assertSchemaName(schema);
  const agent = checkAgent(input.agent);
  const clientId = checkClientId(input.clientId);
  checkActor(who);
  return withTransaction(pool, async (db) => {
    const { rows } = await db.query<{ principal_id: string }>(
      `DELETE FROM ${s}.oauth_client_bindings WHERE agent = $1 AND client_id = $2
       RETURNING principal_id`,
      [agent, clientId],
    );
    const was = rows[0];
    if (!was) {
      throw taskError(
        'REFERENCE_NOT_FOUND',
        `client ${clientId} is not bound at the ${agent} agent`,
        {
          field: 'client_id',
        },
      );
    }
    await db.query(
      `INSERT INTO ${s}.oauth_binding_audit (agent, client_id, principal_id, action, actor, via)
       VALUES ($1, $2, $3, 'unbind', $4, $5)`,
      [agent, clientId, was.principal_id, who.actor, who.via],
    );
    return { agent, client_id: clientId, principal_id: was.principal_id };
  });
}

export interface BindingAuditEntry {
  at: string;
  agent: AgentKind;
  client_id: string;
  principal_id: string | null;
  action: 'bind' | 'unbind';
  actor: string;
  via: string;
}

export async function bindingAudit(
  pool: Pool,
  schema: string,
  limit = 100,
): Promise<BindingAuditEntry[]> {
  const s = assertSchemaName(schema);
  const { rows } = await pool.query<BindingAuditEntry & { at: Date }>(
    `SELECT at, agent, client_id, principal_id, action, actor, via
       FROM ${s}.oauth_binding_audit ORDER BY id DESC LIMIT $1`,
    [Math.max(1, Math.min(1000, limit))],
  );
  return rows.map((r) => ({ ...r, at: r.at.toISOString() }));
}

/** A token was issued to the client: it is in use, so it no longer expires. */
export async function markClientUsed(
  pool: Pool,
  schema: string,
  agent: AgentKind,
  clientId: string,
): Promise<void> {
  await pool.query(
    `UPDATE ${assertSchemaName(schema)}.oauth_store SET expires_at = NULL
      WHERE namespace = $1 AND model = 'Client' AND id = $2 AND expires_at IS NOT NULL`,
    [agent, clientId],
  );
}
