/**
 * Idempotency retention in the sidecar is at least max(24 h, the sender's advertised
 * `delivery_retry_horizon_seconds`): a sender configured with a capabilities URL has its
 * advertised horizon read from there (cached, refreshed with its keys); the trust file's
 * value for the sender overrides it, and the trust file default applies when neither is
 * given. Real sidecar (verifierDependencies as `svc receiver` builds them), real HTTP,
 * real keys, real PostgreSQL.
 */
import t from 'tap';
import { parseTrust } from '../../../receiver/trust/trust-file.js';
import { signWebhook } from '../../../shared/signing/sign.js';
import type { SigningKey } from '../../../shared/signing/keys.js';
import { testDatabase } from '../../helpers/db.js';
import { startTrustedSidecar } from '../support/trusted-sidecar.js';
import { envelope } from '../support/fixtures.js';
import { post } from '../support/server.js';
import { docServer, manualClock } from './doc-server.js';
import { jwksOf, profile, signingKey } from './e2e.js';

const { pool, schema } = testDatabase(t, 'rsidehz');
const DAY = 86_400;

t.test('retention follows the advertised horizon, the trust file overriding', async (t) => {
  const srv = await docServer(t);
  const keys: Record<string, SigningKey> = {};
  for (const id of ['adv', 'own', 'bad', 'none', 'later']) {
    keys[id] = await signingKey(`${id}-hz-key`);
    srv.json(`/${id}/jwks.json`, jwksOf(keys[id]!));
  }
  const caps = (horizon: unknown) => ({
    identity: {},
    webhook_signing: { supported: true, delivery_retry_horizon_seconds: horizon },
  });
  srv.json('/adv/caps.json', caps(3 * DAY));
  srv.json('/own/caps.json', caps(5 * DAY));
  srv.json('/bad/caps.json', caps(1000)); // under the 86400 floor of §7.1: ignored
  srv.raw('/later/caps.json', 'not yet', 503);
  const sender = (id: string, extra: Record<string, unknown> = {}) => ({
    id,
    jwks_uri: srv.url(`/${id}/jwks.json`),
    ...extra,
  });
  const trust = parseTrust({
    delivery_retry_horizon_seconds: DAY + 3600,
    senders: [
      sender('adv', { capabilities_url: srv.url('/adv/caps.json') }),
      sender('own', {
        capabilities_url: srv.url('/own/caps.json'),
        delivery_retry_horizon_seconds: 2 * DAY,
      }),
      sender('bad', { capabilities_url: srv.url('/bad/caps.json') }),
      sender('none'),
      sender('later', { capabilities_url: srv.url('/later/caps.json') }),
    ],
  });
  const { sidecar, deps } = await startTrustedSidecar(t, {
    trust,
    profile,
    pool,
    schema,
    allowLoopback: true,
  });

  const deliver = async (id: string) => {
    const url = `${sidecar.url}/hooks/${id}`;
    const env = envelope({ task_id: `task-${id}-${Math.random()}` });
    const body = Buffer.from(JSON.stringify(env));
    const headers = signWebhook({ method: 'POST', url, body }, { key: keys[id]!, profile });
    const res = await post(url, body, headers);
    const { rows } = await pool.query<{ seconds: number }>(
      `SELECT round(extract(epoch FROM expires_at - accepted_at))::int AS seconds
         FROM ${schema}.idempotency_keys WHERE sender = $1 AND idempotency_key = $2`,
      [id, env.idempotency_key],
    );
    return { status: res.status, retention: rows[0]?.seconds };
  };

  t.same(await deliver('adv'), { status: 200, retention: 3 * DAY }, 'advertised 3 days');
  t.same(await deliver('own'), { status: 200, retention: 2 * DAY }, 'trust file value wins');
  t.same(await deliver('bad'), { status: 200, retention: DAY + 3600 }, 'out of range: ignored');
  t.same(await deliver('none'), { status: 200, retention: DAY + 3600 }, 'trust default');
  // Capabilities never loaded: they may declare key origins, so the sender's keys are not
  // trusted until they load (fail closed, a 401 naming why), never a guessed retention.
  t.same(await deliver('later'), { status: 401, retention: undefined });
  t.equal(deps.advertisedHorizonSeconds('adv'), 3 * DAY);
  t.equal(deps.advertisedHorizonSeconds('nobody'), undefined);
});

t.test('the advertised horizon is refreshed with the key material', async (t) => {
  const { TrustedKeyResolver } = await import('../../../receiver/keys/trusted-key-resolver.js');
  const srv = await docServer(t);
  const key = await signingKey('refresh-k');
  srv.json('/jwks.json', jwksOf(key));
  srv.json('/caps.json', { webhook_signing: { delivery_retry_horizon_seconds: 2 * DAY } });
  const clock = manualClock();
  const r = new TrustedKeyResolver(
    parseTrust({
      senders: [
        { id: 's', jwks_uri: srv.url('/jwks.json'), capabilities_url: srv.url('/caps.json') },
      ],
    }),
    { allowLoopback: true, clock: clock.now },
  );
  t.equal(r.advertisedHorizonSeconds('s'), undefined, 'nothing fetched yet');
  t.ok(await r.resolve(key.kid));
  t.equal(r.advertisedHorizonSeconds('s'), 2 * DAY);
  srv.json('/caps.json', { webhook_signing: { delivery_retry_horizon_seconds: 7 * DAY } });
  clock.advance(60_000);
  t.ok(await r.resolve(key.kid));
  t.equal(r.advertisedHorizonSeconds('s'), 2 * DAY, 'cached while the keys are');
  t.equal(srv.hits('/caps.json'), 1);
  clock.advance(5 * 60_000);
  t.ok(await r.resolve(key.kid));
  t.equal(r.advertisedHorizonSeconds('s'), 7 * DAY, 'refreshed with the keys');
  t.equal(srv.hits('/caps.json'), 2);
  srv.raw('/caps.json', 'down', 503);
  clock.advance(5 * 60_000);
  t.ok(await r.resolve(key.kid));
  t.equal(r.advertisedHorizonSeconds('s'), 7 * DAY, 'an outage keeps the last value');

  // First load failing, then the document appears: picked up after the negative cache.
  const late = new TrustedKeyResolver(
    parseTrust({
      senders: [
        { id: 'l', jwks_uri: srv.url('/jwks.json'), capabilities_url: srv.url('/late.json') },
      ],
    }),
    { allowLoopback: true, clock: clock.now },
  );
  srv.raw('/late.json', 'not yet', 503);
  await t.rejects(late.resolve(key.kid), { code: 'request_signature_capabilities_unreachable' });
  srv.json('/late.json', { webhook_signing: { delivery_retry_horizon_seconds: 4 * DAY } });
  clock.advance(61_000);
  t.ok(await late.resolve(key.kid));
  t.equal(late.advertisedHorizonSeconds('l'), 4 * DAY);
});
