/**
 * Publication to NATS JetStream (`--publish nats://...`): the verified body as the message,
 * the event's metadata as NATS headers, and (sender, idempotency_key) as the JetStream message
 * id, so the stream's duplicate window drops a re-publication after a receiver died mid-way.
 * `publish` returns only on the stream's PubAck: the event is then stored by JetStream, which
 * is the "durably enqueued" the spec's 2xx waits for. No stream for the subject, a full stream
 * (discard new) or a broker that is down is an error, so the receiver answers 503 and the
 * seller retries.
 */
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import {
  DiscardPolicy,
  jetstream,
  jetstreamManager,
  StorageType,
  type JetStreamClient,
} from '@nats-io/jetstream';
import { messageId, renderName, safeToken, type NatsTarget } from './broker-target.js';
import { eventHeaders, type Publisher, type ReceivedEvent } from './types.js';

export interface NatsPublisherOptions {
  target: NatsTarget;
  brand: string;
  /** How long to wait for the PubAck (and for a connection), in ms. */
  timeoutMs?: number;
}

/** Turns a template `a.{sender}.{task_type}` into the stream filter `a.*.*`. */
export function subjectFilter(template: string): string {
  return template.replace(/\{(sender|task_type)\}/g, '*');
}

export class NatsPublisher implements Publisher {
  private readonly target: NatsTarget;
  private readonly brand: string;
  private readonly timeoutMs: number;
  private conn: Promise<{ nc: NatsConnection; js: JetStreamClient }> | null = null;
  private streamReady = false;

  constructor(options: NatsPublisherOptions) {
    this.target = options.target;
    this.brand = options.brand;
    this.timeoutMs = options.timeoutMs ?? 5_000;
  }

  /**
   * Connects and makes sure a stream captures the subjects: an existing stream is used as it
   * is (the buyer's own limits stay theirs); a missing one is created on file storage with
   * the duplicate window asked for.
   */
  async start(): Promise<void> {
    if (this.streamReady) return;
    const { nc } = await this.connection();
    const jsm = await jetstreamManager(nc, { timeout: this.timeoutMs });
    const filter = subjectFilter(this.target.subject);
    try {
      await jsm.streams.info(this.target.stream);
    } catch (err) {
      if (!/stream not found/i.test((err as Error).message)) throw err;
      await jsm.streams.add({
        name: this.target.stream,
        subjects: [filter],
        storage: StorageType.File,
        discard: DiscardPolicy.Old,
        duplicate_window: this.target.duplicateWindowMs * 1_000_000,
      });
    }
    this.streamReady = true;
  }

  private connection(): Promise<{ nc: NatsConnection; js: JetStreamClient }> {
    if (!this.conn) {
      const t = this.target;
      const opening = connect({
        servers: t.servers,
        ...(t.user !== undefined ? { user: t.user } : {}),
        ...(t.pass !== undefined ? { pass: t.pass } : {}),
        timeout: this.timeoutMs,
        // Reconnect forever in the background; a publish meanwhile fails fast (503).
        maxReconnectAttempts: -1,
        name: `${this.brand}-receiver`,
      }).then((nc) => ({ nc, js: jetstream(nc, { timeout: this.timeoutMs }) }));
      // A failed first connection is retried by the next publish, not cached.
      opening.catch(() => {
        if (this.conn === opening) this.conn = null;
      });
      this.conn = opening;
    }
    return this.conn;
  }

  subjectOf(e: ReceivedEvent): string {
    return renderName(this.target.subject, e, safeToken);
  }

  async publish(e: ReceivedEvent): Promise<void> {
    // A broker that was down at start gets its stream when it is first reached.
    await this.start();
    const { js } = await this.connection();
    const h = natsHeaders();
    h.set('content-type', 'application/json');
    for (const [k, v] of Object.entries(eventHeaders(e, this.brand))) h.set(k, v);
    await js.publish(this.subjectOf(e), e.body, {
      msgID: messageId(e),
      headers: h,
      timeout: this.timeoutMs,
    });
  }

  async close(): Promise<void> {
    const c = this.conn;
    this.conn = null;
    if (c) await (await c.catch(() => null))?.nc.drain().catch(() => {});
  }
}
