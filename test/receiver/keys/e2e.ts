/**
 * End-to-end plumbing for the key tests: the real receiver pipeline behind node:http on
 * 127.0.0.1 (real PostgreSQL), fed signatures made with real generated keys, and a fetch
 * that serves chosen host names from a local document server (real HTTP, names pinned to
 * 127.0.0.1) so registrable-domain rules can be exercised with real domain names.
 */
import type { KeyObserver } from '../../../receiver/admission/tracker.js';
import { randomBytes } from 'node:crypto';
import type { Test } from 'tap';
import type { RawFetch } from '../../../receiver/keys/fetch-json.js';
import { WebhookReceiver } from '../../../receiver/pipeline/receiver.js';
import { HandlerPublisher } from '../../../receiver/publish/handler.js';
import type { ReceivedEvent } from '../../../receiver/publish/types.js';
import type { Pool } from '../../../shared/infra/pg.js';
import { safeFetch } from '../../../shared/net/safe-fetch.js';
import { generateSigningKey, publishedJwk, type SigningKey } from '../../../shared/signing/keys.js';
import { signWebhook } from '../../../shared/signing/sign.js';
import type { KeyResolver } from '../../../shared/signing/verify.js';
import { MemoryReplayStore, envelope, profile } from '../support/fixtures.js';
import { listen, post } from '../support/server.js';

export { profile };

export async function signingKey(kid: string): Promise<SigningKey> {
  return (await generateSigningKey('ed25519', kid)).key;
}

export function jwksOf(...keys: SigningKey[]): { keys: unknown[] } {
  return { keys: keys.map((k) => publishedJwk(k, profile)) };
}

/**
 * `https://<name>:<port>/...` fetched as plain http from 127.0.0.1 (the port is the local
 * document server's): the guard still runs, only name resolution is pinned.
 */
export function namedHostFetch(names: readonly string[]): RawFetch {
  return (url, opts) => {
    const u = new URL(url);
    if (!names.includes(u.hostname)) throw new Error(`unexpected host ${u.hostname}`);
    u.protocol = 'http:';
    return safeFetch(u.toString(), {
      ...opts,
      allowHosts: names,
      lookup: async () => [{ address: '127.0.0.1', family: 4 }],
    });
  };
}

export interface Delivery {
  status: number;
  code: string | undefined;
  wwwAuthenticate: string | undefined;
}

export async function receiverOver(
  t: Test,
  pool: Pool,
  schema: string,
  keys: KeyResolver,
  retryHorizonSeconds?: (sender: string) => number | undefined,
  admission?: KeyObserver,
): Promise<{
  events: ReceivedEvent[];
  receiver: WebhookReceiver;
  deliver(key: SigningKey, opts?: { now?: number }): Promise<Delivery>;
}> {
  const events: ReceivedEvent[] = [];
  const receiver = new WebhookReceiver({
    pool,
    schema,
    profile,
    protocolVersion: '3.2',
    keys,
    replay: new MemoryReplayStore(),
    publisher: new HandlerPublisher(async (e) => {
      events.push(e);
    }),
    retryHorizonSeconds,
    admission,
  });
  await receiver.migrate();
  const { url, server } = await listen(receiver);
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return {
    events,
    receiver,
    async deliver(key, opts = {}) {
      const target = `${url}/hooks/${randomBytes(3).toString('hex')}`;
      const body = Buffer.from(
        JSON.stringify(envelope({ task_id: `t_${randomBytes(4).toString('hex')}` })),
      );
      const headers = signWebhook(
        { method: 'POST', url: target, body },
        { key, profile, now: opts.now },
      );
      const res = await post(target, body, headers);
      const www = res.headers['www-authenticate'];
      const wwwAuthenticate = Array.isArray(www) ? www[0] : www;
      const code = /error="([^"]+)"/.exec(wwwAuthenticate ?? '')?.[1];
      return { status: res.status, code, wwwAuthenticate };
    },
  };
}
