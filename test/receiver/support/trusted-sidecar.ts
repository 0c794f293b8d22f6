/**
 * The sidecar wired the way `svc receiver` wires it (verifierDependencies from the trust
 * file, then Sidecar.start), forwarding to a recording app, torn down with the test.
 */
import type { Test } from 'tap';
import { verifierDependencies } from '../../../receiver/sidecar/dependencies.js';
import { Sidecar } from '../../../receiver/sidecar/server.js';
import type { TrustConfig } from '../../../receiver/trust/trust-file.js';
import type { BrandProfile } from '../../../shared/brand.js';
import { silentLogger } from '../../../shared/infra/logger.js';
import type { Pool } from '../../../shared/infra/pg.js';
import { startApp } from './app.js';

type Dependencies = Awaited<ReturnType<typeof verifierDependencies>>;

export async function startTrustedSidecar(
  t: Test,
  o: {
    trust: TrustConfig;
    profile: BrandProfile;
    pool: Pool;
    schema: string;
    allowLoopback?: boolean;
    admission?: Parameters<typeof verifierDependencies>[0]['admission'];
  },
): Promise<{ sidecar: Sidecar; deps: Dependencies; app: Awaited<ReturnType<typeof startApp>> }> {
  const deps = await verifierDependencies({
    trust: o.trust,
    profile: o.profile,
    pool: o.pool,
    logger: silentLogger,
    schema: o.schema,
    allowLoopback: o.allowLoopback,
    admission: o.admission,
  });
  const app = await startApp();
  const sidecar = await Sidecar.start({
    port: 0,
    trust: o.trust,
    profile: o.profile,
    protocolVersion: '3.2',
    target: { forward: app.url },
    pool: o.pool,
    schema: o.schema,
    keys: deps.keys,
    revocation: deps.revocation,
    replay: deps.replay,
    admission: deps.admission,
    advertisedHorizonSeconds: deps.advertisedHorizonSeconds,
    purgeIntervalMs: 0,
  });
  t.teardown(async () => {
    await sidecar.close();
    await deps.close();
    await app.close();
  });
  return { sidecar, deps, app };
}
