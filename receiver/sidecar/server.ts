/**
 * The sidecar: the receiver as a process beside an app in any language. Every path is a
 * webhook path (the trust file routes it to a registration) except the sidecar's own
 * `/healthz` and `/metrics`, and, in queue mode with a token configured, the pull API under
 * `/_queue/` (see queue-api.ts). Each verified event is forwarded to the app once, or
 * enqueued durably for it.
 */
import { Counter, Gauge } from 'prom-client';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { BrandProfile } from '../../shared/brand.js';
import { silentLogger, type Logger } from '../../shared/infra/logger.js';
import type { Pool } from '../../shared/infra/pg.js';
import type { KeyResolver, ReplayStore, RevocationCheck } from '../../shared/signing/verify.js';
import { receiverRequest, requestPath, writeReceiverResponse } from '../http.js';
import type { KeyObserver } from '../admission/tracker.js';
import type { ProtocolVersion } from '../store/index.js';
import { ReceiverMetrics } from '../pipeline/metrics.js';
import {
  DEFAULT_BODY_TIMEOUT_MS,
  WebhookReceiver,
  type WebhookReceiverOptions,
} from '../pipeline/receiver.js';
import { describePublicOrigins, parsePublicOrigins } from '../pipeline/public-origins.js';
import { ForwardPublisher } from '../publish/forward.js';
import { STDOUT_TARGET, StdoutPublisher } from '../publish/stdout.js';
import { DurableQueue } from '../publish/queue.js';
import { openBrokerPublisher } from '../publish/brokers.js';
import type { Publisher } from '../publish/types.js';
import { DEFAULT_HEADERS_TIMEOUT_MS, limitServer, type ServerLimits } from '../server-limits.js';
import { routeRegistration, type TrustConfig } from '../trust/trust-file.js';
import { handleQueueApi, QUEUE_API_PREFIX } from './queue-api.js';

/**
 * Where verified events go: an app's URL, `stdout` (one JSON line each), a durable queue, or
 * the buyer's broker.
 */
export type SidecarTarget = { forward: string } | { queue: string } | { publish: string };

/** How the console and the start-up line name where events go (a broker URL without its password). */
export function describeTarget(t: SidecarTarget): string {
  if ('forward' in t) return `forwarded to ${t.forward}`;
  if ('queue' in t) return `queue ${t.queue}`;
  const u = new URL(t.publish);
  if (u.password) u.password = '***';
  return `published to ${u.href}`;
}

export interface SidecarOptions extends ServerLimits {
  /** Told of every answered delivery (the operator console's event log). */
  observe?: WebhookReceiverOptions['observe'];
  /**
   * Goes around the publisher (the console's publish outcomes and Re-publish:
   * receiver/console/published-log.ts); the queue API keeps the bare queue.
   */
  wrapPublisher?: (p: Publisher) => Publisher;
  host?: string;
  port?: number;
  trust: TrustConfig;
  profile: BrandProfile;
  protocolVersion: ProtocolVersion;
  target: SidecarTarget;
  pool: Pool;
  schema?: string;
  keys: KeyResolver;
  revocation?: RevocationCheck;
  replay: ReplayStore;
  /** New-keyid admission tracking (receiver/admission), told of every verified keyid. */
  admission?: KeyObserver;
  /** Bearer token of the queue pull API; without it the API is off. */
  queueToken?: string;
  /** Scheme the senders sign (a TLS-terminating proxy in front: `https`). */
  scheme?: 'http' | 'https';
  /** The receiver's own public origins; others are refused (see public-origins.ts). */
  publicOrigins?: readonly string[];
  logger?: Logger;
  leaseMs?: number;
  maxBodyBytes?: number;
  bodyIdleTimeoutMs?: number;
  /** Total deadline of a request body (the receiver's `bodyTimeoutMs`, default 20 s). */
  bodyTimeoutMs?: number;
  /** Bytes of request bodies held at once (the receiver's `bodyBudgetBytes`, 64 MiB). */
  bodyBudgetBytes?: number;
  /** Wait for the WAL flush on claims, done-marks (and, via the caller's store, nonces). */
  synchronousCommit?: boolean;
  maxKeysPerSender?: number;
  /** Retention purge interval (default 60 s; 0 disables). */
  purgeIntervalMs?: number;
  /** Forward timeout for the app's answer (default 10 s). */
  forwardTimeoutMs?: number;
  /** A sender's advertised `delivery_retry_horizon_seconds` (its capabilities); trust file wins. */
  advertisedHorizonSeconds?: (sender: string) => number | undefined;
  clock?: () => number;
}

export class Sidecar {
  readonly receiver: WebhookReceiver;
  readonly queue: DurableQueue | null;
  readonly server: Server;
  readonly metrics: ReceiverMetrics;
  private readonly log: Logger;
  private closing: Promise<void> | null = null;

