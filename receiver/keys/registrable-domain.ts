/**
 * eTLD+1 (registrable domain) for the brand.json origin binding (supplement §2.6), from the
 * Public Suffix List snapshot that `tldts` embeds. The snapshot is pinned by pinning the
 * package to an exact version (package.json): it changes only when that version is bumped
 * on purpose, never at run time (no list is fetched), so every instance decides alike.
 *
 * Private-section suffixes count (`github.io`, `appspot.com`...): two tenants of one hosting
 * suffix are different operators. An IP literal or a single-label host (localhost) has no
 * registrable domain; it binds only to itself.
 */
import { getDomain } from 'tldts';

/** The embedded list: tldts 7.5.4, published 2026-11-15 (bump both together). */
export const PSL_SNAPSHOT = { library: 'tldts', version: '7.5.4', date: '2026-11-15' } as const;

/** The registrable domain of a host name, or the host itself when it has none. */
export function registrableDomain(host: string): string {
  const h = host
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
  const domain = getDomain(h, { allowPrivateDomains: true });
  return domain ?? h;
}
