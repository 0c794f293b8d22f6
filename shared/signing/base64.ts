/**
 * Binary encodings of signature and digest values.
 *
 * Two profiles, chosen by route and never tried one after the other (supplement §2.4):
 * - `webhook-v1` (all of 3.x): unpadded base64url is what signers emit; a token in pure
 *   standard base64 (optionally padded) is tolerated; a token mixing the two alphabets
 *   (any of `+ / =` with any of `- _`) is malformed.
 * - `rfc8941` (3.2 request signing): standard base64 with padding, exactly as RFC 8941.
 */
import { SvcError } from '../errors/base.js';

export type BinaryProfile = 'webhook-v1' | 'rfc8941';

export class BinaryEncodingError extends SvcError {
  static override readonly code = 'ERR_BINARY_ENCODING';

  constructor(message: string) {
    super(message);
    this.name = 'BinaryEncodingError';
  }
}

const URL_ALPHABET = /^[A-Za-z0-9_-]*$/;
const STD_ALPHABET = /^[A-Za-z0-9+/]*={0,2}$/;
const STD_PADDED = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Decodes a webhook-v1 token; throws BinaryEncodingError on a mixed or invalid token. */
export function decodeWebhookBinary(token: string): Buffer {
  if (URL_ALPHABET.test(token)) {
    if (token.length % 4 === 1)
      throw new BinaryEncodingError('base64url token has an impossible length');
    return Buffer.from(token, 'base64url');
  }
  if (STD_ALPHABET.test(token)) {
    const unpadded = token.replace(/=+$/, '');
    if (unpadded.length % 4 === 1)
      throw new BinaryEncodingError('base64 token has an impossible length');
    if (token.length !== unpadded.length && token.length % 4 !== 0) {
      throw new BinaryEncodingError('base64 token has wrong padding');
    }
    return Buffer.from(unpadded, 'base64');
  }
  throw new BinaryEncodingError(
    'token mixes the base64 and base64url alphabets or has foreign characters',
  );
}

/** Decodes an RFC 8941 sf-binary token: standard alphabet, padding required. */
export function decodeRfc8941Binary(token: string): Buffer {
  if (!STD_PADDED.test(token)) throw new BinaryEncodingError('not RFC 8941 padded base64');
  return Buffer.from(token, 'base64');
}

export function decodeBinary(token: string, profile: BinaryProfile): Buffer {
  return profile === 'webhook-v1' ? decodeWebhookBinary(token) : decodeRfc8941Binary(token);
}

/** What webhook-v1 signers emit. */
export function encodeWebhookBinary(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64url');
}

export function encodeRfc8941Binary(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

export function encodeBinary(bytes: Uint8Array, profile: BinaryProfile): string {
  return profile === 'webhook-v1' ? encodeWebhookBinary(bytes) : encodeRfc8941Binary(bytes);
}
