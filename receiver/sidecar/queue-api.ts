/**
 * The queue pull API of the sidecar, for apps that consume the durable queue over HTTP.
 * Both calls need `Authorization: Bearer <queue token>` (the sidecar's webhook port faces
 * senders; the token keeps them out of the queue).
 *
 *   POST /_queue/claim  {"max": 10, "lease_seconds": 30}
 *     200 {"items": [{"id", "token", "sender", "idempotency_key", "attempts", "flags",
 *                     "envelope": <the verified body, verbatim>}]}
 *   POST /_queue/ack    {"items": [{"id", "token"}]}
 *     200 {"acked": <n>}   (acks with a stale token are ignored: the item was re-claimed)
 *
 * Unacked items come back after their lease: delivery to the app is at-least-once, and
 * (sender, idempotency_key) identifies duplicates.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { JsonParseError, parseStrictJson } from '../../shared/json/strict-parse.js';
import { requestPath } from '../http.js';
import { readBodyCapped } from '../pipeline/gates.js';
import type { DurableQueue } from '../publish/queue.js';

export const QUEUE_API_PREFIX = '/_queue/';
const MAX_API_BODY = 64 * 1024;

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(body);
}

function tokenMatches(header: string | undefined, token: string): boolean {
  const m = header === undefined ? null : /^Bearer +(\S+)$/i.exec(header.trim());
  if (!m) return false;
  const a = createHash('sha256')
    .update(m[1] as string)
    .digest();
  const b = createHash('sha256').update(token).digest();
  return timingSafeEqual(a, b);
}

export async function handleQueueApi(
  req: IncomingMessage,
  res: ServerResponse,
  queue: DurableQueue,
  token: string,
): Promise<void> {
  const path = requestPath(req.url);
  const op = path === '/_queue/claim' ? 'claim' : path === '/_queue/ack' ? 'ack' : null;
  if (!op) return send(res, 404, '{"error":{"code":"not_found","message":"unknown queue call"}}');
  if (req.method !== 'POST') {
    res.setHeader('allow', 'POST');
    return send(res, 405, '{"error":{"code":"method_not_allowed","message":"use POST"}}');
  }
  if (!tokenMatches(req.headers.authorization, token)) {
    res.setHeader('www-authenticate', 'Bearer');
    return send(res, 401, '{"error":{"code":"unauthorized","message":"queue token required"}}');
  }
  let input: Record<string, unknown>;
  try {
    const raw = await readBodyCapped(req, MAX_API_BODY, req.headers['content-length'] ?? null);
    const v = raw.length === 0 ? {} : parseStrictJson(raw);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new TypeError('object');
    input = v as Record<string, unknown>;
  } catch (err) {
    const msg = err instanceof JsonParseError ? err.code : 'body must be a JSON object';
    return send(res, 400, JSON.stringify({ error: { code: 'invalid_request', message: msg } }));
  }
  if (op === 'claim') {
    const max = typeof input.max === 'number' ? input.max : 10;
    const lease = typeof input.lease_seconds === 'number' ? input.lease_seconds : 30;
    const items = await queue.claim({ max, leaseSeconds: lease });
    // The envelope is the verified body, embedded verbatim (it is strict JSON already).
    const parts = items.map(
      (i) =>
        `{"id":${JSON.stringify(i.id)},"token":${JSON.stringify(i.token)},"sender":${JSON.stringify(
          i.sender,
        )},"idempotency_key":${JSON.stringify(i.idempotencyKey)},"attempts":${i.attempts},"flags":${JSON.stringify(
          i.flags,
        )},"envelope":${i.body.toString('utf8')}}`,
    );
    return send(res, 200, `{"items":[${parts.join(',')}]}`);
  }
  const list = Array.isArray(input.items) ? input.items : null;
  if (!list || list.length > 1000) {
    return send(
      res,
      400,
      '{"error":{"code":"invalid_request","message":"items: 1-1000 {id, token}"}}',
    );
  }
  const acks = list
    .filter(
      (x): x is { id: string; token: string } =>
        !!x && typeof x === 'object' && typeof x.id === 'string' && typeof x.token === 'string',
    )
    .map((x) => ({ id: x.id, token: x.token }));
  const acked = await queue.ack(acks);
  return send(res, 200, JSON.stringify({ acked }));
}
