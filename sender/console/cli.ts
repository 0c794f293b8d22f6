/**
 * `svc deliveries list|show|redeliver|recover|pause|resume|test|search-index` (the console's reads and actions, straight
 * against the database) and `svc console` (the console on its own). The work is in
 * functions taking their output stream, so tests run them in-process.
 */
import { userInfo } from 'node:os';
import type { Writable } from 'node:stream';
import { Argument, CommanderError, InvalidArgumentError, Option, type Command } from 'commander';
import { envOption, flagsToEnv } from '../../shared/cli-options.js';
import { loadConfigOrExit } from '../../shared/config.js';
import type { Pool } from '../../shared/infra/pg.js';
import type { DeliveryQueue } from '../delivery/queue.js';
import { ConsoleActionError, ConsoleActions, type Operator } from './actions.js';
import {
  ConsoleInputError,
  decodeCursor,
  DELIVERY_STATES,
  FILTER_PARAMS,
  parseFilter,
  parseLimit,
  parseOrigin,
  parseTime,
} from './filters.js';
import { ConsoleStore, type Attempt, type DeliveryDetail } from './store.js';
import { timingText } from './pages/attempt.js';
import { SearchIndexes } from './search-index.js';
import {
  SEARCH_INDEX_ACTIONS,
  SEARCH_INDEX_HELP,
  searchIndexCommand,
  type SearchIndexAction,
} from './search-index-cli.js';

export interface ListOptions {
  status?: string;
  origin?: string;
  mediaBuy?: string;
  principal?: string;
  task?: string;
  type?: string;
  key?: string;
  payload?: string;
  from?: string;
  to?: string;
  cursor?: string;
  limit?: string;
  json?: boolean;
}

export function cliOperator(): Operator {
  let name = 'unknown';
  try {
    name = userInfo().username;
  } catch {
    // No user database entry (containers): the uid-less name stays.
  }
  return { name: `cli:${name}`, via: 'cli' };
}

/** The columns of `svc deliveries list`, tab-separated like its rows. */
export const LIST_HEADER = ['id', 'state', 'event', 'url', 'attempts', 'last', 'created'].join(
  '\t',
);

export async function listDeliveries(
  store: ConsoleStore,
  o: ListOptions,
  out: Writable,
): Promise<void> {
  const filter = parseFilter({
    [FILTER_PARAMS.status]: o.status,
    [FILTER_PARAMS.origin]: o.origin,
    [FILTER_PARAMS.mediaBuyId]: o.mediaBuy,
    [FILTER_PARAMS.principalId]: o.principal,
    [FILTER_PARAMS.taskId]: o.task,
    [FILTER_PARAMS.eventType]: o.type,
    [FILTER_PARAMS.idempotencyKey]: o.key,
    [FILTER_PARAMS.payload]: o.payload,
    [FILTER_PARAMS.from]: o.from,
    [FILTER_PARAMS.to]: o.to,
  });
  const page = await store.list(
    filter,
    o.cursor ? decodeCursor(o.cursor) : null,
    parseLimit(o.limit),
  );
  if (o.json) {
    out.write(`${JSON.stringify(page, null, 2)}\n`);
    return;
  }
  if (page.items.length > 0) out.write(`${LIST_HEADER}\n`);
  for (const d of page.items) {
    out.write(
      `${d.id}\t${d.state}\t${d.eventType}\t${d.url}\tattempts=${d.attempts}\t${d.lastStatus ?? '-'} ${d.lastError ?? ''}\t${d.createdAt}\n`,
    );
  }
  if (page.items.length === 0) out.write('no delivery matches\n');
  if (page.next) out.write(`older: --cursor ${page.next}\n`);
}

