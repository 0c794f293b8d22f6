/**
 * The receiver's trust file: which senders are trusted, how each one's keys are found
 * (inline JWKS, a JWKS URL, or a seller agent URL discovered through brand.json), the
 * optional publisher pins and revocation lists, and the legacy (HMAC / Bearer)
 * registrations bound to a path prefix.
 *
 * The auth mode of a request comes from this file (the registration for its path), never
 * from the request itself (supplement §1 pre-checks).
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { JsonParseError, parseStrictJson } from '../../shared/json/strict-parse.js';
import { legacyCredentialProblem } from '../../shared/legacy/credential.js';
import { isKeyOriginDeclaration } from '../keys/key-origin.js';
import { SvcError } from '../../shared/errors/base.js';

/** A URL the receiver fetches: https, or http for loopback tests (the fetch layer decides). */
const fetchUrl = z.string().refine(
  (v) => {
    try {
      const u = new URL(v);
      return (u.protocol === 'https:' || u.protocol === 'http:') && u.username === '' && !u.hash;
    } catch {
      return false;
    }
  },
  { message: 'must be an absolute http(s) URL without credentials or fragment' },
);

const isoDateTime = z.iso.datetime({ offset: true });

/** Published JWK: members are checked when keys are used; here only what identifies it. */
const jwk = z.looseObject({ kid: z.string().min(1), kty: z.string().min(1) });

const jwks = z.strictObject({ keys: z.array(jwk) });

/** `agent-signing-key.json`: kid and kty required, `revoked_at` optional, extras allowed. */
const pinnedKey = z.looseObject({
  kid: z.string().min(1),
  kty: z.string().min(1),
  revoked_at: isoDateTime.optional(),
});

/** Either the publisher's adagents.json (whose `authorized_agents[]` entry for this agent
 * pins) or the pinned keys inline. */
const pins = z
  .strictObject({
    adagents_url: fetchUrl.optional(),
    /** The agent URL to look up in adagents.json (default: the sender's `agent_url`). */
    agent_url: fetchUrl.optional(),
    signing_keys: z.array(pinnedKey).optional(),
  })
  .superRefine((p, ctx) => {
    if ((p.adagents_url === undefined) === (p.signing_keys === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [p.adagents_url === undefined ? 'adagents_url' : 'signing_keys'],
        message: 'exactly one of adagents_url or signing_keys is required',
      });
    }
    if (p.agent_url !== undefined && p.adagents_url === undefined) {
      ctx.addIssue({ code: 'custom', path: ['agent_url'], message: 'only with adagents_url' });
    }
  });

/** An origin (`https://keys.seller.example`) or bare host serving the sender's webhook keys. */
const keyOrigin = z.string().refine(isKeyOriginDeclaration, {
  message: 'must be an origin (https://host[:port]) or a host name',
});

/** Inline twin of capabilities `identity.key_origins` (only the webhook purpose is used). */
const keyOrigins = z.strictObject({ webhook_signing: keyOrigin });

const senderId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/, 'must be 1-100 of [A-Za-z0-9._:-]');

const horizon = z
  .int()
  .min(1)
  .max(30 * 24 * 3600);

const sender = z
  .strictObject({
    id: senderId,
    jwks: jwks.optional(),
    jwks_uri: fetchUrl.optional(),
    agent_url: fetchUrl.optional(),
    /**
     * The seller's capability document (GET, JSON): its `identity.key_origins`, its
     * `delivery_retry_horizon_seconds`, and, with `agent_url`, the `identity.brand_json_url`
     * bootstrap instead of the agent origin's brand.json.
     */
    capabilities_url: fetchUrl.optional(),
    /** Overrides the capabilities' `identity.key_origins`. */
    key_origins: keyOrigins.optional(),
    pins: pins.optional(),
    revocation_url: fetchUrl.optional(),
    delivery_retry_horizon_seconds: horizon.optional(),
  })
  .superRefine((s, ctx) => {
    const sources = (['jwks', 'jwks_uri', 'agent_url'] as const).filter((k) => s[k] !== undefined);
    if (sources.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        path: sources.length === 0 ? ['jwks'] : [sources[1] as string],
        message: 'exactly one of jwks, jwks_uri or agent_url is required',
      });
    }
    const kids = new Set<string>();
    s.jwks?.keys.forEach((k, i) => {
      // Same rule as a fetched JWKS: a repeated kid makes the whole set ambiguous.
      if (kids.has(k.kid)) {
        ctx.addIssue({
          code: 'custom',
          path: ['jwks', 'keys', i, 'kid'],
          message: `duplicate kid "${k.kid}"`,
        });
      }
      kids.add(k.kid);
    });
    if (s.key_origins && s.jwks) {
      ctx.addIssue({
        code: 'custom',
        path: ['key_origins'],
        message: 'only with jwks_uri or agent_url (an inline jwks is served from nowhere)',
      });
    }
    if (s.pins?.adagents_url && !s.pins.agent_url && !s.agent_url) {
      ctx.addIssue({
        code: 'custom',
        path: ['pins', 'agent_url'],
        message: 'required when the sender has no agent_url',
      });
    }
  });

/** The product-wide legacy credential rule: 32+ characters, not a repeated pattern. */
const legacyCredential = (scheme: 'Bearer' | 'HMAC-SHA256') =>
  z.string().superRefine((v, ctx) => {
    const problem = legacyCredentialProblem(v, { scheme });
    if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
  });

