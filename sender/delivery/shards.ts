/**
 * Dispatch shards (issue #19 item 3): deliveries are split over S BullMQ queues by their
 * destination origin, so one origin's jobs, limiter and order live in one queue, and the
 * queues spread over a Redis Cluster's masters. This file is the arithmetic: which shard an
 * origin belongs to, and each shard's key prefix with its own hash tag.
 *
 * The shard of an origin is a stable hash (SHA-1, first 32 bits) mod S: every process, of
 * any version, puts one origin in the same shard. Each shard's hash tag is chosen so its
 * Cluster slot falls in the shard's own S-th of the slot space: a cluster whose masters
 * own contiguous slot ranges (what `redis-cli --cluster create` and `rebalance` make) then
 * holds about S / masters shards each, instead of whatever a random tag would give.
 */
import { createHash } from 'node:crypto';

export const DEFAULT_DISPATCH_SHARDS = 16;
export const MAX_DISPATCH_SHARDS = 1024;
const CLUSTER_SLOTS = 16384;

const CRC16_TABLE = Uint16Array.from({ length: 256 }, (_, b) => {
  let crc = b << 8;
  for (let i = 0; i < 8; i++)
    crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  return crc;
});

/** CRC16/XMODEM, what Redis Cluster maps keys to slots with (mod 16384), from `crc`. */
function crc16(s: string, crc = 0): number {
  let ascii = true;
  for (let i = 0; i < s.length && ascii; i++) ascii = s.charCodeAt(i) < 128;
  const bytes: ArrayLike<number> = ascii ? { length: s.length } : Buffer.from(s, 'utf8');
  for (let i = 0; i < bytes.length; i++) {
    const byte = ascii ? s.charCodeAt(i) : bytes[i]!;
    crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ byte) & 0xff]!;
  }
  return crc;
}

/** The Cluster slot of a key (its `{hash tag}` when it has a non-empty one). */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return crc16(key.slice(open + 1, close)) % CLUSTER_SLOTS;
  }
  return crc16(key) % CLUSTER_SLOTS;
}

export function assertShardCount(shards: number): number {
  if (!Number.isInteger(shards) || shards < 1 || shards > MAX_DISPATCH_SHARDS) {
    throw new RangeError(
      `dispatch shards must be an integer 1-${MAX_DISPATCH_SHARDS} (SVC_DISPATCH_SHARDS), got ${shards}`,
    );
  }
  return shards;
}

/** The shard of a destination origin among `shards`. */
export function shardOf(origin: string, shards: number): number {
  if (shards === 1) return 0;
  return createHash('sha1').update(origin).digest().readUInt32BE(0) % shards;
}

/**
 * The key prefix of shard `index` of `shards` under a deployment's base prefix (`{svc:id}`):
 * `{svc:id:s16.3.n}`, where the layout (16) is part of the name, so changing S starts
 * fresh queues (sender/README.md, changing the shard count), and n is the first counter
 * that puts the tag's slot in the shard's range of the slot space.
 */
export function shardPrefix(basePrefix: string, index: number, shards: number): string {
  const inner = basePrefix.replace(/[{}]/g, '');
  const low = Math.floor((index * CLUSTER_SLOTS) / shards);
  const high = Math.floor(((index + 1) * CLUSTER_SLOTS) / shards);
  const stem = `${inner}:s${shards}.${index}.`;
  const stemCrc = crc16(stem);
  for (let n = 0; ; n++) {
    const slot = crc16(String(n), stemCrc) % CLUSTER_SLOTS;
    if (slot >= low && slot < high) return `{${stem}${n}}`;
  }
}

/** Every shard prefix of a layout, computed once per (base, S) in a process. */
const layouts = new Map<string, string[]>();
export function shardPrefixes(basePrefix: string, shards: number): string[] {
  const k = `${basePrefix}\n${shards}`;
  let out = layouts.get(k);
  if (!out) {
    out = Array.from({ length: assertShardCount(shards) }, (_, i) =>
      shardPrefix(basePrefix, i, shards),
    );
    layouts.set(k, out);
  }
  return out;
}

/**
 * Which shards a worker consumes: `all`, or a list of indexes and ranges (`0-7,12`).
 * Throws a RangeError naming what it accepts.
 */
export function parseShardSelection(value: string, shards: number): number[] {
  if (value.trim() === 'all') return Array.from({ length: shards }, (_, i) => i);
  const out = new Set<number>();
  for (const part of value.split(',').map((p) => p.trim())) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    const lo = m ? Number(m[1]) : NaN;
    const hi = m?.[2] !== undefined ? Number(m[2]) : lo;
    if (!m || hi < lo || hi >= shards) {
      throw new RangeError(
        `shards "${value}" is not valid: it accepts all, or shard indexes and ranges 0-${shards - 1} (e.g. 0-7,12)`,
      );
    }
    for (let i = lo; i <= hi; i++) out.add(i);
  }
  return [...out].sort((a, b) => a - b);
}
