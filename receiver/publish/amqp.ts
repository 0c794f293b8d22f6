/**
 * Publication to RabbitMQ (`--publish amqp://...`): a durable topic exchange, persistent
 * messages, publisher confirms. `publish` returns only once the broker confirmed the message
 * (for a durable queue, after it is written to disk), which is the "durably enqueued" the
 * spec's 2xx waits for. Messages are published `mandatory`: one that no queue is bound to take
 * comes back (basic.return, sent before its confirm), and that is an error too, since nobody
 * would ever consume it; the receiver answers 503 and the seller retries.
 *
 * The (sender, idempotency_key) pair is the message id, and the event's metadata is in the
 * message headers, so consumers can deduplicate a re-publication after a receiver died mid-way
 * (RabbitMQ itself has no duplicate window).
 */
import { connect, type ChannelModel, type ConfirmChannel, type Message } from 'amqplib';
import { messageId, renderName, safeToken, type AmqpTarget } from './broker-target.js';
import { eventHeaders, type Publisher, type ReceivedEvent } from './types.js';

export interface AmqpPublisherOptions {
  target: AmqpTarget;
  brand: string;
  /** How long to wait for a connection and for a confirm, in ms. */
  timeoutMs?: number;
}

interface Open {
  model: ChannelModel;
  channel: ConfirmChannel;
  /** Message ids returned unroutable and not yet matched with their confirm. */
  returned: Set<string>;
}

export class AmqpPublisher implements Publisher {
  private readonly target: AmqpTarget;
  private readonly brand: string;
  private readonly timeoutMs: number;
  private open: Promise<Open> | null = null;

  constructor(options: AmqpPublisherOptions) {
    this.target = options.target;
    this.brand = options.brand;
    this.timeoutMs = options.timeoutMs ?? 5_000;
  }

  /** Connects and declares the exchange (durable, topic); an existing one must match. */
  async start(): Promise<void> {
    await this.connection();
  }

  private connection(): Promise<Open> {
    if (!this.open) {
      const opening = this.connect();
      // A lost or failed connection is opened again by the next publish.
      opening.catch(() => {
        if (this.open === opening) this.open = null;
      });
      this.open = opening;
    }
    return this.open;
  }

  private async connect(): Promise<Open> {
    const model = await connect(this.target.url, { timeout: this.timeoutMs });
    const forget = (): void => {
      void this.open?.then((o) => {
        if (o.model === model) this.open = null;
      });
    };
    model.on('error', forget);
    model.on('close', forget);
    try {
      const channel = await model.createConfirmChannel();
      channel.on('error', forget);
      channel.on('close', forget);
      const returned = new Set<string>();
      channel.on('return', (m: Message) => {
        if (typeof m.properties.messageId === 'string') returned.add(m.properties.messageId);
      });
      await channel.assertExchange(this.target.exchange, 'topic', { durable: true });
      return { model, channel, returned };
    } catch (err) {
      await model.close().catch(() => {});
      throw err;
    }
  }

  routingKeyOf(e: ReceivedEvent): string {
    return renderName(this.target.routingKey, e, safeToken);
  }

  async publish(e: ReceivedEvent): Promise<void> {
    const o = await this.connection();
    const id = messageId(e);
    const confirmed = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`RabbitMQ did not confirm within ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
      o.channel.publish(
        this.target.exchange,
        this.routingKeyOf(e),
        e.body,
        {
          persistent: true,
          mandatory: true,
          contentType: 'application/json',
          messageId: id,
          appId: `${this.brand}-receiver`,
          headers: eventHeaders(e, this.brand),
        },
        (err: unknown) => {
          clearTimeout(timer);
          if (err)
            reject(
              err instanceof Error
                ? err
                : new Error(`RabbitMQ refused the message: ${String(err)}`),
            );
          else resolve();
        },
      );
    });
    let unroutable = false;
    try {
      await confirmed;
    } finally {
      // basic.return precedes the confirm of the same message, so the mark is already here.
      unroutable = o.returned.delete(id);
    }
    if (unroutable) {
      throw new Error(
        `RabbitMQ returned the message: no queue is bound to exchange "${this.target.exchange}" for routing key "${this.routingKeyOf(e)}"`,
      );
    }
  }

  async close(): Promise<void> {
    const o = this.open;
    this.open = null;
    const open = await o?.catch(() => null);
    if (open) await open.model.close().catch(() => {});
  }
}
