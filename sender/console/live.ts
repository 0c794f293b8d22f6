/**
 * Live updates: while at least one browser listens, polls the attempt records landed since
 * the last poll (an index range read) and sends each once as a server-sent event. Records
 * are flushed in batches up to a few hundred ms after their time, so each poll looks back
 * a little and a bounded memory of what was sent drops the repeats.
 */
import type { ServerResponse } from 'node:http';
import type { Logger } from '../../shared/infra/logger.js';
import type { ConsoleStore, LandedAttempt } from './store.js';

const LOOK_BACK_MS = 3000;
const REMEMBER = 5000;

export class LiveFeed {
  private readonly clients = new Set<ServerResponse>();
  private readonly seen = new Set<string>();
  private since = new Date();
  private timer: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private polling = false;

  constructor(
    private readonly store: ConsoleStore,
    private readonly logger: Logger,
    private readonly everyMs = 500,
  ) {}

  add(res: ServerResponse): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write('retry: 2000\n\n');
    this.clients.add(res);
    res.on('close', () => {
      this.clients.delete(res);
      if (this.clients.size === 0) this.stop();
    });
    if (!this.timer) {
      this.since = new Date(Date.now() - LOOK_BACK_MS);
      this.timer = setInterval(() => void this.poll(), this.everyMs);
      this.heartbeat = setInterval(() => this.send(': keep-alive\n\n'), 15_000);
    }
  }

  private stop(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.timer = null;
    this.heartbeat = null;
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const from = new Date(this.since.getTime() - LOOK_BACK_MS);
      const landed = await this.store.landedSince(from);
      for (const a of landed) {
        const key = `${a.deliveryId}:${a.attempt}:${a.status}`;
        if (this.seen.has(key)) continue;
        this.seen.add(key);
        this.emit(a);
        const t = new Date(a.at);
        if (t > this.since) this.since = t;
      }
      while (this.seen.size > REMEMBER) this.seen.delete(this.seen.values().next().value!);
    } catch (err) {
      this.logger.warn({ err }, 'console live poll failed');
    } finally {
      this.polling = false;
    }
  }

  private emit(a: LandedAttempt): void {
    this.send(`event: attempt\ndata: ${JSON.stringify(a)}\n\n`);
  }

  private send(chunk: string): void {
    for (const c of this.clients) c.write(chunk);
  }

  close(): void {
    this.stop();
    for (const c of this.clients) c.end();
    this.clients.clear();
  }
}
