/** The sender's subcommands: `keys generate`, `keys jwks`, `worker`, `send`. */
import { InvalidArgumentError, type Command } from 'commander';
import { brandProfile, BRANDS, type Brand } from '../../shared/brand.js';
import { envOption, flagsToEnv, plainOption } from '../../shared/cli-options.js';
import { parseMetricsListen } from './metrics-server.js';
import { keysDirOf, loadConfigOrExit, type Config } from '../../shared/config.js';
import type { commandServices as CommandServicesFn } from '../../shared/infra/command-services.js';

type CommandServicesOf = typeof CommandServicesFn;

const defaultKeysText = 'SVC_DATA_DIR/keys';

function positiveInt(max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1 || n > max) {
      throw new InvalidArgumentError(`an integer from 1 to ${max}`);
    }
    return n;
  };
}

const ALGS = { ed25519: 'ed25519', es256: 'ecdsa-p256-sha256' } as const;

/**
 * `svc send`'s services. A buyer trying their receiver has no `svc start` beside them:
 * with DATABASE_URL unset and none running on the data directory, the send uses the
 * database the README's examples default to (`LOCAL_DATABASE_URL`, said on stderr) rather
 * than failing; only when that does not answer either is it an error naming both.
 */
async function sendServices(config: Config, commandServices: CommandServicesOf) {
  const { ServiceUnavailableError } = await import('../../shared/infra/service-errors.js');
  const { LOCAL_DATABASE_URL } = await import('../../shared/infra/pg.js');
  try {
    return await commandServices(config, { redis: 'none' });
  } catch (err) {
    if (config.DATABASE_URL !== undefined || !(err instanceof ServiceUnavailableError)) throw err;
  }
  process.stderr.write(
    `DATABASE_URL is unset and no svc start runs on ${config.SVC_DATA_DIR}: ` +
      `using ${LOCAL_DATABASE_URL} (the examples' default)\n`,
  );
  return commandServices({ ...config, DATABASE_URL: LOCAL_DATABASE_URL }, { redis: 'none' });
}

export function registerSenderCommands(program: Command): void {
  registerKeysCommands(program);
  registerWorkerCommand(program);
  registerSendCommand(program);
}

/** `svc keys generate` and `svc keys jwks`. */
function registerKeysCommands(program: Command): void {
  const keys = program.command('keys').description("The seller's webhook signing keys");
  keys
    .command('generate')
    .description('Write a new signing key pair (private JWK file, mode 0600) and print its kid')
    .addOption(plainOption('--alg <alg>', 'key algorithm', 'ed25519').choices(Object.keys(ALGS)))
    .addOption(envOption('--out <dir>', 'directory to write to', 'SVC_KEYS_DIR'))
    .action(async (opts: { alg?: keyof typeof ALGS; out?: string }) => {
      const config = loadConfigOrExit();
      const { writeNewKey } = await import('../keys/key-set.js');
      const dir = opts.out ?? keysDirOf(config);
      const k = await writeNewKey(dir, ALGS[opts.alg ?? 'ed25519']);
      process.stdout.write(`${k.kid}\t${k.path}\n`);
    });
  keys
    .command('jwks')
    .description('Print the public JWKS of a key set')
    .argument('[dir]', `key directory (env SVC_KEYS_DIR, default ${defaultKeysText})`)
    .action(async (dir: string | undefined) => {
      const config = loadConfigOrExit();
      const { KeySet } = await import('../keys/key-set.js');
      const set = await KeySet.fromDirectory(dir ?? keysDirOf(config));
      process.stdout.write(
        `${JSON.stringify(set.jwks(brandProfile(config.SVC_BRAND)), null, 2)}\n`,
      );
    });
}

type WorkerFlags = {
  keys?: string;
  concurrency?: number;
  perOrigin?: number;
  schema?: string;
  prefix?: string;
  metricsPort?: number;
  metricsListen?: { host: string; port: number };
  wait?: string;
  durableClaims?: string;
  shards?: string;
};

/** `svc worker`: its options (workerOptions), its help and its action (runWorker). */
function registerWorkerCommand(program: Command): void {
  const command = program
    .command('worker')
    .description('Run a webhook delivery worker (run as many processes as wanted)');
  workerOptions(command)
    .addHelpText(
      'after',
      '\nREDIS_CLUSTER_NODES=host:port,... (instead of REDIS_URL) runs on a Redis Cluster; the\n' +
        'deliveries are spread over SVC_DISPATCH_SHARDS queues by destination origin.\n' +
        '\nWith DATABASE_URL and REDIS_URL unset, the worker joins the svc start running on\n' +
        'SVC_DATA_DIR (its embedded PostgreSQL, its Redis, its queue prefix and allow-list).\n' +
        '\nTracing: with OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set,\n' +
        "each delivery's spans (dispatch, attempt, settle) are exported over OTLP/HTTP and each\n" +
        'attempt carries a W3C traceparent header (outside the signature); unset, nothing is\n' +
        'traced. The other OTEL_* variables (OTEL_SERVICE_NAME, OTEL_EXPORTER_OTLP_HEADERS,\n' +
        'OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf by default or http/json,\n' +
        'OTEL_TRACES_SAMPLER...) apply as the OpenTelemetry SDK defines them.',
    )
    .action(async (opts: WorkerFlags) => {
      flagsToEnv(opts, {
        wait: 'SVC_SERVICE_WAIT_SECONDS',
        durableClaims: 'SVC_WORKER_DURABLE_CLAIMS',
      });
      const config = loadConfigOrExit();
      const { runWorker } = await import('./worker.js');
      await runWorker(config, {
        keysDir: opts.keys ?? keysDirOf(config),
        concurrency: opts.concurrency ?? config.SVC_WORKER_CONCURRENCY,
        perOrigin: opts.perOrigin ?? 16,
        schema: opts.schema ?? 'sender',
        ...(opts.prefix ? { prefix: opts.prefix } : {}),
        ...(opts.metricsListen
          ? { metricsListen: opts.metricsListen }
          : opts.metricsPort
            ? { metricsListen: { host: config.SVC_HTTP_HOST, port: opts.metricsPort } }
            : {}),
        ...(opts.shards ? { shards: opts.shards } : {}),
      });
    });
}

