/**
 * The grading receiver: an HTTP server the sender under test delivers to. Each step has
 * its own URL, `<public base>/step/<step_id>/<capture_id>` (the capture id is random and
 * deliberately not the operation id, so a sender that parses URLs is caught). Every
 * delivery is verified on arrival, under the full verifier with ONE replay store for the
 * whole run (a nonce reused anywhere in the run is a replay), and answered as the step's
 * script says (503 three times, 409 once...).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BrandProfile } from '../../shared/brand.js';
import { WebhookVerificationError } from '../../shared/errors/webhook-codes.js';
import { JsonParseError, parseStrictJson } from '../../shared/json/strict-parse.js';
import {
  verifyWebhookSignature,
  type KeyResolver,
  type ReplayStore,
} from '../../shared/signing/verify.js';

/** 1 MB: what a receiver should accept at most (supplement §1 pre-checks). */
const MAX_BODY = 1024 * 1024;

export type Verification =
  | { ok: true; keyid: string; nonce: string; created: number }
  | { ok: false; code: string; message: string };

export interface Capture {
  stepId: string;
  captureId: string;
  /** Order of arrival within the step, from 0. */
  index: number;
  /** Milliseconds since the epoch. */
  at: number;
  method: string;
  /** The URL the sender was given (the signed @target-uri). */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  verification: Verification;
  /** Parsed body, or null when not JSON (strict: duplicate keys refused). */
  json: unknown;
  answered: number;
}

/** A step's answer to its n-th delivery (from 0), given the verification and the body. */
export type StepScript = (index: number, v: Verification, json: unknown) => number;

/** Default: 2xx for a delivery that verifies, 401 otherwise (as a receiver would). */
export const acceptVerified: StepScript = (_i, v) => (v.ok ? 200 : 401);

/** In-memory (keyid, nonce) set: the run is the kit's own, discarded at its end. */
export class RunReplayStore implements ReplayStore {
  private readonly seenSet = new Set<string>();
  async atCap(): Promise<boolean> {
    return false;
  }
  async seen(keyid: string, nonce: string): Promise<boolean> {
    return this.seenSet.has(`${keyid}\n${nonce}`);
  }
  async insert(keyid: string, nonce: string): Promise<'inserted' | 'replayed'> {
    const k = `${keyid}\n${nonce}`;
    if (this.seenSet.has(k)) return 'replayed';
    this.seenSet.add(k);
    return 'inserted';
  }
}

export interface GradingServerOptions {
  profile: BrandProfile;
  keys: KeyResolver;
  /** Default 127.0.0.1:0. */
  host?: string;
  port?: number;
  /** What the sender is told to call, when not the listening address (tunnel, proxy). */
  publicUrl?: string;
}

interface Step {
  captureId: string;
  script: StepScript;
  captures: Capture[];
  waiters: Array<() => void>;
}

const STEP_PATH = /\/step\/([A-Za-z0-9_.-]{1,64})\/([A-Za-z0-9_-]{1,64})$/;

function readBody(req: IncomingMessage): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        resolve(null);
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', () => resolve(null));
  });
}

export class GradingServer {
  readonly replay = new RunReplayStore();
  private readonly steps = new Map<string, Step>();
  private server: Server | null = null;
  private base = '';

  constructor(private readonly o: GradingServerOptions) {}

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      this.handle(req).then(
        ({ status, headers }) => res.writeHead(status, headers).end(),
        () => res.writeHead(503).end(),
      );
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(this.o.port ?? 0, this.o.host ?? '127.0.0.1', resolve);
    });
    const { port, address } = this.server.address() as AddressInfo;
    const host = address.includes(':') ? `[${address}]` : address;
    this.base = (this.o.publicUrl ?? `http://${host}:${port}`).replace(/\/+$/, '');
    return this.base;
  }

  /** Opens a step: its URL, answered by `script`. */
  openStep(stepId: string, script: StepScript = acceptVerified): string {
    const captureId = `cap_${randomBytes(9).toString('base64url')}`;
    this.steps.set(stepId, { captureId, script, captures: [], waiters: [] });
    return `${this.base}/step/${stepId}/${captureId}`;
  }

  captures(stepId: string): Capture[] {
    return this.steps.get(stepId)?.captures ?? [];
  }

  /** Every capture of the run, in arrival order. */
  allCaptures(): Capture[] {
    return [...this.steps.values()].flatMap((s) => s.captures).sort((a, b) => a.at - b.at);
  }

  /** Resolves when `until(captures)` holds or the time is up; returns the captures. */
  async waitFor(
    stepId: string,
    until: (captures: Capture[]) => boolean,
    timeoutMs: number,
  ): Promise<Capture[]> {
    const step = this.steps.get(stepId);
    if (!step) return [];
    const deadline = Date.now() + timeoutMs;
    while (!until(step.captures)) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        step.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return step.captures;
  }

  private async handle(
    req: IncomingMessage,
  ): Promise<{ status: number; headers: Record<string, string> }> {
    const path = (req.url ?? '/').split('?', 1)[0]!;
    const m = STEP_PATH.exec(path);
    const step = m ? this.steps.get(m[1]!) : undefined;
    if (!m || !step || step.captureId !== m[2]) {
      req.resume();
      return { status: 404, headers: {} };
    }
    const body = await readBody(req);
    if (body === null) return { status: 413, headers: { connection: 'close' } };
    const query = (req.url ?? '').slice(path.length);
    const url = `${this.base}/step/${m[1]}/${m[2]}${query}`;
    const headers = { ...req.headers };
    // Host is the grading server's own address; the sender signed the public URL's authority.
    if (this.o.publicUrl) delete headers.host;
    const verification = await this.verify(req.method ?? 'GET', url, headers, body);
    let json: unknown = null;
    try {
      json = parseStrictJson(body);
    } catch (err) {
      if (!(err instanceof JsonParseError)) throw err;
    }
    const index = step.captures.length;
    const answered = step.script(index, verification, json);
    step.captures.push({
      stepId: m[1]!,
      captureId: m[2]!,
      index,
      at: Date.now(),
      method: req.method ?? '',
      url,
      headers: req.headers,
      body,
      verification,
      json,
      answered,
    });
    for (const w of step.waiters.splice(0)) w();
    const out: Record<string, string> = {};
    if (answered === 401 && !verification.ok) {
      out['www-authenticate'] = `Signature error="${verification.code}"`;
    }
    return { status: answered, headers: out };
  }

  private async verify(
    method: string,
    url: string,
    headers: IncomingMessage['headers'],
    body: Buffer,
  ): Promise<Verification> {
    try {
      const v = await verifyWebhookSignature(
        { method, url, headers, body },
        { profile: this.o.profile, keys: this.o.keys, replay: this.replay },
      );
      try {
        parseStrictJson(body);
      } catch (err) {
        if (err instanceof JsonParseError) {
          return { ok: false, code: 'webhook_body_malformed', message: err.code };
        }
        throw err;
      }
      return { ok: true, keyid: v.keyid, nonce: v.nonce, created: v.created };
    } catch (err) {
      if (err instanceof WebhookVerificationError) {
        return { ok: false, code: err.code, message: err.message };
      }
      return { ok: false, code: 'verifier_error', message: (err as Error).message };
    }
  }

  async close(): Promise<void> {
    const s = this.server;
    if (!s) return;
    this.server = null;
    for (const step of this.steps.values()) for (const w of step.waiters.splice(0)) w();
    await new Promise<void>((resolve) => {
      s.closeAllConnections();
      s.close(() => resolve());
    });
  }
}
