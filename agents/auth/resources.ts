/**
 * The OAuth protected resources of one agent origin (RFC 9728 / RFC 8707): the origin
 * itself and its two endpoints. Metadata is served for each, a token may be requested
 * for (and bound to) any of them, and the agent accepts each as a token audience.
 */
export const AGENT_ENDPOINT_PATHS = ['/mcp', '/a2a'] as const;

export function oauthResources(origin: string): string[] {
  const base = origin.replace(/\/$/, '');
  return [base, ...AGENT_ENDPOINT_PATHS.map((p) => `${base}${p}`)];
}