/** The worker's options: keys, concurrency, schema, queue prefix, metrics, shards. */
function workerOptions(command: Command): Command {
  return command
    .addOption(envOption('--keys <dir>', 'signing key directory', 'SVC_KEYS_DIR'))
    .addOption(
      envOption('--concurrency <n>', 'deliveries in flight', 'SVC_WORKER_CONCURRENCY').argParser(
        positiveInt(2000),
      ),
    )
    .addOption(
      plainOption(
        '--per-origin <n>',
        'deliveries in flight per receiver origin (at most half of --concurrency)',
        '16',
      ).argParser(positiveInt(1000)),
    )
    .addOption(plainOption('--schema <name>', 'PostgreSQL schema of the outbox', 'sender'))
    .addOption(
      envOption(
        '--prefix <prefix>',
        'BullMQ key prefix (keep a {hash tag} for Redis Cluster)',
        'SVC_QUEUE_PREFIX',
      ),
    )
    .addOption(
      plainOption(
        '--metrics-listen <host:port>',
        'serve Prometheus /metrics at host:port (a bare port: 127.0.0.1, loopback only); ' +
          'the metrics are listed in sender/README.md',
        'off',
      ).argParser(parseMetricsListen),
    )
    .addOption(
      plainOption(
        '--metrics-port <port>',
        'the same as --metrics-listen SVC_HTTP_HOST:port',
        'off',
      ).argParser(positiveInt(65535)),
    )
    .addOption(
      envOption('--wait <seconds>', 'wait for PostgreSQL and Redis', 'SVC_SERVICE_WAIT_SECONDS'),
    )
    .addOption(
      envOption(
        '--durable-claims <0|1>',
        '1: a claim waits for the WAL flush before its request goes out, so an attempt sent ' +
          'is recorded even across a database crash; 0: about one fsync less of latency per ' +
          'attempt, and a crash may forget an attempt that was sent',
        'SVC_WORKER_DURABLE_CLAIMS',
      ).choices(['0', '1']),
    )
    .option(
      '--shards <list>',
      'dispatch shards this worker consumes: all, or indexes and ranges of 0..SVC_DISPATCH_SHARDS-1 (e.g. 0-7,12); every shard needs a worker somewhere',
      'all',
    );
}

/** `svc send`: one test webhook through the real delivery path. */
function registerSendCommand(program: Command): void {
  program
    .command('send')
    .description(
      'Send one test webhook through the real delivery path and print each attempt; ' +
        'exit 0 when delivered, 1 when stopped, 124 on timeout',
    )
    .argument('<url>', 'receiver URL (loopback and plain http allowed here)')
    .addOption(plainOption('--payload <file>', 'JSON body to send', 'a test MCP envelope'))
    .addOption(envOption('--brand <brand>', 'brand profile', 'SVC_BRAND').choices([...BRANDS]))
    .addOption(
      plainOption('--timeout <seconds>', 'give up after this many seconds', '60').argParser(
        positiveInt(86400),
      ),
    )
    .addOption(
      envOption(
        '--keys <dir>',
        'signing key directory (a throwaway key when it does not exist)',
        'SVC_KEYS_DIR',
      ),
    )
    .addOption(
      plainOption('--hmac <secret>', 'legacy HMAC-SHA256 with this shared secret', 'RFC 9421'),
    )
    .addOption(plainOption('--bearer <token>', 'legacy Bearer token', 'RFC 9421'))
    .action(
      async (
        url: string,
        opts: {
          payload?: string;
          brand?: Brand;
          timeout?: number;
          keys?: string;
          hmac?: string;
          bearer?: string;
        },
      ) => {
        const config = loadConfigOrExit();
        const { runSend } = await import('./send.js');
        const { ensureRedis } = await import('../../shared/infra/services.js');
        const { commandServices } = await import('../../shared/infra/command-services.js');
        const { existsSync } = await import('node:fs');
        const keysDir =
          opts.keys ?? (existsSync(keysDirOf(config)) ? keysDirOf(config) : undefined);
        const services = await sendServices(config, commandServices);
        const databaseUrl = services.databaseUrl;
        // Nothing else needs to run: without a Redis, a private one serves this one send.
        const redis = await ensureRedis(services.redisUrl, config.SVC_DATA_DIR);
        try {
          process.exitCode = await runSend({
            url,
            brand: opts.brand ?? config.SVC_BRAND,
            timeoutSeconds: opts.timeout ?? 60,
            databaseUrl,
            redisUrl: redis.url,
            out: process.stdout,
            err: process.stderr,
            ...(opts.payload ? { payloadFile: opts.payload } : {}),
            ...(keysDir ? { keysDir } : {}),
            ...(config.SVC_SIGNING_KID ? { signingKid: config.SVC_SIGNING_KID } : {}),
            ...(opts.hmac ? { hmacSecret: opts.hmac } : {}),
            ...(opts.bearer ? { bearerToken: opts.bearer } : {}),
          });
        } finally {
          await redis.stop();
        }
      },
    );
}