const pathPrefix = z
  .string()
  .regex(/^\/[\x21-\x7e]*$/, 'must start with "/" and hold only visible ASCII')
  .refine((p) => !p.includes('?') && !p.includes('#'), {
    message: 'must not contain "?" or "#"',
  });

const legacy = z.discriminatedUnion('scheme', [
  z.strictObject({
    path_prefix: pathPrefix,
    sender: senderId,
    scheme: z.literal('HMAC-SHA256'),
    /** Several while rotating: any one verifies. */
    secrets: z.array(legacyCredential('HMAC-SHA256')).min(1).max(8),
  }),
  z.strictObject({
    path_prefix: pathPrefix,
    sender: senderId,
    scheme: z.literal('Bearer'),
    token: legacyCredential('Bearer'),
  }),
]);

const trustSchema = z
  .strictObject({
    $schema: z.string().optional(),
    senders: z.array(sender),
    /** A list that applies to every sender (each sender may also name its own). */
    revocation_url: fetchUrl.optional(),
    /** Kids revoked by the operator, whatever the lists say (PolledRevocationCheck). */
    revoked_kids: z.array(z.string().min(1)).default([]),
    delivery_retry_horizon_seconds: horizon.optional(),
    legacy: z.array(legacy).default([]),
  })
  .superRefine((t, ctx) => {
    const seen = new Set<string>();
    t.senders.forEach((s, i) => {
      if (seen.has(s.id)) {
        ctx.addIssue({
          code: 'custom',
          path: ['senders', i, 'id'],
          message: `duplicate id "${s.id}"`,
        });
      }
      seen.add(s.id);
    });
    const prefixes = new Set<string>();
    t.legacy.forEach((l, i) => {
      const key = normalisePrefix(l.path_prefix);
      if (prefixes.has(key)) {
        ctx.addIssue({
          code: 'custom',
          path: ['legacy', i, 'path_prefix'],
          message: `duplicate path_prefix "${l.path_prefix}"`,
        });
      }
      prefixes.add(key);
    });
  });

export type TrustConfig = z.output<typeof trustSchema>;
export type SenderTrust = TrustConfig['senders'][number];
export type LegacyRegistration = TrustConfig['legacy'][number];
export type PublisherPins = NonNullable<SenderTrust['pins']>;
export type PinnedKey = z.output<typeof pinnedKey>;

/** A trust file that cannot be used; `field` names the offending member, e.g. `senders[1].jwks_uri`. */
export class TrustFileError extends SvcError {
  static override readonly code = 'ERR_TRUST_FILE';

  readonly field: string;
  constructor(field: string, message: string) {
    super(field ? `trust file: ${field}: ${message}` : `trust file: ${message}`);
    this.name = 'TrustFileError';
    this.field = field;
  }
}

function fieldPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out ? `.${String(p)}` : String(p);
  }
  return out;
}

/** Validates an already-parsed trust document. */
export function parseTrust(value: unknown): TrustConfig {
  const parsed = trustSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    // An unknown member is reported by name so a typo points at itself.
    if (issue.code === 'unrecognized_keys') {
      const base = fieldPath(issue.path);
      const key = issue.keys[0]!;
      throw new TrustFileError(base ? `${base}.${key}` : key, 'unknown member');
    }
    throw new TrustFileError(fieldPath(issue.path), issue.message);
  }
  return parsed.data;
}

/** Reads, strictly parses (duplicate keys rejected) and validates a trust file. */
export async function loadTrustFile(path: string): Promise<TrustConfig> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (err) {
    throw new TrustFileError('', `cannot read ${path}: ${(err as Error).message}`);
  }
  let value: unknown;
  try {
    value = parseStrictJson(bytes);
  } catch (err) {
    if (err instanceof JsonParseError) {
      const what =
        err.code === 'duplicate_key'
          ? `duplicate key ${err.duplicateKeys.join(', ')}`
          : err.message;
      throw new TrustFileError('', `${path} is not valid JSON: ${what}`);
    }
    throw err;
  }
  return parseTrust(value);
}

export function findSender(trust: TrustConfig, id: string): SenderTrust | undefined {
  return trust.senders.find((s) => s.id === id);
}

function normalisePrefix(prefix: string): string {
  return prefix.length > 1 && prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
}

/** True when `path` is the prefix itself or lies below it on a segment boundary. */
function underPrefix(path: string, prefix: string): boolean {
  const p = normalisePrefix(prefix);
  if (p === '/') return true;
  return path === p || path.startsWith(`${p}/`);
}

export type RouteDecision =
  { mode: 'rfc9421' } | { mode: 'hmac' | 'bearer'; registration: LegacyRegistration };

/**
 * The auth mode for a request path: the legacy registration with the longest matching
 * prefix (segment-aligned: `/hooks/a` covers `/hooks/a/x`, not `/hooks/ab`), else RFC 9421.
 * The path is matched as received (no percent-decoding); a query string is ignored.
 */
export function routeRegistration(trust: TrustConfig, path: string): RouteDecision {
  const bare = path.split(/[?#]/, 1)[0] ?? '';
  let best: LegacyRegistration | undefined;
  for (const reg of trust.legacy) {
    if (!underPrefix(bare, reg.path_prefix)) continue;
    if (
      !best ||
      normalisePrefix(reg.path_prefix).length > normalisePrefix(best.path_prefix).length
    ) {
      best = reg;
    }
  }
  if (!best) return { mode: 'rfc9421' };
  return { mode: best.scheme === 'Bearer' ? 'bearer' : 'hmac', registration: best };
}