function describe(d: DeliveryDetail): string {
  const lines = [
    `delivery ${d.id}  ${d.state}`,
    `key        ${d.idempotencyKey}`,
    `event      ${d.eventType} (${d.channel})`,
    `target     ${d.url} (${d.authMode})`,
    `buy        ${d.mediaBuyId ?? '-'}   principal ${d.principalId ?? '-'}   task ${d.taskId ?? '-'}`,
    `created    ${d.createdAt}`,
    `next       ${d.nextAttemptAt ?? '-'}`,
    `last       ${d.lastStatus ?? '-'} ${d.lastError ?? ''}`,
    '',
    'attempts:',
    ...d.attemptList.flatMap((a) => [
      `  ${a.attempt}  ${a.status.padEnd(16)} ${a.firedAt}  ${a.httpStatus ?? '-'}  ${a.responseTimeMs ?? '-'} ms  ${a.error ?? ''}${a.requestedBy ? `  (requested by ${a.requestedBy})` : ''}`,
      ...(a.keyId || a.responseSnippet
        ? // Quoted as JSON: the snippet is the receiver's text, shown inert.
          [
            `     key ${a.keyId ?? '-'}  response ${a.responseSnippet === null ? '-' : JSON.stringify(a.responseSnippet)}`,
          ]
        : []),
      ...exchangeLines(a),
    ]),
    '',
    'body:',
    d.bodyPretty,
  ];
  return `${lines.join('\n')}\n`;
}

/** An attempt in full (headers both ways, timing); values JSON-quoted, shown inert. */
function exchangeLines(a: Attempt): string[] {
  const x = a.exchange;
  if (!x) return [];
  const headers = (h: Record<string, string>) =>
    Object.entries(h).map(([k, v]) => `       ${k}: ${JSON.stringify(v)}`);
  return [
    `     timing   ${timingText(x.timing)}`,
    '     request headers:',
    ...headers(x.request.headers),
    ...(x.response
      ? [
          `     response headers${x.response.truncated ? ' (first 40)' : ''}:`,
          ...headers(x.response.headers),
        ]
      : ['     no response']),
  ];
}

export async function showDelivery(
  store: ConsoleStore,
  id: string,
  json: boolean,
  out: Writable,
): Promise<boolean> {
  const d = await store.get(id);
  if (!d) return false;
  out.write(json ? `${JSON.stringify(d, null, 2)}\n` : describe(d));
  return true;
}

export async function redeliverCommand(
  actions: ConsoleActions,
  id: string,
  out: Writable,
): Promise<void> {
  const r = await actions.redeliver(id, cliOperator());
  out.write(`delivery ${r.id}: attempt ${r.attempt} requested\n`);
}

export async function recoverCommand(
  actions: ConsoleActions,
  origin: string,
  since: string,
  out: Writable,
  o: { dryRun?: boolean; all?: boolean } = {},
): Promise<void> {
  const at = parseTime('since', since);
  const dest = parseOrigin('origin', origin);
  const preview = await actions.recoverPreview(dest, at);
  if (o.dryRun) {
    out.write(
      `${preview.origin}: ${preview.count} stopped or expired deliveries since ${preview.since} would be sent again (at most ${preview.perCall} per run)\n`,
    );
    return;
  }
  // --all: run after run until none is left, bounded by the count seen first (a run cut
  // short, or a command interrupted, is resumed by running it again).
  const runs = o.all ? Math.max(1, Math.ceil(preview.count / preview.perCall)) + 1 : 1;
  for (let i = 0; i < runs; i++) {
    const r = await actions.recover(dest, at, cliOperator());
    out.write(
      `${r.origin}: ${r.recovered} stopped or expired deliveries since ${r.since} sent again${r.more ? ' (more remain: run it again)' : ''}\n`,
    );
    if (!r.more) break;
  }
}

/** `svc deliveries pause|resume|test <origin>`. */
export async function destinationCommand(
  actions: ConsoleActions,
  verb: 'pause' | 'resume' | 'test',
  origin: string,
  out: Writable,
): Promise<void> {
  const dest = parseOrigin('origin', origin);
  if (verb === 'test') {
    const r = await actions.sendTest(dest, cliOperator());
    out.write(`${r.origin}: test event sent as delivery ${r.id} to ${r.url}\n`);
    return;
  }
  const r = await actions[verb](dest, cliOperator());
  out.write(
    `${r.origin}: ${r.paused ? 'paused' : 'resumed'}; ${r.pending} deliveries ${r.paused ? 'wait' : 'pending'}\n`,
  );
}

interface Wired {
  pool: Pool;
  queue: DeliveryQueue;
  schema: string;
  close(): Promise<void>;
}

