/**
 * Redis connections. BullMQ needs `maxRetriesPerRequest: null` on the connections its
 * workers block on; the same settings suit every other use here.
 */
import { Redis, type RedisOptions } from 'ioredis';

export { Redis };

export function createRedis(url: string, options: RedisOptions = {}): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, ...options });
}

/** A key prefix with a hash tag, so every key of one deployment lands in one Cluster slot. */
export function hashTaggedPrefix(name: string): string {
  return `{${name}}`;
}
