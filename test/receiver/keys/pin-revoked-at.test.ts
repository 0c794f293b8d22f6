/**
 * A publisher pin's `revoked_at` is compared with the signature's `created` (supplement
 * §2.7: "reject signatures whose signing time ≥ it"), not with the time of arrival: over
 * real HTTP, with real keys, a delivery signed before the revocation and arriving after it
 * is accepted, one signed at or after it is refused.
 */
import t from 'tap';
import { TrustedKeyResolver } from '../../../receiver/keys/trusted-key-resolver.js';
import { parseTrust } from '../../../receiver/trust/trust-file.js';
import { publishedJwk } from '../../../shared/signing/keys.js';
import { testDatabase } from '../../helpers/db.js';
import { profile, receiverOver, signingKey } from './e2e.js';

const { pool, schema } = testDatabase(t, 'rpinrev');

t.test('revoked_at against created, over HTTP', async (t) => {
  const key = await signingKey('pinned-rotating');
  const jwk = publishedJwk(key, profile);
  const now = Math.floor(Date.now() / 1000);
  const revokedAt = new Date((now - 100) * 1000).toISOString();
  const resolver = new TrustedKeyResolver(
    parseTrust({
      senders: [
        {
          id: 'seller',
          jwks: { keys: [jwk] },
          pins: { signing_keys: [{ kid: jwk.kid, kty: jwk.kty, x: jwk.x, revoked_at: revokedAt }] },
        },
      ],
    }),
  );
  const { deliver, events } = await receiverOver(t, pool, schema, resolver);

  const before = await deliver(key, { now: now - 200 });
  t.equal(before.status, 200, 'signed 100 s before revoked_at, arriving after it: accepted');
  t.equal(events.length, 1);

  const at = await deliver(key, { now: now - 100 });
  t.equal(at.status, 401, 'created == revoked_at');
  t.equal(at.code, 'webhook_signature_key_unknown');

  const after = await deliver(key, { now: now - 10 });
  t.equal(after.status, 401);
  t.equal(after.code, 'webhook_signature_key_unknown');
  t.equal(events.length, 1, 'nothing published for refused signatures');
});

t.test('resolver API: created decides, the clock only when no created is given', async (t) => {
  const key = await signingKey('k');
  const jwk = publishedJwk(key, profile);
  const revokedMs = Date.parse('2026-07-01T00:00:00Z');
  let nowMs = revokedMs + 3600_000;
  const r = new TrustedKeyResolver(
    parseTrust({
      senders: [
        {
          id: 's',
          jwks: { keys: [jwk] },
          pins: {
            signing_keys: [{ kid: 'k', kty: 'OKP', revoked_at: '2026-07-01T00:00:00Z' }],
          },
        },
      ],
    }),
    { clock: () => nowMs },
  );
  t.ok(await r.resolve('k', { created: revokedMs / 1000 - 1 }), 'created before revoked_at');
  t.equal(await r.resolve('k', { created: revokedMs / 1000 }), null, 'created at revoked_at');
  t.equal(await r.resolve('k'), null, 'no created: the clock, past revoked_at');
  nowMs = revokedMs - 1000;
  t.ok(await r.resolve('k'), 'no created: the clock, before revoked_at');
  t.equal(
    await r.resolve('k', { created: revokedMs / 1000 + 5 }),
    null,
    'a created in the future of the clock still counts',
  );
});

t.test('malformed revoked_at is refused by the trust file', async (t) => {
  t.throws(
    () =>
      parseTrust({
        senders: [
          {
            id: 's',
            jwks: { keys: [{ kid: 'k', kty: 'OKP' }] },
            pins: { signing_keys: [{ kid: 'k', kty: 'OKP', revoked_at: '2026-07-01' }] },
          },
        ],
      }),
    { name: 'TrustFileError', field: 'senders[0].pins.signing_keys[0].revoked_at' },
  );
});