  private constructor(
    receiver: WebhookReceiver,
    queue: DurableQueue | null,
    server: Server,
    metrics: ReceiverMetrics,
    log: Logger,
  ) {
    this.receiver = receiver;
    this.queue = queue;
    this.server = server;
    this.metrics = metrics;
    this.log = log;
  }

  /** Migrates the schema, starts the purge job and listens. */
  static async start(o: SidecarOptions): Promise<Sidecar> {
    const log = o.logger ?? silentLogger;
    const schema = o.schema ?? 'receiver';
    const { publisher, queue } = await openPublisher(o, schema, log);
    // The sender's own trust value, else what it advertises, else the trust file default.
    const own = new Map(o.trust.senders.map((s) => [s.id, s.delivery_retry_horizon_seconds]));
    const horizon = (sender: string) =>
      own.get(sender) ??
      o.advertisedHorizonSeconds?.(sender) ??
      o.trust.delivery_retry_horizon_seconds;
    const metrics = new ReceiverMetrics();
    const receiver = new WebhookReceiver({
      pool: o.pool,
      schema,
      profile: o.profile,
      protocolVersion: o.protocolVersion,
      keys: o.keys,
      revocation: o.revocation,
      replay: o.replay,
      admission: o.admission,
      route: (path) => routeRegistration(o.trust, path),
      publisher: o.wrapPublisher ? o.wrapPublisher(publisher) : publisher,
      logger: log,
      maxBodyBytes: o.maxBodyBytes,
      bodyIdleTimeoutMs: o.bodyIdleTimeoutMs,
      bodyTimeoutMs: o.bodyTimeoutMs,
      bodyBudgetBytes: o.bodyBudgetBytes,
      synchronousCommit: o.synchronousCommit,
      clock: o.clock,
      leaseMs: o.leaseMs,
      maxKeysPerSender: o.maxKeysPerSender,
      ...(o.observe ? { observe: o.observe } : {}),
      retryHorizonSeconds: horizon,
      metrics,
      ...(o.publicOrigins ? { publicOrigins: o.publicOrigins } : {}),
    });
    await receiver.migrate();
    const purge = o.purgeIntervalMs ?? 60_000;

    const server = createServer();
    guardConnections(server, o, { metrics, receiver, log });
    if (purge > 0) {
      receiver.startPurging(purge);
      if (queue) {
        // Acked rows keep their key bound as long as the longest sender retention.
        const q = queue;
        const timer = setInterval(() => {
          const keep = Math.max(
            86_400,
            o.trust.delivery_retry_horizon_seconds ?? 0,
            ...o.trust.senders.map((s) => horizon(s.id) ?? 0),
          );
          q.purgeAcked(keep).catch(() => {});
        }, purge);
        timer.unref();
        server.once('close', () => clearInterval(timer));
      }
    }
    const sidecar = new Sidecar(receiver, queue, server, metrics, log);
    server.on('request', (req, res) => {
      sidecar.route(req, res, o).catch((err) => {
        log.error({ event: 'sidecar_error', err: (err as Error).message });
        if (!res.headersSent) {
          res.statusCode = 503;
          res.setHeader('retry-after', '5');
        }
        res.end();
      });
    });
    answerClientErrors(server);
    // What the origins allow is said before the first delivery can arrive, so an operator
    // reading the log from the listening line on sees it.
    const said = describePublicOrigins(
      o.publicOrigins ? parsePublicOrigins(o.publicOrigins, 'publicOrigins') : null,
    );
    log[said.level](said.fields, said.message);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(o.port ?? 8787, o.host ?? '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    log.info({ event: 'sidecar_listening', url: sidecar.url }, 'receiver sidecar listening');
    return sidecar;
  }

  private listenUrl = '';

  /** The address it listens on (kept after close, for logs). */
  get url(): string {
    const a = this.server.address() as AddressInfo | null;
    if (a) {
      const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
      this.listenUrl = `http://${host}:${a.port}`;
    }
    return this.listenUrl;
  }

  private async route(req: IncomingMessage, res: ServerResponse, o: SidecarOptions): Promise<void> {
    const path = requestPath(req.url);
    if (path === '/healthz' || path === '/metrics') {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET' }).end();
        return;
      }
      if (path === '/metrics') {
        const text = await this.metrics.registry.metrics();
        res.writeHead(200, { 'content-type': this.metrics.registry.contentType }).end(text);
        return;
      }
      const healthy = this.closing === null && (await this.databaseUp(o.pool));
      res
        .writeHead(healthy ? 200 : 503, { 'content-type': 'application/json' })
        .end(JSON.stringify({ status: healthy ? 'ok' : 'unavailable' }));
      return;
    }
    if (this.queue && o.queueToken && path?.startsWith(QUEUE_API_PREFIX)) {
      await handleQueueApi(req, res, this.queue, o.queueToken);
      return;
    }
    const r = await this.receiver.handle(receiverRequest(req, { scheme: o.scheme }));
    writeReceiverResponse(res, r);
  }

