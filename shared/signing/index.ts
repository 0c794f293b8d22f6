/**
 * RFC 9421 webhook signatures, the package entry point `svc-webhooks/signing`: sign and
 * verify one request, the keys and brand profiles they use, `@target-uri` canonicalisation,
 * Content-Digest, and the error codes a verifier answers with.
 */
export { signWebhook, newNonce, SignError, type SignOptions, type WebhookRequest } from './sign.js';
export {
  verifyWebhookSignature,
  signatureBaseFor,
  type IncomingRequest,
  type KeyResolver,
  type ReplayStore,
  type ResolvedKey,
  type RevocationCheck,
  type VerifiedSignature,
  type VerifyOptions,
} from './verify.js';
export { jwksKeyResolver } from './jwks-resolver.js';
export {
  generateSigningKey,
  importSigningKey,
  importVerifyKey,
  publishedJwk,
  keyPurposeProblem,
  defaultKid,
  KeyImportError,
  KeySetError,
  WEBHOOK_KEY_PURPOSES,
  type JWK,
  type SigningKey,
} from './keys.js';
export { SIGNATURE_ALGS, isSignatureAlg, type SignatureAlg } from './algorithms.js';
export { contentDigestHeader, parseContentDigest, contentDigestMatches } from './content-digest.js';
export {
  buildSignatureBase,
  serializeSignatureParams,
  WEBHOOK_COMPONENTS,
  type SignatureParams,
} from './signature-base.js';
export type { BinaryProfile } from './base64.js';
export {
  brandProfile,
  isBrand,
  BRANDS,
  DEFAULT_BRAND,
  type Brand,
  type BrandProfile,
} from '../brand.js';
export {
  canonicalizeTargetUri,
  TargetUriError,
  type CanonicalizeOptions,
  type CanonicalTargetUri,
  type TargetUriRejectReason,
} from '../http/target-uri.js';
export {
  WEBHOOK_ERROR_CODES,
  KEY_DISCOVERY_CODES,
  WebhookVerificationError,
  isWebhookErrorCode,
  webhookCodeFromWwwAuthenticate,
  type KeyDiscoveryCode,
  type WebhookErrorCode,
} from '../errors/webhook-codes.js';

/** The error base every error here extends, and the codes to switch on (README "Errors"). */
export { SvcError, type SvcErrorOptions } from '../errors/base.js';
export { SVC_ERROR_CODES, type SvcErrorCode } from '../errors/codes.js';