async function wire(
  schema: string,
  prefix: string | undefined,
  withQueue: boolean,
): Promise<Wired> {
  const config = loadConfigOrExit();
  // The same services every command uses: DATABASE_URL, else the embedded server of the
  // svc start on SVC_DATA_DIR; its Redis and queue prefix from its deployment file.
  const { commandServices } = await import('../../shared/infra/command-services.js');
  const services = await commandServices(config, { redis: withQueue ? 'check' : 'none' });
  const { createPool } = await import('../../shared/infra/pg.js');
  const { migrateSender } = await import('../schema.js');
  const pool = createPool({ connectionString: services.databaseUrl, max: 8 });
  await migrateSender(pool, schema);
  if (!withQueue) {
    return { pool, queue: null as unknown as DeliveryQueue, schema, close: () => pool.end() };
  }
  const { createRedis } = await import('../../shared/infra/redis.js');
  const { DeliveryQueue } = await import('../delivery/queue.js');
  const { deploymentQueuePrefix } = await import('../delivery/queue-prefix.js');
  const queuePrefix =
    prefix ?? services.queuePrefix ?? (await deploymentQueuePrefix(pool, schema, config.SVC_BRAND));
  const redis = createRedis(services.redisUrl);
  const queue = new DeliveryQueue({
    connection: redis,
    prefix: queuePrefix,
    shards: config.SVC_DISPATCH_SHARDS,
  });
  return {
    pool,
    queue,
    schema,
    close: async () => {
      // BullMQ's connection set-up (its Redis version check) may still be running when the
      // command is done (a NOT_FOUND answers before any Redis command): closed under it, it
      // emits an unhandled "Connection is closed" after the answer. Redis answered a moment
      // ago (commandServices), so waiting for it is short; then QUIT, not a cut connection.
      await Promise.all(queue.queues.map((q) => q.waitUntilReady().catch(() => {})));
      await queue.close();
      await redis.quit().catch(() => redis.disconnect());
      await pool.end();
    },
  };
}

/** Known errors become one line on stderr and exit 1 (2 for bad input). */
async function guarded(fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof ConsoleInputError) {
      process.stderr.write(`${err.code}: ${err.message}\n`);
      process.exitCode = 2;
      return;
    }
    if (err instanceof ConsoleActionError) {
      process.stderr.write(`${err.code}: ${err.message}\n`);
      process.exitCode = 1;
      return;
    }
    throw err;
  }
}

function listenAddress(v: string): { host: string; port: number } {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s]+):(\d{1,5})$/.exec(v);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) throw new InvalidArgumentError('HOST:PORT, e.g. 127.0.0.1:3004');
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
}

type Common = (c: Command) => Command;

/**
 * Runs `fn` on the database (and the workers' queue when `withQueue`), closing both after;
 * known errors become one line on stderr (`guarded`).
 */
async function withWired(
  o: { schema: string; prefix?: string },
  withQueue: boolean,
  fn: (w: Wired) => Promise<void>,
): Promise<void> {
  const w = await wire(o.schema, o.prefix, withQueue);
  try {
    await guarded(() => fn(w));
  } finally {
    await w.close();
  }
}

export function registerConsoleCommands(program: Command): void {
  const deliveries = program
    .command('deliveries')
    .description(
      "The seller's deliveries, as the console shows them: list, show, redeliver, recover, pause, resume, test, search-index",
    );
  const common: Common = (c) =>
    c.option('--schema <name>', 'PostgreSQL schema of the outbox', 'sender');
  registerReadCommands(deliveries, common);
  registerRedeliverCommands(deliveries, common);
  registerDestinationCommands(deliveries, common);
  registerSearchIndexCommand(deliveries, common);
  registerConsoleServe(program);
}

