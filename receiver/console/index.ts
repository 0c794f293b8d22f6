/**
 * The sidecar's operator console, the part's one entry point. `createEventLog` first (its
 * `record` is the receiver's `observe` hook), then `startReceiverConsole` once the sidecar
 * runs. The token comes from `--console-token` or the `receiver_console` section of
 * `<data dir>/credentials.json` (made there on first start, 0600).
 */
import { ConsoleAuth } from '../../shared/console/auth.js';
import { credentialsPath, ensureConsoleToken } from '../../shared/console/credentials.js';
import type { Logger } from '../../shared/infra/logger.js';
import type { Pool } from '../../shared/infra/pg.js';
import type { SenderKeyStatus } from '../keys/trusted-key-resolver.js';
import type { ReceiverMetrics } from '../pipeline/metrics.js';
import type { DurableQueue } from '../publish/queue.js';
import type { PolledRevocationCheck } from '../revocation/revocation-check.js';
import type { RevocationView } from './pages.js';
import { ReceiverEventLog } from './event-log.js';
import { PublishedLog } from './published-log.js';
import { listenReceiverConsole } from './server.js';
import { ReceiverConsoleStore } from './store.js';

export { ReceiverEventLog } from './event-log.js';
export { PublishedLog } from './published-log.js';

/**
 * The publish outcomes and kept bodies (Re-publish): its `wrap` goes around the sidecar's
 * publisher (the Sidecar's `wrapPublisher`), then it is handed to `startReceiverConsole`.
 */
export async function createPublishedLog(o: {
  pool: Pool;
  schema: string;
  logger?: Logger;
  maxBodyBytes?: number;
  retentionMs?: number;
  maxRows?: number;
}): Promise<PublishedLog> {
  const log = new PublishedLog(o);
  await log.start();
  return log;
}

export async function createEventLog(o: {
  pool: Pool;
  schema: string;
  logger?: Logger;
  maxRows?: number;
}): Promise<ReceiverEventLog> {
  const log = new ReceiverEventLog(o);
  await log.start();
  return log;
}

export interface ReceiverConsoleStart {
  pool: Pool;
  schema: string;
  eventLog: ReceiverEventLog;
  /** Publish outcomes and Re-publish; absent, the Published pages are off. */
  published?: PublishedLog | null;
  metrics: ReceiverMetrics;
  queue: DurableQueue | null;
  /** Where events go, in words (`forwarded to URL`, `queue NAME`). */
  target: string;
  keys: { status(): SenderKeyStatus[] } | null;
  /** The polled revocation lists (their freshness per sender), if any. */
  revocation?: Pick<PolledRevocationCheck, 'describe'> | null;
  dataDir: string;
  token?: string;
  host: string;
  port: number;
  logger?: Logger;
}

export interface RunningReceiverConsole {
  url: string;
  credentialsFile: string | null;
  close(): Promise<void>;
}

export async function startReceiverConsole(
  o: ReceiverConsoleStart,
): Promise<RunningReceiverConsole> {
  const file = o.token ? null : credentialsPath(o.dataDir);
  const creds = o.token
    ? { token: o.token, operator: 'operator' }
    : await ensureConsoleToken(file!, undefined, 'receiver_console');
  const running = await listenReceiverConsole({
    store: new ReceiverConsoleStore(o.pool, o.schema),
    published: o.published ?? null,
    auth: new ConsoleAuth({ token: creds.token, operator: creds.operator }),
    senders: () => {
      const lists = revocationViews(o.revocation ?? null);
      return (o.keys?.status() ?? []).map((s) => ({
        sender: s.sender,
        kids: s.kids,
        jwksUri: s.jwksUri,
        lastFetch: s.lastFetchMs === null ? null : new Date(s.lastFetchMs).toISOString(),
        failure: s.failure,
        // The sender's own list, and any list that governs every sender.
        revocation: lists.filter((l) => l.sender === null || l.sender === s.sender),
      }));
    },
    totals: async () => {
      const m = await o.metrics.responses.get();
      return {
        byStatus: m.values
          .map((v) => ({ status: String(v.labels.status), count: v.value }))
          .sort((a, b) => a.status.localeCompare(b.status)),
        queueBacklog: o.queue ? await o.queue.depth() : null,
        target: o.target,
      };
    },
    host: o.host,
    port: o.port,
    ...(o.logger ? { logger: o.logger } : {}),
  });
  if (file) await ensureConsoleToken(file, running.url, 'receiver_console');
  return { url: running.url, credentialsFile: file, close: running.close };
}

const isoS = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * Each polled list's freshness: last fetch, the held list's `next_update`, and whether it
 * is stale (never loaded, or not refreshed within next_update + grace: its sender's kids
 * are then refused as `stale`, fail closed).
 */
export function revocationViews(
  check: Pick<PolledRevocationCheck, 'describe'> | null,
  nowMs = Date.now(),
): RevocationView[] {
  return (check?.describe() ?? []).map((d) => ({
    url: d.url,
    sender: d.senderId ?? null,
    lastFetch: isoS(d.lastFetchMs),
    nextUpdate: d.nextUpdate === null ? null : isoS(d.nextUpdate * 1000),
    staleAt: d.staleAt === null ? null : isoS(d.staleAt * 1000),
    stale: d.staleAt === null || nowMs / 1000 > d.staleAt,
  }));
}
