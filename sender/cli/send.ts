/**
 * `svc send <url>`: one test webhook through the real path (outbox, queue, signer,
 * retries) with its own worker, printing every attempt. A wiring tool: the target's own
 * host is allow-listed, so loopback and plain http work. Everything it writes lives in
 * a throwaway schema and Redis prefix, removed on exit, so it never touches a running
 * deployment's outbox.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { brandProfile, type Brand } from '../../shared/brand.js';
import { createPool, dropSchema } from '../../shared/infra/pg.js';
import { createRedis } from '../../shared/infra/redis.js';
import { parseStrictJson } from '../../shared/json/strict-parse.js';
import { generateSigningKey, publishedJwk, type SigningKey } from '../../shared/signing/keys.js';
import type { BackoffOptions } from '../delivery/backoff.js';
import { DeliveryQueue } from '../delivery/queue.js';
import { DeliveryWorker, type AttemptReport } from '../delivery/worker.js';
import { KeySet } from '../keys/key-set.js';
import { IDEMPOTENCY_KEY_PATTERN, newIdempotencyKey } from '../outbox/keys.js';
import { Outbox } from '../outbox/outbox.js';
import type { DeliveryAuth } from '../outbox/types.js';
import { migrateSender } from '../schema.js';

export interface SendOptions {
  url: string;
  payloadFile?: string;
  brand: Brand;
  timeoutSeconds: number;
  keysDir?: string;
  signingKid?: string;
  hmacSecret?: string;
  bearerToken?: string;
  databaseUrl: string;
  redisUrl: string;
  out: Writable;
  err: Writable;
  backoff?: BackoffOptions;
}

export const EXIT_DELIVERED = 0;
export const EXIT_STOPPED = 1;
export const EXIT_USAGE = 2;
export const EXIT_TIMEOUT = 124;

function describe(r: AttemptReport): string {
  const what =
    r.result.kind === 'response'
      ? `HTTP ${r.result.status}`
      : `${r.result.failure} (${r.result.detail})`;
  let tail: string;
  if (r.state === 'delivered') tail = 'delivered';
  else if (r.state === 'pending') {
    const inS = Math.max(0, ((r.nextAttemptAt ?? Date.now()) - Date.now()) / 1000);
    tail = `retry in ${inS.toFixed(1)} s${r.verdict.action === 'retry' ? ` (${r.verdict.reason})` : ''}`;
  } else tail = `${r.state}${r.verdict.action === 'stop' ? ` (${r.verdict.reason})` : ''}`;
  return `attempt ${r.attempt}  ${what}  ${r.responseTimeMs} ms  ${tail}\n`;
}

async function loadPayload(
  file: string | undefined,
  timestamp: string,
): Promise<Record<string, unknown>> {
  if (!file) {
    return {
      idempotency_key: newIdempotencyKey(),
      operation_id: `op_test_${randomBytes(4).toString('hex')}`,
      task_id: `task_test_${randomBytes(4).toString('hex')}`,
      task_type: 'create_media_buy',
      status: 'completed',
      timestamp,
      message: 'test webhook from svc send',
      result: { media_buy_id: 'mb_test' },
    };
  }
  const value = parseStrictJson(await readFile(file));
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`${file} must hold a JSON object`);
  }
  return value as Record<string, unknown>;
}

export async function runSend(o: SendOptions): Promise<number> {
  let target: URL;
  try {
    target = new URL(o.url);
    if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new Error('scheme');
  } catch {
    o.err.write(`svc send: ${o.url} is not an http(s) URL\n`);
    return EXIT_USAGE;
  }
  const profile = brandProfile(o.brand);
  let key: SigningKey;
  if (o.keysDir) {
    key = (
      await KeySet.fromDirectory(o.keysDir, o.signingKid ? { activeKid: o.signingKid } : {})
    ).signingKey();
  } else {
    key = (await generateSigningKey('ed25519')).key;
    o.err.write(
      `svc send: no --keys: signing with a throwaway key the receiver cannot know:\n  ${JSON.stringify(publishedJwk(key, profile))}\n`,
    );
  }
  const payload = await loadPayload(o.payloadFile, new Date().toISOString());
  const givenKey = payload.idempotency_key;
  const idempotencyKey =
    typeof givenKey === 'string' && IDEMPOTENCY_KEY_PATTERN.test(givenKey)
      ? givenKey
      : newIdempotencyKey();
  if (!('idempotency_key' in payload) || givenKey !== idempotencyKey) {
    payload.idempotency_key = idempotencyKey;
  }
  const auth: DeliveryAuth = o.hmacSecret
    ? { mode: 'hmac', secret: o.hmacSecret }
    : o.bearerToken
      ? { mode: 'bearer', token: o.bearerToken }
      : { mode: 'rfc9421' };

  const schema = `svc_send_${randomBytes(5).toString('hex')}`;
  const prefix = `{svc-send-${randomBytes(5).toString('hex')}}`;
  const pool = createPool({ connectionString: o.databaseUrl, max: 4, applicationName: 'svc-send' });
  const redis = createRedis(o.redisUrl);
  const workerRedis = createRedis(o.redisUrl);
  // One shard: this private queue carries one delivery.
  const queue = new DeliveryQueue({ connection: redis, prefix, shards: 1 });
  let worker: DeliveryWorker | null = null;
  try {
    await migrateSender(pool, schema);
    const outbox = new Outbox({ pool, queue, schema });
    let finish: (code: number) => void = () => {};
    const finished = new Promise<number>((resolve) => (finish = resolve));
    worker = new DeliveryWorker({
      outbox,
      signer: { key, profile },
      connection: workerRedis,
      prefix,
      allowHosts: [target.hostname],
      concurrency: 1,
      reconcileEveryMs: 5000,
      storageEveryMs: 0,
      ...(o.backoff ? { backoff: o.backoff } : {}),
      onAttempt: (r) => {
        o.out.write(describe(r));
        if (r.state === 'delivered') finish(EXIT_DELIVERED);
        else if (r.state !== 'pending') finish(EXIT_STOPPED);
      },
    });
    o.out.write(
      `sending ${idempotencyKey.slice(0, 12)}… to ${target.origin}${target.pathname} (${auth.mode}${auth.mode === 'rfc9421' ? `, kid ${key.kid}` : ''})\n`,
    );
    await outbox.enqueue([
      {
        target: { url: o.url, auth, channel: 'task' },
        payload,
        idempotencyKey,
        notificationType: 'test',
      },
    ]);
    const timer = setTimeout(() => finish(EXIT_TIMEOUT), o.timeoutSeconds * 1000);
    const code = await finished;
    clearTimeout(timer);
    if (code === EXIT_TIMEOUT) o.out.write(`timed out after ${o.timeoutSeconds} s\n`);
    return code;
  } finally {
    await worker?.close().catch(() => {});
    await queue.obliterate().catch(() => {});
    await queue.close().catch(() => {});
    redis.disconnect();
    workerRedis.disconnect();
    await dropSchema(pool, schema).catch(() => {});
    await pool.end();
  }
}
