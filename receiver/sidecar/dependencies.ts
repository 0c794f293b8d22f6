/**
 * The verifier's collaborators for the sidecar, built from the trust file: key resolution
 * over every trusted sender and the durable (keyid, nonce) replay cache in PostgreSQL,
 * shared by every sidecar instance on the same database.
 */
import type { Logger } from '../../shared/infra/logger.js';
import type { Pool } from '../../shared/infra/pg.js';
import type { KeyResolver, ReplayStore, RevocationCheck } from '../../shared/signing/verify.js';
import { TrustedKeyResolver } from '../keys/trusted-key-resolver.js';
import { PgReplayStore } from '../replay/pg-replay-store.js';
import type { TrustConfig } from '../trust/trust-file.js';

export interface VerifierDependencies {
  keys: KeyResolver;
  revocation?: RevocationCheck;
  replay: ReplayStore;
  close(): Promise<void>;
}

export async function verifierDependencies(o: {
  trust: TrustConfig;
  pool: Pool;
  logger: Logger;
  schema?: string;
  redisUrl?: string;
  /** Plain http to loopback key endpoints (local testing only). */
  allowLoopback?: boolean;
}): Promise<VerifierDependencies> {
  const keys = new TrustedKeyResolver(o.trust, {
    logger: o.logger,
    allowLoopback: o.allowLoopback,
  });
  const replay = new PgReplayStore(o.pool, { schema: o.schema ?? 'receiver' });
  await replay.migrate();
  replay.startPurging(60_000, (err) =>
    o.logger.warn({ event: 'replay_purge_failed', err: (err as Error).message }),
  );
  return {
    keys,
    replay,
    close: () => replay.stop(),
  };
}
