/**
 * Receivers for grading: our real WebhookReceiver (PostgreSQL idempotency, replay store
 * and convergence) behind node:http, with a dispatch-count URL and a harness hook for
 * vectors 017-019; and a small reference receiver built from the lead's verifier and an
 * in-memory dedup, with knobs that break it on purpose.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { brandProfile, type BrandProfile } from '../../../shared/brand.js';
import { WebhookVerificationError } from '../../../shared/errors/webhook-codes.js';
import { readEnvelope } from '../../../receiver/pipeline/envelope.js';
import { parseStrictJson } from '../../../shared/json/strict-parse.js';
import { canonicalJson } from '../../../shared/json/canonical.js';
import { verifyHmac } from '../../../shared/legacy/hmac.js';
import {
  generateSigningKey,
  publishedJwk,
  type JWK,
  type SigningKey,
} from '../../../shared/signing/keys.js';
import {
  verifyWebhookSignature,
  type KeyResolver,
  type ReplayStore,
  type RevocationCheck,
} from '../../../shared/signing/verify.js';
import { nodeListener } from '../../../receiver/http.js';
import { WebhookReceiver } from '../../../receiver/pipeline/receiver.js';
import { HandlerPublisher } from '../../../receiver/publish/handler.js';
import { PgReplayStore } from '../../../receiver/replay/pg-replay-store.js';
import { parseTrust, routeRegistration } from '../../../receiver/trust/trust-file.js';
import type { Pool } from '../../../shared/infra/pg.js';

export const profile: BrandProfile = brandProfile('svc');

export interface TesterKeys {
  ed: SigningKey;
  es: SigningKey;
  wrongPurpose: SigningKey;
  signOnly: SigningKey;
  /** The public JWKs as the receiver publishes them to itself. */
  jwks: JWK[];
}

export async function testerKeys(p: BrandProfile = profile): Promise<TesterKeys> {
  const tag = randomBytes(3).toString('hex');
  const ed = (await generateSigningKey('ed25519', `conf-ed-${tag}`)).key;
  const es = (await generateSigningKey('ecdsa-p256-sha256', `conf-es-${tag}`)).key;
  const wrongPurpose = (await generateSigningKey('ed25519', `conf-resp-${tag}`)).key;
  const signOnly = (await generateSigningKey('ed25519', `conf-signonly-${tag}`)).key;
  const jwks = [
    publishedJwk(ed, p),
    publishedJwk(es, p),
    { ...publishedJwk(wrongPurpose, p), [p.useMember]: 'response-signing' },
    { ...publishedJwk(signOnly, p), key_ops: ['sign'] },
  ];
  return { ed, es, wrongPurpose, signOnly, jwks };
}

export function resolverOver(jwks: JWK[], senderId = 'conformance-tester'): KeyResolver {
  const map = new Map(jwks.map((j) => [j.kid as string, j]));
  return {
    async resolve(kid) {
      const jwk = map.get(kid);
      return jwk ? { jwk, senderId } : null;
    },
  };
}

/** Revocation state the harness hook sets (vectors 017 and 019). */
export class HarnessRevocation implements RevocationCheck {
  revoked = new Set<string>();
  stale = false;
  status(keyid: string): 'ok' | 'revoked' | 'stale' {
    if (this.stale) return 'stale';
    return this.revoked.has(keyid) ? 'revoked' : 'ok';
  }
}

export const HMAC_SECRET = 'conformance-hmac-secret-0123456789-abcdefXYZ';
export const HMAC_PATH = '/legacy/hmac';

interface Listening {
  url: string;
  close(): Promise<void>;
}

