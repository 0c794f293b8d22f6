/**
 * Senders for grading: a key publication server (brand.json -> jwks_uri -> JWKS on
 * 127.0.0.1) and a sender scripted with the lead's signWebhook, driven by the kit through
 * the SenderDriver interface, with flaws that can be switched on one at a time.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { publishedJwk, type JWK, type SigningKey } from '../../../shared/signing/keys.js';
import { newNonce, signWebhook } from '../../../shared/signing/sign.js';
import type {
  SenderDriver,
  StepRequest,
  TriggerOutcome,
} from '../../../conformance/grade-sender/driver.js';
import { profile } from './receivers.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface Publication {
  origin: string;
  agentUrl: string;
  brandJsonUrl: string;
  jwksUrl: string;
}

/** Serves `/.well-known/brand.json` and `/.well-known/jwks.json` for the given JWKs. */
export async function publishKeys(t: Teardown, jwks: JWK[] | (() => JWK[])): Promise<Publication> {
  let origin = '';
  const server = createServer((req, res) => {
    const json = (v: unknown) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(v));
    if (req.url === '/.well-known/jwks.json')
      return json({ keys: typeof jwks === 'function' ? jwks() : jwks });
    if (req.url === '/.well-known/brand.json') {
      return json({
        agents: [
          {
            type: 'sales',
            id: 'conformance_sales',
            url: `${origin}/mcp`,
            jwks_uri: `${origin}/.well-known/jwks.json`,
          },
        ],
      });
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.teardown(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return {
    origin,
    agentUrl: `${origin}/mcp`,
    brandJsonUrl: `${origin}/.well-known/brand.json`,
    jwksUrl: `${origin}/.well-known/jwks.json`,
  };
}

export interface Flaws {
  /** Signs every retry with the first attempt's nonce. */
  reuseNonce?: boolean;
  /** Draws a new idempotency_key for every retry. */
  newKeyOnRetry?: boolean;
  /** Changes a payload member on every retry. */
  changeBodyOnRetry?: boolean;
  /** Sends a webhook even when the initial response was terminal. */
  webhookOnTerminal?: boolean;
  /** Treats 409 like 503. */
  retryAfter409?: boolean;
  /** Leaves the request's context out of the payload. */
  dropContext?: boolean;
  /** Uses `whk_<unix ms>` keys. */
  timestampKeys?: boolean;
}

export interface Behaviour extends Flaws {
  /** Not a flaw: each operation fires `working` and then `completed`, two events. */
  workingFirst?: boolean;
}

/** A sender written against the spec in a few lines, with switchable flaws. */
export class ScriptedSender implements SenderDriver {
  readonly name = 'scripted-sender';
  private readonly loops: Promise<void>[] = [];

  constructor(
    private readonly key: SigningKey,
    private readonly flaws: Behaviour = {},
  ) {}

  static jwks(key: SigningKey): JWK[] {
    return [publishedJwk(key, profile)];
  }

  async prepare(): Promise<string | null> {
    return null;
  }

  async trigger(step: StepRequest): Promise<TriggerOutcome> {
    if (step.initial === 'terminal' && !this.flaws.webhookOnTerminal) return { triggered: true };
    if (this.flaws.workingFirst) {
      this.loops.push(this.deliver(step, 'working').then(() => this.deliver(step, 'completed')));
    } else this.loops.push(this.deliver(step, 'completed'));
    return { triggered: true };
  }

  private newKey(): string {
    return this.flaws.timestampKeys
      ? `whk_${Date.now()}`
      : `whk_${randomUUID().replaceAll('-', '')}`;
  }

  private readonly tasks = new Map<string, string>();

  private async deliver(step: StepRequest, status: string): Promise<void> {
    const taskId = this.tasks.get(step.url) ?? `task_${randomUUID()}`;
    this.tasks.set(step.url, taskId);
    const envelope: Record<string, unknown> = {
      idempotency_key: this.newKey(),
      operation_id: step.operationId,
      task_id: taskId,
      task_type: 'create_media_buy',
      status,
      timestamp: new Date().toISOString(),
      result: { media_buy_id: 'mb_1' },
    };
    if (!this.flaws.dropContext) envelope.context = step.context;
    const firstNonce = newNonce();
    for (let attempt = 1; attempt <= 6; attempt++) {
      if (attempt > 1) {
        if (this.flaws.newKeyOnRetry) envelope.idempotency_key = this.newKey();
        if (this.flaws.changeBodyOnRetry) envelope.message = `attempt ${attempt}`;
      }
      const body = JSON.stringify(envelope);
      const headers = signWebhook(
        { method: 'POST', url: step.url, body },
        { key: this.key, profile, ...(this.flaws.reuseNonce ? { nonce: firstNonce } : {}) },
      );
      let status = 0;
      try {
        const res = await request(step.url, { method: 'POST', headers, body });
        await res.body.dump();
        status = res.statusCode;
      } catch {
        status = 0;
      }
      if (status >= 200 && status < 300) return;
      if (status === 409 && !this.flaws.retryAfter409) return;
      if (status === 401) return;
      await new Promise((r) => setTimeout(r, 100 * attempt));
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.loops);
  }
}
