/**
 * The sidecar wiring of admission tracking (as `svc receiver` builds it): every keyid the
 * trust-file resolver resolves reaches the tracker, and its metrics are on the sidecar's
 * own /metrics. Real sidecar, real HTTP, real keys, real PostgreSQL.
 */
import t from 'tap';
import { request } from 'undici';
import { verifierDependencies } from '../../../receiver/sidecar/dependencies.js';
import { Sidecar } from '../../../receiver/sidecar/server.js';
import { parseTrust } from '../../../receiver/trust/trust-file.js';
import { silentLogger } from '../../../shared/infra/logger.js';
import { signWebhook } from '../../../shared/signing/sign.js';
import { testDatabase } from '../../helpers/db.js';
import { startApp } from '../support/app.js';
import { envelope } from '../support/fixtures.js';
import { post } from '../support/server.js';
import { jwksOf, profile, signingKey } from '../keys/e2e.js';

const { pool, schema } = testDatabase(t, 'radmside');

t.test('resolved keyids are tracked and exported on /metrics', async (t) => {
  const key = await signingKey('sidecar-admission-k');
  const trust = parseTrust({ senders: [{ id: 'seller', jwks: jwksOf(key) }] });
  const deps = await verifierDependencies({
    trust,
    profile,
    pool,
    logger: silentLogger,
    schema,
    admission: { evaluateEveryMs: 0, flushDelayMs: 60_000 },
  });
  const app = await startApp();
  const sidecar = await Sidecar.start({
    port: 0,
    trust,
    profile,
    protocolVersion: '3.2',
    target: { forward: app.url },
    pool,
    schema,
    keys: deps.keys,
    replay: deps.replay,
    admission: deps.admission,
    purgeIntervalMs: 0,
  });
  deps.admission.attachMetrics(sidecar.metrics.registry);
  t.teardown(async () => {
    await sidecar.close();
    await deps.close();
    await app.close();
  });
  const url = `${sidecar.url}/hooks/x`;
  const body = Buffer.from(JSON.stringify(envelope()));

  // A forgery naming the published kid, signed with another key: refused, and not counted
  // (the pipeline tells the tracker only after the signature verified).
  const forger = await signingKey(key.kid);
  const forged = await post(
    url,
    body,
    signWebhook({ method: 'POST', url, body }, { key: forger, profile }),
  );
  t.equal(forged.status, 401);
  t.match(forged.headers['www-authenticate'], /webhook_signature_invalid/);
  t.equal(await deps.admission.flush(), 0, 'a forged signature admits no keyid');

  const res = await post(url, body, signWebhook({ method: 'POST', url, body }, { key, profile }));
  t.equal(res.status, 200);
  t.equal(await deps.admission.flush(), 1);
  const metrics = await (await request(`${sidecar.url}/metrics`)).body.text();
  t.match(metrics, /receiver_keyid_first_seen_total\{sender="seller"\} 1/);
  t.match(metrics, /receiver_keyid_admission_window\{scope="seller"\} 1/);
  t.match(metrics, /receiver_webhooks_verified_total 1/, 'beside the receiver metrics');
  const { rows } = await pool.query(`SELECT sender, keyid FROM ${schema}.keyid_admissions`);
  t.same(rows, [{ sender: 'seller', keyid: key.kid }]);
});
