/**
 * Who makes the sender under test emit: the tester by hand (the kit prints, per step, the
 * push_notification_config to register and waits), or a driver that calls a seller
 * agent itself. Drivers sit behind one interface so the grading never depends on which.
 */
import { randomUUID } from 'node:crypto';
import { request } from 'undici';

export interface StepRequest {
  stepId: string;
  /** The URL to register as `push_notification_config.url`. */
  url: string;
  operationId: string;
  /** The request's top-level `context`; the sender must echo it verbatim. */
  context: Record<string, unknown>;
  /**
   * `async`: an operation whose initial response is working/submitted and which then
   * changes status (a webhook is due); `terminal`: one that completes in its initial
   * response (no webhook is due).
   */
  initial: 'async' | 'terminal';
  /** What a person has to do, for the manual driver. */
  instructions: string;
}

export type TriggerOutcome = { triggered: true; detail?: string } | { notApplicable: string };

export interface SenderDriver {
  readonly name: string;
  /** Null when ready; otherwise why nothing can be driven (driven checks are then n.a.). */
  prepare(): Promise<string | null>;
  trigger(step: StepRequest): Promise<TriggerOutcome>;
  close?(): Promise<void>;
}

export interface ManualIo {
  err: (text: string) => void;
  /** Resolves when the tester confirms; absent when nobody can answer (no TTY). */
  confirm?: (prompt: string) => Promise<void>;
}

/** The tester registers the printed URL with their sender and triggers the operation. */
export class ManualDriver implements SenderDriver {
  readonly name = 'manual';
  constructor(private readonly io: ManualIo) {}

  async prepare(): Promise<string | null> {
    return null;
  }

  async trigger(step: StepRequest): Promise<TriggerOutcome> {
    const config = { url: step.url, operation_id: step.operationId };
    this.io.err(
      `\n[${step.stepId}] ${step.instructions}\n` +
        `  push_notification_config: ${JSON.stringify(config)}\n` +
        `  context: ${JSON.stringify(step.context)}\n`,
    );
    if (step.initial === 'terminal') {
      // Silence proves nothing unless the tester says the operation really ran.
      if (!this.io.confirm) {
        return { notApplicable: 'needs the tester to confirm the operation ran (no terminal)' };
      }
      await this.io.confirm(
        '  Press Enter once the operation has returned its terminal response... ',
      );
    } else {
      this.io.err('  waiting for the webhook...\n');
    }
    return { triggered: true };
  }
}

/**
 * Drives a seller agent over MCP (JSON-RPC over HTTP): `create_media_buy` with a
 * `push_notification_config` for async steps, `get_products` (answered synchronously) for
 * the terminal one. When the agent cannot be reached or does not speak MCP, every driven
 * check is not applicable, with the reason.
 */
export class McpAgentDriver implements SenderDriver {
  readonly name = 'mcp-agent';
  private sessionId: string | undefined;
  private nextId = 1;

  constructor(
    private readonly agentUrl: string,
    private readonly opts: {
      headers?: Record<string, string>;
      timeoutMs?: number;
      createMediaBuy?: Record<string, unknown>;
    } = {},
  ) {}

  /** The agent's URL as given, or its `/mcp` endpoint when given its origin. */
  get endpoint(): string {
    const u = new URL(this.agentUrl);
    return u.pathname === '/' && !u.search ? `${u.origin}/mcp` : this.agentUrl;
  }

  private async rpc(method: string, params: unknown): Promise<unknown> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...this.opts.headers,
    };
    if (this.sessionId) headers['mcp-session-id'] = this.sessionId;
    const timeout = this.opts.timeoutMs ?? 10_000;
    const res = await request(this.endpoint, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, params }),
      headersTimeout: timeout,
      bodyTimeout: timeout,
    });
    const text = await res.body.text();
    if (res.statusCode < 200 || res.statusCode >= 300) {
      throw new Error(`${method}: HTTP ${res.statusCode}`);
    }
    const session = res.headers['mcp-session-id'];
    if (typeof session === 'string') this.sessionId = session;
    // Streamable HTTP may answer as one SSE event: take its data line.
    const json = text.trimStart().startsWith('{') ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? '');
    const msg = JSON.parse(json) as { result?: unknown; error?: { message?: string } };
    if (msg.error) throw new Error(`${method}: ${msg.error.message ?? 'JSON-RPC error'}`);
    return msg.result;
  }

  async prepare(): Promise<string | null> {
    try {
      await this.rpc('initialize', {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'svc-conformance', version: '0.1.0' },
      });
      return null;
    } catch (err) {
      return `the agent at ${this.agentUrl} cannot be driven over MCP (${(err as Error).message})`;
    }
  }

  async trigger(step: StepRequest): Promise<TriggerOutcome> {
    const push = { url: step.url, operation_id: step.operationId };
    const args =
      step.initial === 'async'
        ? {
            // The seller's own arguments first: the kit's members must win.
            ...this.opts.createMediaBuy,
            // Each step is a new buy: a given buyer_ref gets the step's operation id.
            ...(typeof this.opts.createMediaBuy?.buyer_ref === 'string'
              ? { buyer_ref: `${this.opts.createMediaBuy.buyer_ref}-${step.operationId}` }
              : {}),
            idempotency_key: randomUUID(),
            push_notification_config: push,
            context: step.context,
          }
        : { brief: 'conformance', push_notification_config: push, context: step.context };
    const tool = step.initial === 'async' ? 'create_media_buy' : 'get_products';
    try {
      const result = (await this.rpc('tools/call', { name: tool, arguments: args })) as {
        structuredContent?: Record<string, unknown>;
        isError?: boolean;
      };
      const status = result?.structuredContent?.status;
      if (step.initial === 'terminal' && (status === 'working' || status === 'submitted')) {
        return {
          notApplicable: `${tool} answered ${String(status)}: no terminal initial response to grade`,
        };
      }
      if (result?.isError) {
        return { notApplicable: `${tool} failed: ${toolError(result)}` };
      }
      return { triggered: true, detail: `${tool} answered ${String(status ?? 'without status')}` };
    } catch (err) {
      return { notApplicable: `${tool} could not be called: ${(err as Error).message}` };
    }
  }
}

/** An MCP tool error's whole text (its content's text parts), else the whole result. */
function toolError(result: unknown): string {
  const content = (result as { content?: Array<{ type?: string; text?: string }> }).content;
  const texts = Array.isArray(content)
    ? content.filter((c) => typeof c?.text === 'string').map((c) => c.text as string)
    : [];
  return texts.length > 0 ? texts.join(' ') : JSON.stringify(result);
}