  private async databaseUp(pool: Pool): Promise<boolean> {
    try {
      await pool.query('SELECT 1');
      return true;
    } catch {
      return false;
    }
  }

  /** Stops accepting, lets in-flight requests finish, then closes the publisher. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await new Promise<void>((resolve) => {
        this.server.close(() => resolve());
        this.server.closeIdleConnections();
      });
      await this.receiver.close();
      this.log.info({ event: 'sidecar_stopped' }, 'receiver sidecar stopped');
    })();
    return this.closing;
  }
}

/** Where verified events go: a broker, stdout, the app's URL, or the durable queue. */
async function openPublisher(
  o: SidecarOptions,
  schema: string,
  log: Logger,
): Promise<{ publisher: Publisher; queue: DurableQueue | null }> {
  if ('publish' in o.target) {
    const opened = await openBrokerPublisher(o.target.publish, {
      brand: o.profile.brand,
      ...(o.forwardTimeoutMs !== undefined ? { timeoutMs: o.forwardTimeoutMs } : {}),
    });
    for (const warning of opened.warnings) log.warn({ event: 'publish_target', warning }, warning);
    return { publisher: opened.publisher, queue: null };
  } else if ('forward' in o.target && o.target.forward === STDOUT_TARGET) {
    return { publisher: new StdoutPublisher(), queue: null };
  } else if ('forward' in o.target) {
    const publisher = new ForwardPublisher({
      url: o.target.forward,
      brand: o.profile.brand,
      timeoutMs: o.forwardTimeoutMs,
    });
    return { publisher, queue: null };
  } else {
    const queue = new DurableQueue({ pool: o.pool, schema, queue: o.target.queue });
    return { publisher: queue, queue };
  }
}

/**
 * Bounds on slow or truncated requests and on connections: nothing can hold a socket
 * forever, and each bound fires within a second of its value (see server-limits.ts); what
 * is shed or dropped is counted and logged at most every 10 s.
 */
function guardConnections(
  server: Server,
  o: SidecarOptions,
  w: { metrics: ReceiverMetrics; receiver: WebhookReceiver; log: Logger },
): void {
  const { metrics, receiver, log } = w;
  const headersTimeoutMs = o.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS;
  const shed = new Counter({
    name: 'receiver_connections_shed_total',
    help: 'Idle or excess connections closed to keep room for other clients (connection-guard.ts)',
    labelNames: ['reason'],
    registers: [metrics.registry],
  });
  let lastShedLog = 0;
  limitServer(server, {
    maxConnections: o.maxConnections,
    maxConnectionsPerAddress: o.maxConnectionsPerAddress,
    onShed: (reason) => {
      shed.inc({ reason });
      // One client holding too many connections: said at most every 10 s.
      if (Date.now() - lastShedLog < 10_000) return;
      lastShedLog = Date.now();
      log.warn(
        { event: 'connections_shed', reason },
        reason === 'per_address'
          ? 'a client address is at its connection cap: its idle connections are closed'
          : 'near the connection cap: idle connections of the largest holder are closed',
      );
    },
    headersTimeoutMs,
    requestTimeoutMs:
      o.requestTimeoutMs ?? headersTimeoutMs + (o.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS) + 1_000,
    keepAliveTimeoutMs: o.keepAliveTimeoutMs,
  });
  const dropped = new Counter({
    name: 'receiver_connections_dropped_total',
    help: 'Connections closed on arrival because maxConnections were open',
    registers: [metrics.registry],
  });
  new Gauge({
    name: 'receiver_body_bytes_in_flight',
    help: 'Bytes of request bodies held (or reserved by their Content-Length) right now',
    registers: [metrics.registry],
    collect() {
      this.set(receiver.bodyBudget.inFlight);
    },
  });
  let lastDropLog = 0;
  server.on('drop', () => {
    dropped.inc();
    // Over maxConnections: Node closed the connection on arrival. Logged at most every 10 s.
    if (Date.now() - lastDropLog < 10_000) return;
    lastDropLog = Date.now();
    log.warn(
      { event: 'connection_limit', maxConnections: server.maxConnections },
      'connection limit reached: new connections are closed',
    );
  });
}

/**
 * Malformed or oversized request heads, and the head and request timeouts: a specific
 * status, then the connection closes. Never written into a response already under way.
 */
function answerClientErrors(server: Server): void {
  server.on('clientError', (err, socket) => {
    const code = (err as NodeJS.ErrnoException).code;
    const status =
      code === 'HPE_HEADER_OVERFLOW' ? 431 : code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (socket.writable && !inFlight?.headersSent) {
      const reason =
        status === 431
          ? 'Request Header Fields Too Large'
          : status === 408
            ? 'Request Timeout'
            : 'Bad Request';
      socket.end(
        `HTTP/1.1 ${status} ${reason}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`,
        () => socket.destroy(),
      );
    } else socket.destroy();
  });
}
