/**
 * `svc received list|republish`: the sidecar console's published events and its Re-publish
 * from a terminal. The action lives in the running sidecar (only it holds the publisher):
 * the command calls the console's JSON API with the console token as a Bearer, so it is
 * the same action, audited (`via: cli`) like the console's button. The console's address
 * and token come from `--console` / `SVC_RECEIVER_CONSOLE_TOKEN`, else the
 * `receiver_console` section of `<SVC_DATA_DIR>/credentials.json` that the sidecar wrote.
 */
import type { Writable } from 'node:stream';
import type { Command } from 'commander';
import { loadConfigOrExit } from '../../shared/config.js';
import { readCredentials } from '../../shared/infra/credentials-file.js';
import { publishedFilterOf } from './routes.js';
import { ConsoleActionFailure, ConsoleInputFailure } from './errors.js';
import type { PublishedRow, RepublishResult } from './published-log.js';

export interface ConsoleTarget {
  url: string;
  token: string;
}

/** Where the running sidecar console is, and its token. */
export async function consoleTarget(o: { console?: string }): Promise<ConsoleTarget> {
  const config = loadConfigOrExit();
  const section = (await readCredentials(config.SVC_DATA_DIR)).receiver_console as
    { url?: string; token?: string } | undefined;
  const url = o.console ?? section?.url;
  const token = process.env.SVC_RECEIVER_CONSOLE_TOKEN ?? section?.token;
  if (!url) {
    throw new ConsoleInputFailure(
      'console',
      'the console URL (no receiver_console.url in credentials.json)',
    );
  }
  let parsed: URL | null = null;
  try {
    parsed = new URL(url);
  } catch {
    // reported below
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    throw new ConsoleInputFailure(
      'console',
      `an http(s) URL of the sidecar's console (--console-listen), got "${url}"`,
    );
  }
  if (!token) {
    throw new ConsoleInputFailure(
      'token',
      'SVC_RECEIVER_CONSOLE_TOKEN, or receiver_console.token in credentials.json',
    );
  }
  return { url: url.replace(/\/+$/, ''), token };
}

async function call(
  t: ConsoleTarget,
  method: string,
  path: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  // Nothing there, or something that is not the console: said so, with what to check.
  const unreachable = (why: string) =>
    new ConsoleActionFailure(
      503,
      'CONSOLE_UNREACHABLE',
      `the sidecar console at ${t.url} ${why}: is \`svc receiver --console-listen\` running there?`,
    );
  let res: Response;
  try {
    res = await fetch(`${t.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${t.token}`, 'x-svc-via': 'cli' },
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    throw unreachable(`does not answer${cause ? ` (${cause})` : ''}`);
  }
  try {
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  } catch {
    throw unreachable(`answered HTTP ${res.status} with no JSON`);
  }
}

function refused(body: Record<string, unknown>): string {
  const e = body.error as { code?: string; message?: string } | undefined;
  return `${e?.code ?? 'ERROR'}: ${e?.message ?? 'refused'}`;
}

/** Published events, newest first: one line each. */
export async function listPublished(
  t: ConsoleTarget,
  q: Record<string, string | undefined>,
  json: boolean,
  out: Writable,
): Promise<number> {
  const f = publishedFilterOf(q);
  const qs = new URLSearchParams(Object.entries(f) as Array<[string, string]>).toString();
  const r = await call(t, 'GET', `/api/published${qs ? `?${qs}` : ''}`);
  if (r.status !== 200) {
    process.stderr.write(`${refused(r.body)}\n`);
    return 1;
  }
  const items = r.body.items as PublishedRow[];
  if (json) {
    out.write(`${JSON.stringify(items, null, 2)}\n`);
    return 0;
  }
  for (const p of items) {
    out.write(
      `${p.id}  ${p.lastAt}  ${p.outcome.padEnd(9)} ${p.sender}  ${p.idempotencyKey}  publishes ${p.publishes}${p.error ? `  ${JSON.stringify(p.error)}` : ''}${p.bodyKept ? '' : '  (body not kept)'}\n`,
    );
  }
  return 0;
}

/** Re-publishes one event; exit 0 when the app took it. */
export async function republish(t: ConsoleTarget, id: string, out: Writable): Promise<number> {
  const r = await call(t, 'POST', `/api/published/${encodeURIComponent(id)}/republish`);
  if (r.status !== 200 && r.status !== 502) {
    process.stderr.write(`${refused(r.body)}\n`);
    return 1;
  }
  const x = r.body as unknown as RepublishResult;
  out.write(
    `event ${x.id} (${x.idempotencyKey}): ${x.outcome === 'published' ? 're-published to the app' : `re-publish failed: ${x.error ?? ''}`}\n`,
  );
  return x.outcome === 'published' ? 0 : 1;
}

async function guarded(fn: () => Promise<number>): Promise<void> {
  try {
    process.exitCode = await fn();
  } catch (err) {
    if (err instanceof ConsoleActionFailure) {
      process.stderr.write(`${err.code}: ${err.message}\n`);
      process.exitCode = 1;
      return;
    }
    if (!(err instanceof ConsoleInputFailure)) throw err;
    process.stderr.write(`INVALID_REQUEST: ${err.message}\n`);
    process.exitCode = 2;
  }
}

export function registerReceivedCommands(program: Command): void {
  const received = program
    .command('received')
    .description("The sidecar's published events (via its running console): list, republish");
  const common = (c: Command) =>
    c.option(
      '--console <url>',
      'the sidecar console (default: receiver_console.url of credentials.json)',
    );
  common(
    received
      .command('list')
      .description('Accepted events and how their hand-over to the app went, newest first')
      .option('--sender <id>', 'sender id')
      .option('--key <key>', 'idempotency key')
      .option('--outcome <outcome>', 'published or failed')
      .option('--before <id>', 'older than this event id')
      .option('--json', 'print JSON'),
  ).action(
    (o: {
      console?: string;
      sender?: string;
      key?: string;
      outcome?: string;
      before?: string;
      json?: boolean;
    }) =>
      guarded(async () =>
        listPublished(
          await consoleTarget(o),
          { sender: o.sender, key: o.key, outcome: o.outcome, before: o.before },
          !!o.json,
          process.stdout,
        ),
      ),
  );
  common(
    received
      .command('republish')
      .description(
        'Hand an accepted event to the app again: same idempotency key, flagged as a redelivery',
      )
      .argument('<id>', 'event id (the number the list prints)'),
  ).action((id: string, o: { console?: string }) =>
    guarded(async () => republish(await consoleTarget(o), id, process.stdout)),
  );
}
