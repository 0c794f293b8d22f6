/**
 * The sidecar's collaborators. Its database: DATABASE_URL, or, unset, an embedded
 * PostgreSQL of its own under `<SVC_DATA_DIR>/receiver` (a buyer has no seller's `svc
 * start` beside it to borrow one from, and its claims and nonces must outlive restarts).
 * The verifier's, built from the trust file: key resolution over every trusted sender, the
 * polled revocation lists, the durable (keyid, nonce) replay cache in PostgreSQL, shared by
 * every sidecar instance on the same database, and new-keyid admission tracking (which the
 * sidecar tells of every keyid that verified).
 */
import { join } from 'node:path';
import type { BrandProfile } from '../../shared/brand.js';
import { startEmbeddedPostgres } from '../../shared/infra/embedded-postgres.js';
import type { Logger } from '../../shared/infra/logger.js';
import { waitForPostgres } from '../../shared/infra/services.js';
import type { Pool } from '../../shared/infra/pg.js';
import type { KeyResolver, ReplayStore, RevocationCheck } from '../../shared/signing/verify.js';
import { AdmissionTracker, type AdmissionOptions } from '../admission/tracker.js';
import { TrustedKeyResolver } from '../keys/trusted-key-resolver.js';
import { PgReplayStore } from '../replay/pg-replay-store.js';
import {
  PolledRevocationCheck,
  revocationSourcesFromTrust,
} from '../revocation/revocation-check.js';
import type { TrustConfig } from '../trust/trust-file.js';

export interface ReceiverDatabase {
  url: string;
  /** The embedded cluster's directory; null when DATABASE_URL names the server. */
  embeddedDir: string | null;
  stop(): Promise<void>;
}

/**
 * DATABASE_URL (waited for up to waitSeconds: the operator chose that server), else the
 * sidecar's own embedded PostgreSQL under `<dataDir>/receiver`, created on the first run.
 */
export async function receiverDatabase(o: {
  databaseUrl: string | undefined;
  dataDir: string;
  waitSeconds: number;
  logger: Logger;
}): Promise<ReceiverDatabase> {
  if (o.databaseUrl !== undefined) {
    await waitForPostgres(o.databaseUrl, { waitSeconds: o.waitSeconds, logger: o.logger });
    return { url: o.databaseUrl, embeddedDir: null, stop: async () => {} };
  }
  const embedded = await startEmbeddedPostgres(join(o.dataDir, 'receiver'), o.logger);
  return { url: embedded.url, embeddedDir: embedded.dir, stop: () => embedded.stop() };
}

export interface VerifierDependencies {
  keys: KeyResolver;
  revocation?: RevocationCheck;
  replay: ReplayStore;
  /** A sender's capabilities `delivery_retry_horizon_seconds` (cached with its keys). */
  advertisedHorizonSeconds(sender: string): number | undefined;
  /** New-keyid admission pressure (its metrics go on the sidecar's registry). */
  admission: AdmissionTracker;
  close(): Promise<void>;
}

export async function verifierDependencies(o: {
  trust: TrustConfig;
  profile: BrandProfile;
  pool: Pool;
  logger: Logger;
  schema?: string;
  redisUrl?: string;
  /** Plain http to loopback key endpoints (local testing only). */
  allowLoopback?: boolean;
  /** Nonce inserts wait for the WAL flush (default false; `svc receiver --synchronous-commit`). */
  synchronousCommit?: boolean;
  /** Thresholds and periods of admission tracking (shared/config SVC_RECEIVER_ADMISSION_*). */
  admission?: Omit<AdmissionOptions, 'pool' | 'schema' | 'logger'>;
}): Promise<VerifierDependencies> {
  const admission = new AdmissionTracker({
    ...o.admission,
    pool: o.pool,
    schema: o.schema ?? 'receiver',
    logger: o.logger,
  });
  await admission.start();
  const keys = new TrustedKeyResolver(o.trust, {
    logger: o.logger,
    allowLoopback: o.allowLoopback,
  });
  // Keys and capabilities (advertised retry horizons) are fetched ahead of the first
  // delivery; a failure here is only logged, and retried when a delivery needs them.
  void keys.warm().catch(() => {});
  // Revocation lists named by the trust file, polled per next_update; with none configured
  // there is nothing to be stale about and step 9 only sees revoked kids (none).
  const sources = revocationSourcesFromTrust(o.trust);
  let revocation: PolledRevocationCheck | undefined;
  if (sources.length > 0) {
    revocation = new PolledRevocationCheck({
      profile: o.profile,
      keys: keys,
      sources,
      allowLoopback: o.allowLoopback,
      logger: o.logger,
    });
    await revocation.start();
  }
  // By default nonces commit without waiting for the WAL flush: a nonce lost in a database
  // crash can only let the exact same signed request through again, and that request carries
  // the same body, hence the same idempotency key, which the claim answers as a duplicate
  // (were the claim lost in the same crash: one more publication at most, never a lost event).
  const replay = new PgReplayStore(o.pool, {
    schema: o.schema ?? 'receiver',
    asyncCommit: !(o.synchronousCommit ?? false),
  });
  await replay.migrate();
  replay.startPurging(60_000, (err) =>
    o.logger.warn({ event: 'replay_purge_failed', err: (err as Error).message }),
  );
  return {
    keys,
    revocation,
    replay,
    advertisedHorizonSeconds: (sender) => keys.advertisedHorizonSeconds(sender),
    admission,
    close: async () => {
      revocation?.stop();
      await admission.stop();
      await replay.stop();
    },
  };
}
