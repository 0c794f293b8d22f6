/**
 * The `identity.key_origins.webhook_signing` check (supplement §2.6): when a sender declares
 * the origin serving its webhook keys, the `jwks_uri` they resolved to must be on that host.
 * A declaration is an origin (`https://keys.seller.example`, which means its port too, 443
 * when none is written) or a bare host (`keys.seller.example`, any port; `host:port` pins
 * it). Host names compare as URL parsing leaves them (lower case, IDNA A-labels).
 */

/** The host (and port, when given) a declaration names, or null when it names none. */
export function declaredKeyHost(declared: string): { host: string; withPort: boolean } | null {
  const text = declared.trim();
  if (text === '') return null;
  let u: URL;
  try {
    u = new URL(text.includes('://') ? text : `https://${text}`);
  } catch {
    return null;
  }
  if (u.username || u.password || (u.pathname !== '/' && u.pathname !== '') || u.search || u.hash) {
    return null;
  }
  const withPort = text.includes('://') || /:\d+\/?$/.test(text);
  return { host: withPort ? u.host : u.hostname, withPort };
}

/** True when the declaration is well-formed (a trust file or capabilities field check). */
export function isKeyOriginDeclaration(declared: string): boolean {
  return declaredKeyHost(declared) !== null;
}

/** True when `jwksUri` is served from the declared key origin. */
export function keyOriginMatches(jwksUri: string, declared: string): boolean {
  const d = declaredKeyHost(declared);
  if (!d) return false;
  let u: URL;
  try {
    u = new URL(jwksUri);
  } catch {
    return false;
  }
  return (d.withPort ? u.host : u.hostname) === d.host;
}