async function listen(server: Server, path = ''): Promise<Listening> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** GET → `{"count": n}`; POST → harness state (`{state}` installs, `{reset: true}` clears). */
async function sideServer(
  count: () => number,
  harness: (msg: Record<string, unknown>) => Promise<boolean>,
): Promise<Listening> {
  const server = createServer(async (req, res) => {
    if (req.method === 'GET') {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ count: count() }));
      return;
    }
    const body = await readBody(req);
    const ok = await harness(JSON.parse(body.toString()) as Record<string, unknown>);
    res.writeHead(ok ? 204 : 400).end();
  });
  return listen(server);
}

export interface GradedReceiver {
  url: string;
  countUrl: string;
  harnessUrl: string;
  dispatched: unknown[];
  close(): Promise<void>;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Our WebhookReceiver, as a buyer would deploy it, trusting the tester's keys. */
export async function realReceiver(
  t: Teardown,
  db: { pool: Pool; schema: string },
  keys: TesterKeys,
  protocolVersion: '3.1' | '3.2' = '3.2',
  brand: BrandProfile = profile,
): Promise<GradedReceiver> {
  const dispatched: unknown[] = [];
  const revocation = new HarnessRevocation();
  const replay = new PgReplayStore(db.pool, { schema: db.schema });
  await replay.migrate();
  const trust = parseTrust({
    senders: [{ id: 'conformance-tester', jwks: { keys: keys.jwks } }],
    legacy: [
      {
        path_prefix: HMAC_PATH,
        sender: 'legacy-tester',
        scheme: 'HMAC-SHA256',
        secrets: [HMAC_SECRET],
      },
    ],
  });
  const receiver = new WebhookReceiver({
    pool: db.pool,
    schema: db.schema,
    profile: brand,
    protocolVersion,
    keys: resolverOver(keys.jwks),
    revocation,
    replay,
    route: (path) => routeRegistration(trust, path),
    publisher: new HandlerPublisher((e) => {
      dispatched.push(e);
    }),
  });
  await receiver.migrate();
  const main = await listen(createServer(nodeListener(receiver)), '/webhooks/svc');
  const filled = new Set<string>();
  const side = await sideServer(
    () => dispatched.length,
    async (msg) => {
      if (msg.reset) {
        revocation.revoked.clear();
        revocation.stale = false;
        for (const kid of filled) await replay.harnessClearCap(kid);
        filled.clear();
        return true;
      }
      const state = (msg.state ?? {}) as Record<string, unknown>;
      if (Array.isArray(state.revoked_kids))
        for (const k of state.revoked_kids) revocation.revoked.add(String(k));
      if (typeof state.per_keyid_cap_filled_for === 'string') {
        filled.add(state.per_keyid_cap_filled_for);
        await replay.harnessFillCap(state.per_keyid_cap_filled_for);
      }
      if (typeof state.revocation_list_stale_seconds === 'number') revocation.stale = true;
      return true;
    },
  );
  const out: GradedReceiver = {
    url: main.url,
    countUrl: side.url,
    harnessUrl: side.url,
    dispatched,
    close: async () => {
      await main.close();
      await side.close();
      await replay.stop();
      await receiver.close();
    },
  };
  t.teardown(out.close);
  return out;
}

/** What a broken reference receiver gets wrong. */
export interface Breakage {
  /** Treats a digest mismatch as fine (step 11 skipped). */
  skipDigest?: boolean;
  /** Verifies with whatever tag the request carries (step 3 skipped). */
  anyTag?: boolean;
  /** Answers 409 to an exact duplicate (non-conformant). */
  conflictOnDuplicate?: boolean;
}

/**
 * A small receiver straight from the supplement: gates, the lead's verifier, strict parse,
 * envelope, an in-memory dedup on (sender, key) with JCS fingerprints, ordering by
 * timestamp per task, and a legacy HMAC route. In memory because it is a test fixture.
 */
export async function referenceReceiver(
  t: Teardown,
  keys: TesterKeys,
  breakage: Breakage = {},
): Promise<GradedReceiver> {
  const dispatched: unknown[] = [];
  const seenNonces = new Set<string>();
  const replay: ReplayStore = {
    async atCap() {
      return false;
    },
    async seen(k, n) {
      return seenNonces.has(`${k} ${n}`);
    },
    async insert(k, n) {
      if (seenNonces.has(`${k} ${n}`)) return 'replayed';
      seenNonces.add(`${k} ${n}`);
      return 'inserted';
    },
  };
  const bindings = new Map<string, string>();
  const latest = new Map<string, string>();
  const resolver = resolverOver(keys.jwks);
  const server = createServer(async (req, res) => {
    const reply = (status: number, body: unknown = {}, headers: Record<string, string> = {}) =>
      res
        .writeHead(status, { 'content-type': 'application/json', ...headers })
        .end(JSON.stringify(body));
    if (req.method !== 'POST') return reply(405, { error: 'method_not_allowed' });
    if ((req.headers['content-type'] ?? '') !== 'application/json') return reply(415, {});
    const body = await readBody(req);
    if (body.length > 1024 * 1024) return reply(413, {});
    const url = `http://${req.headers.host}${req.url}`;
    let sender = 'conformance-tester';
    try {
      if (req.url?.startsWith(HMAC_PATH)) {
        verifyHmac({
          secrets: [HMAC_SECRET],
          signature: req.headers[profile.hmacSignatureHeader.toLowerCase()] as string | undefined,
          timestamp: req.headers[profile.hmacTimestampHeader.toLowerCase()] as string | undefined,
          body,
        });
        sender = 'legacy';
      } else {
        let p = profile;
        if (breakage.anyTag) {
          const tag = /;tag="([^"]*)"/.exec(String(req.headers['signature-input']))?.[1];
          if (tag) p = { ...profile, webhookTag: tag };
        }
        try {
          await verifyWebhookSignature(
            { method: req.method, url, headers: req.headers, body },
            { profile: p, keys: resolver, replay },
          );
        } catch (err) {
          if (!(
            breakage.skipDigest &&
            err instanceof WebhookVerificationError &&
            err.code === 'webhook_signature_digest_mismatch'
          ))
            throw err;
        }
      }
    } catch (err) {
      if (err instanceof WebhookVerificationError) {
        return reply(401, { error: err.code }, { 'www-authenticate': err.wwwAuthenticate });
      }
      return reply(401, { error: 'unauthorized' });
    }
    let value: unknown;
    try {
      value = parseStrictJson(body);
    } catch {
      return reply(401, {}, { 'www-authenticate': 'Signature error="webhook_body_malformed"' });
    }
    // Every kind a buyer receives (task envelopes, list changes, artifacts, revocations).
    const event = readEnvelope(value);
    if ('error' in event) return reply(422, event.error.toJSON());
    const key = `${sender} ${event.idempotencyKey}`;
    const fp = canonicalJson(value);
    const bound = bindings.get(key);
    if (bound !== undefined) {
      if (bound !== fp) return reply(409, { error: 'idempotency_conflict' });
      return breakage.conflictOnDuplicate
        ? reply(409, { error: 'duplicate' })
        : reply(200, { status: 'duplicate' });
    }
    bindings.set(key, fp);
    const task = `${sender} ${event.taskId}`;
    const last = event.taskId === null ? undefined : latest.get(task);
    if (last !== undefined && event.timestamp !== null && event.timestamp <= last) {
      return reply(200, { status: 'stale' });
    }
    if (event.timestamp && event.taskId !== null) latest.set(task, event.timestamp);
    dispatched.push(value);
    return reply(200, { status: 'published' });
  });
  const main = await listen(server, '/hooks');
  const side = await sideServer(
    () => dispatched.length,
    async () => false,
  );
  const out: GradedReceiver = {
    url: main.url,
    countUrl: side.url,
    harnessUrl: side.url,
    dispatched,
    close: async () => {
      await main.close();
      await side.close();
    },
  };
  t.teardown(out.close);
  return out;
}