/** `svc deliveries search-index status|enable|disable [--contains] [--payload]`. */
function registerSearchIndexCommand(deliveries: Command, common: Common): void {
  common(
    deliveries
      .command('search-index')
      .description(
        'The contains and payload search indexes (off by default; each costs every event insert): status, enable, disable',
      )
      .addArgument(
        new Argument('<action>', 'status, enable or disable').choices(SEARCH_INDEX_ACTIONS),
      )
      .option('--contains', 'the contains (*value*) index (pg_trgm)')
      .option('--payload', 'the payload (path=value) index')
      .option('--json', 'print JSON')
      .addHelpText('after', SEARCH_INDEX_HELP)
      // A malformed flag or action is bad input: exit 2, as the other commands' (commander
      // says 1); its message names the option.
      .exitOverride((err) => {
        throw err.exitCode === 1 ? new CommanderError(2, err.code, err.message) : err;
      }),
  ).action(
    (
      action: SearchIndexAction,
      o: { schema: string; contains?: boolean; payload?: boolean; json?: boolean },
    ) =>
      withWired(o, false, (w) =>
        searchIndexCommand(
          new SearchIndexes(w.pool, w.schema),
          action,
          o,
          cliOperator(),
          process.stdout,
        ),
      ),
  );
}

/** `svc deliveries list` and `show`: reads, straight against the database. */
function registerReadCommands(deliveries: Command, common: Common): void {
  common(
    deliveries
      .command('list')
      .description('Deliveries, newest first, filtered')
      .addOption(new Option('--status <state>', 'delivery state').choices([...DELIVERY_STATES]))
      .option('--origin <origin>', 'destination origin, e.g. https://buyer.example')
      .option('--media-buy <id>', 'media buy id')
      .option('--principal <id>', 'principal id')
      .option('--task <id>', 'task id')
      .option('--type <type>', "event type: a task's type (create_media_buy), else scheduled...")
      .option('--key <key>', 'idempotency key')
      .option('--payload <path=value>', 'a value inside the payload, e.g. result.media_buy_id=mb_1')
      .option('--from <time>', 'created at or after (ISO 8601)')
      .option('--to <time>', 'created before (ISO 8601)')
      .option('--cursor <cursor>', 'continue after the page that printed it')
      .option('--limit <n>', 'rows per page, 1-200', '50')
      .option('--json', 'print JSON'),
  ).action((o: ListOptions & { schema: string }) =>
    withWired(o, false, (w) =>
      listDeliveries(new ConsoleStore(w.pool, w.schema), o, process.stdout),
    ),
  );

  common(
    deliveries
      .command('show')
      .description('One delivery: its attempts, why it stands where it stands, its body')
      .argument('<id>', 'delivery id (the number the list prints)')
      .option('--json', 'print JSON'),
  ).action((id: string, o: { schema: string; json?: boolean }) =>
    withWired(o, false, async (w) => {
      if (!(await showDelivery(new ConsoleStore(w.pool, w.schema), id, !!o.json, process.stdout))) {
        process.stderr.write(`NOT_FOUND: no delivery ${id}\n`);
        process.exitCode = 1;
      }
    }),
  );
}

/** `svc deliveries redeliver` and `recover`: the actions, audited as `cli:<user>`. */
function registerRedeliverCommands(deliveries: Command, common: Common): void {
  common(
    deliveries
      .command('redeliver')
      .description(
        'Send a delivered, stopped or expired delivery again (same key and body, fresh signature)',
      )
      .argument('<id>', 'delivery id')
      .option('--prefix <prefix>', "the workers' BullMQ key prefix"),
  ).action((id: string, o: { schema: string; prefix?: string }) =>
    withWired(o, true, (w) =>
      redeliverCommand(new ConsoleActions(w.pool, w.queue, w.schema), id, process.stdout),
    ),
  );

  common(
    deliveries
      .command('recover')
      .description('Send again every stopped or expired delivery to an origin created since a time')
      .argument('<origin>', 'destination origin, e.g. https://buyer.example')
      .requiredOption('--since <time>', 'created at or after (ISO 8601)')
      .option('--dry-run', 'only count them (what the console confirms)')
      .option('--all', 'run after run (10,000 each) until none is left')
      .option('--prefix <prefix>', "the workers' BullMQ key prefix"),
  ).action(
    (
      origin: string,
      o: { schema: string; since: string; prefix?: string; dryRun?: boolean; all?: boolean },
    ) =>
      withWired(o, true, (w) =>
        recoverCommand(
          new ConsoleActions(w.pool, w.queue, w.schema),
          origin,
          o.since,
          process.stdout,
          o,
        ),
      ),
  );
}

