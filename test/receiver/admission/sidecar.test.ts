/**
 * The sidecar wiring of admission tracking (as `svc receiver` builds it): every keyid whose
 * signature verified reaches the tracker, and its metrics are on the sidecar's
 * own /metrics. Real sidecar, real HTTP, real keys, real PostgreSQL.
 */
import t from 'tap';
import { request } from 'undici';
import { parseTrust } from '../../../receiver/trust/trust-file.js';
import { signWebhook } from '../../../shared/signing/sign.js';
import { testDatabase } from '../../helpers/db.js';
import { startTrustedSidecar } from '../support/trusted-sidecar.js';
import { envelope } from '../support/fixtures.js';
import { post } from '../support/server.js';
import { jwksOf, profile, signingKey } from '../keys/e2e.js';

const { pool, schema } = testDatabase(t, 'radmside');

t.test('resolved keyids are tracked and exported on /metrics', async (t) => {
  const key = await signingKey('sidecar-admission-k');
  const trust = parseTrust({ senders: [{ id: 'seller', jwks: jwksOf(key) }] });
  const { sidecar, deps } = await startTrustedSidecar(t, {
    trust,
    profile,
    pool,
    schema,
    admission: { evaluateEveryMs: 0, flushDelayMs: 60_000 },
  });
  deps.admission.attachMetrics(sidecar.metrics.registry);
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
