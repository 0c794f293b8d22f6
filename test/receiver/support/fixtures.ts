/**
 * Shared fixtures of the receiver tests: real generated keys, real RFC 9421 signatures,
 * MCP envelopes, and a small in-memory replay store standing in for the durable one where
 * a test is about something else (the durable store has its own tests).
 */
import { randomBytes } from 'node:crypto';
import { brandProfile, type BrandProfile } from '../../../shared/brand.js';
import { generateSigningKey, publishedJwk, type SigningKey } from '../../../shared/signing/keys.js';
import { signWebhook } from '../../../shared/signing/sign.js';
import type { KeyResolver, ReplayStore } from '../../../shared/signing/verify.js';
import { parseTrust, type TrustConfig } from '../../../receiver/trust/trust-file.js';

export const profile: BrandProfile = brandProfile('svc');

export class MemoryReplayStore implements ReplayStore {
  readonly seenSet = new Set<string>();
  async atCap(): Promise<boolean> {
    return false;
  }
  async seen(keyid: string, nonce: string): Promise<boolean> {
    return this.seenSet.has(`${keyid} ${nonce}`);
  }
  async insert(keyid: string, nonce: string): Promise<'inserted' | 'replayed' | 'cap'> {
    const k = `${keyid} ${nonce}`;
    if (this.seenSet.has(k)) return 'replayed';
    this.seenSet.add(k);
    return 'inserted';
  }
}

export interface SenderKeys {
  id: string;
  key: SigningKey;
}

export async function makeSender(id: string): Promise<SenderKeys> {
  const { key } = await generateSigningKey(
    'ed25519',
    `${id}-key-${randomBytes(3).toString('hex')}`,
  );
  return { id, key };
}

export function trustFor(senders: SenderKeys[], extra: Record<string, unknown> = {}): TrustConfig {
  return parseTrust({
    senders: senders.map((s) => ({ id: s.id, jwks: { keys: [publishedJwk(s.key, profile)] } })),
    ...extra,
  });
}

/** A resolver over the senders' published keys (the trust-file resolver has its own tests). */
export function inlineResolver(senders: SenderKeys[]): KeyResolver {
  const map = new Map(senders.map((s) => [s.key.kid, s]));
  return {
    async resolve(kid) {
      const s = map.get(kid);
      return s ? { jwk: publishedJwk(s.key, profile), senderId: s.id } : null;
    },
  };
}

export function newKey(): string {
  return `whk_${randomBytes(12).toString('hex')}`;
}

export function envelope(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    idempotency_key: newKey(),
    operation_id: 'op_1',
    task_id: 'task_1',
    task_type: 'create_media_buy',
    status: 'working',
    timestamp: '2026-05-26T10:00:00.000Z',
    ...over,
  };
}

/** Signed headers + body for a POST to `url`. */
export function signed(
  url: string,
  body: string | Buffer,
  sender: SenderKeys,
  opts: { now?: number; nonce?: string } = {},
): { headers: Record<string, string>; body: Buffer } {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const headers = signWebhook(
    { method: 'POST', url, body: bytes },
    { key: sender.key, profile, ...opts },
  );
  return { headers, body: bytes };
}