/** `svc deliveries pause|resume|test <origin>`. */
function registerDestinationCommands(deliveries: Command, common: Common): void {
  const verbs = {
    pause: 'Pause a destination: its deliveries wait (nothing is dropped) until resume',
    resume: "Resume a paused destination (its retry horizons move on by the pause's length)",
    test: 'Send a test event to a destination (the URL and auth of its newest delivery)',
  } as const;
  for (const [verb, about] of Object.entries(verbs) as Array<[keyof typeof verbs, string]>) {
    common(
      deliveries
        .command(verb)
        .description(about)
        .argument('<origin>', 'destination origin (https://buyer.example) or host:port')
        .option('--prefix <prefix>', "the workers' BullMQ key prefix"),
    ).action((origin: string, o: { schema: string; prefix?: string }) =>
      withWired(o, true, (w) =>
        destinationCommand(
          new ConsoleActions(w.pool, w.queue, w.schema),
          verb,
          origin,
          process.stdout,
        ),
      ),
    );
  }
}

/** `svc console`: the seller's console on its own, against the same database. */
function registerConsoleServe(program: Command): void {
  program
    .command('console')
    .description(
      "Run the seller's operator console on its own, against the same database as svc start",
    )
    .option(
      '--listen <host:port>',
      'address (default: SVC_HTTP_HOST:SVC_CONSOLE_PORT)',
      listenAddress,
    )
    .option(
      '--token <token>',
      'operator token (default: console.token of <data dir>/credentials.json, made on first start)',
    )
    .option('--schema <name>', 'PostgreSQL schema of the outbox', 'sender')
    .option('--prefix <prefix>', "the workers' BullMQ key prefix")
    .addOption(
      envOption(
        '--auth <token|oidc>',
        'browser sign-in: the token form, or through the OpenID provider of SVC_CONSOLE_OIDC_ISSUER for the subjects of SVC_CONSOLE_OPERATORS',
        'SVC_CONSOLE_AUTH',
      ),
    )
    .action(
      async (o: {
        listen?: { host: string; port: number };
        token?: string;
        schema: string;
        prefix?: string;
        auth?: string;
      }) => {
        flagsToEnv(o, { auth: 'SVC_CONSOLE_AUTH' });
        const config = loadConfigOrExit();
        if (o.token !== undefined && o.token.length < 16) {
          process.stderr.write('--token must be at least 16 characters\n');
          process.exitCode = 2;
          return;
        }
        const { createLogger } = await import('../../shared/infra/logger.js');
        const { consoleOidcFromConfig, startConsole } = await import('./index.js');
        const logger = createLogger({
          name: `${config.SVC_BRAND}-console`,
          level: config.LOG_LEVEL,
        });
        let oidc: ReturnType<typeof consoleOidcFromConfig>;
        try {
          // Unset issuer: the built-in provider of svc start's sales agent.
          const host = config.SVC_HTTP_HOST.includes(':')
            ? `[${config.SVC_HTTP_HOST}]`
            : config.SVC_HTTP_HOST;
          oidc = consoleOidcFromConfig(config, `http://${host}:${config.SVC_SALES_PORT}/oauth`);
        } catch (err) {
          process.stderr.write(`${(err as Error).message}\n`);
          process.exitCode = 2;
          return;
        }
        const w = await wire(o.schema, o.prefix, true);
        const running = await startConsole({
          oidc,
          pool: w.pool,
          queue: w.queue,
          schema: w.schema,
          dataDir: config.SVC_DATA_DIR,
          host: o.listen?.host ?? config.SVC_HTTP_HOST,
          port: o.listen?.port ?? config.SVC_CONSOLE_PORT,
          brand: config.SVC_BRAND,
          logger,
          ...(o.token ? { token: o.token } : {}),
        });
        process.stdout.write(
          `console  ${running.url}  (sign in ${oidc ? `through ${oidc.issuer}` : `with ${running.credentialsFile ? `console.token in ${running.credentialsFile}` : 'the --token given'}`})\n`,
        );
        await new Promise<void>((resolve) => {
          process.once('SIGTERM', () => resolve());
          process.once('SIGINT', () => resolve());
        });
        await running.close();
        await w.close();
      },
    );
}
