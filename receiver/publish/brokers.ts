/**
 * `--publish <url>` to a running publisher: parse the target (a bad URL stops the start with a
 * message naming the option), load the broker's client only when it is used, and connect.
 *
 * A broker that cannot be reached at start is not fatal: the receiver starts, answers 503 for
 * each event until the broker is back (the seller retries; nothing is lost), and the start-up
 * log says so. A broker that is reachable but unfit (a Redis that keeps nothing on disk) is.
 *
 * A new broker (Kafka, say) is one file with a class implementing `Publisher` plus a `start`,
 * a case in `parseBrokerTarget` and one here; receiver/README.md says what Kafka would take.
 */
import { parseBrokerTarget, type BrokerKind } from './broker-target.js';
import type { Publisher } from './types.js';

export interface BrokerPublisherOptions {
  brand: string;
  /** Connection, PubAck/confirm and command timeouts, in ms (default 5,000). */
  timeoutMs?: number;
}

export interface OpenedBrokerPublisher {
  publisher: Publisher;
  kind: BrokerKind;
  /** For the start-up log: the broker was unreachable, or durability is weaker than asked. */
  warnings: string[];
}

interface Startable extends Publisher {
  start(): Promise<unknown>;
}

async function construct(
  url: string,
  o: BrokerPublisherOptions,
): Promise<Startable & { kind: BrokerKind }> {
  const target = parseBrokerTarget(url, o.brand);
  const common = {
    brand: o.brand,
    ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
  };
  switch (target.kind) {
    case 'nats': {
      const { NatsPublisher } = await import('./nats.js');
      return Object.assign(new NatsPublisher({ target, ...common }), { kind: target.kind });
    }
    case 'amqp': {
      const { AmqpPublisher } = await import('./amqp.js');
      return Object.assign(new AmqpPublisher({ target, ...common }), { kind: target.kind });
    }
    case 'redis': {
      const { RedisStreamPublisher } = await import('./redis-stream.js');
      return Object.assign(new RedisStreamPublisher({ target, ...common }), { kind: target.kind });
    }
  }
}

/** Opens the publisher `--publish` names. Throws only for a bad URL or an unfit broker. */
export async function openBrokerPublisher(
  url: string,
  options: BrokerPublisherOptions,
): Promise<OpenedBrokerPublisher> {
  const publisher = await construct(url, options);
  const warnings: string[] = [];
  try {
    const w = await publisher.start();
    if (Array.isArray(w)) warnings.push(...(w as string[]));
  } catch (err) {
    const message = (err as Error).message;
    if (message.startsWith('--publish:')) {
      await publisher.close?.();
      throw err;
    }
    warnings.push(
      `the ${publisher.kind} broker is not reachable yet (${message}); every event is answered 503 until it is, and the seller retries`,
    );
  }
  return { publisher, kind: publisher.kind, warnings };
}
