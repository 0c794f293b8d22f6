/**
 * Onboarding (the spec's out-of-band step): create or update a principal at one agent
 * and issue it an API key. Only the key's SHA-256 is stored; the key is shown once.
 */
import { randomBytes } from 'node:crypto';
import { assertSchemaName, withTransaction, type Pool } from '../../shared/infra/pg.js';
import { taskError } from '../runtime/errors.js';
import { hashApiKey } from './authenticate.js';
import {
  COMMERCIAL_RELATIONSHIPS,
  PermissionsSchema,
  type AgentKind,
  type CommercialRelationship,
  type Permissions,
} from './principal.js';

const PRINCIPAL_ID = /^[A-Za-z0-9_.:@-]{1,255}$/;

export async function onboardPrincipal(
  pool: Pool,
  schema: string,
  input: {
    agent: AgentKind;
    principalId: string;
    name?: string;
    permissions: Permissions;
    agentAccess?: boolean;
    /** Default `agent_billable` (see CommercialRelationship). */
    commercialRelationship?: CommercialRelationship;
  },
): Promise<{ agent: AgentKind; principal_id: string; api_key: string }> {
  const s = assertSchemaName(schema);
  if (!PRINCIPAL_ID.test(input.principalId)) {
    throw taskError('VALIDATION_ERROR', 'principal_id must be 1-255 of [A-Za-z0-9_.:@-]', {
      field: 'principal_id',
    });
  }
  const permissions = PermissionsSchema.safeParse(input.permissions);
  if (!permissions.success) {
    throw taskError(
      'VALIDATION_ERROR',
      'permissions must map products/media_buys/creatives/reports to read/write/delete/approve',
      {
        field: 'permissions',
      },
    );
  }
  const relationship = input.commercialRelationship ?? 'agent_billable';
  if (!(COMMERCIAL_RELATIONSHIPS as readonly string[]).includes(relationship)) {
    throw taskError(
      'VALIDATION_ERROR',
      `commercial_relationship must be one of ${COMMERCIAL_RELATIONSHIPS.join(', ')}`,
      { field: 'commercial_relationship' },
    );
  }
  const apiKey = `${input.agent}_${randomBytes(24).toString('base64url')}`;
  await withTransaction(pool, async (db) => {
    await db.query(
      `INSERT INTO ${s}.principals
         (agent, principal_id, name, permissions, signals_access, commercial_relationship)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (agent, principal_id) DO UPDATE SET name = EXCLUDED.name,
         permissions = EXCLUDED.permissions, signals_access = EXCLUDED.signals_access,
         commercial_relationship = EXCLUDED.commercial_relationship`,
      [
        input.agent,
        input.principalId,
        input.name ?? input.principalId,
        permissions.data,
        input.agentAccess ?? true,
        relationship,
      ],
    );
    await db.query(
      `INSERT INTO ${s}.api_keys (key_hash, agent, principal_id) VALUES ($1, $2, $3)`,
      [hashApiKey(apiKey), input.agent, input.principalId],
    );
  });
  return { agent: input.agent, principal_id: input.principalId, api_key: apiKey };
}

/** Revokes every API key of a principal at an agent; resolves to how many. */
export async function revokeApiKeys(
  pool: Pool,
  schema: string,
  agent: AgentKind,
  principalId: string,
): Promise<number> {
  const { rowCount } = await pool.query(
    `DELETE FROM ${assertSchemaName(schema)}.api_keys WHERE agent = $1 AND principal_id = $2`,
    [agent, principalId],
  );
  return rowCount ?? 0;
}
