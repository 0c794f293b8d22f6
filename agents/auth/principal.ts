/**
 * Principals (spec "Principal"): the identity credentials map to, with permissions per
 * resource. Each agent has its own principals; nothing here crosses agents.
 */
import { z } from 'zod';

export const AGENT_KINDS = ['sales', 'creative', 'signals'] as const;
export type AgentKind = (typeof AGENT_KINDS)[number];

export const PERMISSION_VALUES = ['read', 'write', 'delete', 'approve'] as const;
export type Permission = (typeof PERMISSION_VALUES)[number];

export const RESOURCES = ['products', 'media_buys', 'creatives', 'reports'] as const;
export type Resource = (typeof RESOURCES)[number];

export type Permissions = Partial<Record<Resource, Permission[]>>;

export const PermissionsSchema = z.strictObject({
  products: z.array(z.enum(PERMISSION_VALUES)).optional(),
  media_buys: z.array(z.enum(PERMISSION_VALUES)).optional(),
  creatives: z.array(z.enum(PERMISSION_VALUES)).optional(),
  reports: z.array(z.enum(PERMISSION_VALUES)).optional(),
});

/**
 * A buyer agent's commercial relationship with the seller (onboarding record): `agent_billable`
 * may be invoiced for what the seller offers; `passthrough_only` has no payments relationship,
 * so only the operator can be billed (sync_accounts: BILLING_NOT_PERMITTED_FOR_AGENT).
 */
export const COMMERCIAL_RELATIONSHIPS = ['agent_billable', 'passthrough_only'] as const;
export type CommercialRelationship = (typeof COMMERCIAL_RELATIONSHIPS)[number];

export interface Principal {
  agent: AgentKind;
  principal_id: string;
  permissions: Permissions;
  /** How the caller proved it: for logs and `call_<brand>_agent` diagnostics. */
  method: 'jwt' | 'api_key';
  /** False when the agent bars this principal altogether (signals: AGENT_ACCESS_DENIED). */
  agentAccess: boolean;
}

export interface RequiredPermission {
  resource: Resource;
  permission: Permission;
}

export function hasPermission(p: Principal, required: RequiredPermission): boolean {
  return p.permissions[required.resource]?.includes(required.permission) ?? false;
}

export const ALL_PERMISSIONS: Permissions = {
  products: ['read', 'write', 'delete', 'approve'],
  media_buys: ['read', 'write', 'delete', 'approve'],
  creatives: ['read', 'write', 'delete', 'approve'],
  reports: ['read', 'write', 'delete', 'approve'],
};

/**
 * OAuth scopes (`<brand>:products`...) to permissions: a scope grants the everyday
 * rights on its resource; `approve` is never granted by a scope (operators only).
 */
export function permissionsFromScopes(scope: string, scopePrefix: string): Permissions {
  const out: Permissions = {};
  const add = (r: Resource, perms: Permission[]) => {
    out[r] = [...new Set([...(out[r] ?? []), ...perms])];
  };
  for (const s of scope.split(/\s+/)) {
    if (!s.startsWith(scopePrefix)) continue;
    switch (s.slice(scopePrefix.length)) {
      case 'products':
        add('products', ['read']);
        break;
      case 'media_buys':
        add('media_buys', ['read', 'write', 'delete']);
        add('reports', ['read']);
        break;
      case 'creatives':
        add('creatives', ['read', 'write', 'delete']);
        break;
      case 'reports':
        add('reports', ['read']);
        break;
    }
  }
  return out;
}
