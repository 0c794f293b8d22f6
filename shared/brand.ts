/**
 * The brand profile: the one place that spells the protocol's brand word.
 *
 * The spec writes `svc` where the real protocol writes `adcp`; every branded identifier
 * (signature tag, JWK purpose member, legacy header names, tool and task names) is
 * derived here so one setting switches the whole build between the two.
 */

export const BRANDS = ['svc', 'adcp'] as const;
export type Brand = (typeof BRANDS)[number];
export const DEFAULT_BRAND: Brand = 'svc';

export interface BrandProfile {
  readonly brand: Brand;
  /** `tag` of RFC 9421 webhook signatures, e.g. `svc/webhook-signing/v1`. */
  readonly webhookTag: string;
  /** `tag` of request signatures; a webhook route must reject it. */
  readonly requestTag: string;
  /** Custom JWK member naming the key's purpose, e.g. `svc_use`. */
  readonly useMember: string;
  /** Legacy HMAC header carrying `sha256=<hex>`. */
  readonly hmacSignatureHeader: string;
  /** Legacy HMAC header carrying the Unix timestamp. */
  readonly hmacTimestampHeader: string;
  /** The generic client tool that runs any task against any agent. */
  readonly callAgentTool: string;
  /** The capability-document task. */
  readonly capabilitiesTask: string;
  /** OAuth scope prefix, e.g. `svc:` in `svc:media_buys`. */
  readonly scopePrefix: string;
}

const profiles = new Map<Brand, BrandProfile>();

export function isBrand(value: unknown): value is Brand {
  return typeof value === 'string' && (BRANDS as readonly string[]).includes(value);
}

export function brandProfile(brand: Brand = DEFAULT_BRAND): BrandProfile {
  let profile = profiles.get(brand);
  if (!profile) {
    const upper = brand.toUpperCase();
    profile = Object.freeze({
      brand,
      webhookTag: `${brand}/webhook-signing/v1`,
      requestTag: `${brand}/request-signing/v1`,
      useMember: `${brand}_use`,
      hmacSignatureHeader: `X-${upper}-Signature`,
      hmacTimestampHeader: `X-${upper}-Timestamp`,
      callAgentTool: `call_${brand}_agent`,
      capabilitiesTask: `get_${brand}_capabilities`,
      scopePrefix: `${brand}:`,
    });
    profiles.set(brand, profile);
  }
  return profile;
}
