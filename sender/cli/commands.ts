/** The sender's subcommands: `keys generate`, `keys jwks`, `worker`, `send`. */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { brandProfile, BRANDS, type Brand } from '../../shared/brand.js';
import { loadConfigOrExit } from '../../shared/config.js';

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

export function registerSenderCommands(program: Command): void {
  const keys = program.command('keys').description("The seller's webhook signing keys");
  keys
    .command('generate')
    .description('Write a new signing key pair (private JWK file, mode 0600) and print its kid')
    .addOption(
      new Option('--alg <alg>', 'key algorithm').choices(Object.keys(ALGS)).default('ed25519'),
    )
    .option('--out <dir>', 'directory to write to (default: SVC_KEYS_DIR or .data/keys)')
    .action(async (opts: { alg: keyof typeof ALGS; out?: string }) => {
      const config = loadConfigOrExit();
      const { writeNewKey } = await import('../keys/key-set.js');
      const dir = opts.out ?? config.SVC_KEYS_DIR ?? `${config.SVC_DATA_DIR}/keys`;
      const k = await writeNewKey(dir, ALGS[opts.alg]);
      process.stdout.write(`${k.kid}\t${k.path}\n`);
    });
  keys
    .command('jwks')
    .description('Print the public JWKS of a key set')
    .argument('[dir]', 'key directory (default: SVC_KEYS_DIR)')
    .action(async (dir: string | undefined) => {
      const config = loadConfigOrExit();
      const { KeySet } = await import('../keys/key-set.js');
      const from = dir ?? config.SVC_KEYS_DIR;
      if (!from) throw new Error('give a key directory or set SVC_KEYS_DIR');
      const set = await KeySet.fromDirectory(from);
      process.stdout.write(
        `${JSON.stringify(set.jwks(brandProfile(config.SVC_BRAND)), null, 2)}\n`,
      );
    });

  program
    .command('worker')
    .description('Run a webhook delivery worker (run as many processes as wanted)')
    .option('--keys <dir>', 'signing key directory (default: SVC_KEYS_DIR)')
    .option(
      '--concurrency <n>',
      'deliveries in flight (default: SVC_WORKER_CONCURRENCY)',
      positiveInt(2000),
    )
    .option(
      '--per-origin <n>',
      'deliveries in flight per receiver origin (at most half of --concurrency)',
      positiveInt(1000),
      16,
    )
    .option('--schema <name>', 'PostgreSQL schema of the outbox', 'sender')
    .option('--prefix <prefix>', 'BullMQ key prefix (keep a {hash tag} for Redis Cluster)')
    .option('--metrics-port <port>', 'serve Prometheus /metrics on this port', positiveInt(65535))
    .action(
      async (opts: {
        keys?: string;
        concurrency?: number;
        perOrigin: number;
        schema: string;
        prefix?: string;
        metricsPort?: number;
      }) => {
        const config = loadConfigOrExit();
        const keysDir = opts.keys ?? config.SVC_KEYS_DIR;
        if (!keysDir) throw new Error('give --keys DIR or set SVC_KEYS_DIR (svc keys generate)');
        const { runWorker } = await import('./worker.js');
        const { pingRedis, resolveDatabaseUrl, redactUrl } =
          await import('../../shared/infra/services.js');
        await resolveDatabaseUrl(config.DATABASE_URL);
        if (!(await pingRedis(config.REDIS_URL))) {
          throw new Error(
            `Redis at ${redactUrl(config.REDIS_URL)} does not answer: workers share the agents' Redis; set REDIS_URL`,
          );
        }
        await runWorker(config, {
          keysDir,
          concurrency: opts.concurrency ?? config.SVC_WORKER_CONCURRENCY,
          perOrigin: opts.perOrigin,
          schema: opts.schema,
          ...(opts.prefix ? { prefix: opts.prefix } : {}),
          ...(opts.metricsPort ? { metricsPort: opts.metricsPort } : {}),
        });
      },
    );

  program
    .command('send')
    .description(
      'Send one test webhook through the real delivery path and print each attempt; ' +
        'exit 0 when delivered, 1 when stopped, 124 on timeout',
    )
    .argument('<url>', 'receiver URL (loopback and plain http allowed here)')
    .option('--payload <file>', 'JSON body to send (default: a test MCP envelope)')
    .addOption(new Option('--brand <brand>', 'brand profile').choices([...BRANDS]))
    .option('--timeout <seconds>', 'give up after this many seconds', positiveInt(86400), 60)
    .option('--keys <dir>', 'signing key directory (default: SVC_KEYS_DIR; else a throwaway key)')
    .option('--hmac <secret>', 'legacy HMAC-SHA256 with this shared secret instead of RFC 9421')
    .option('--bearer <token>', 'legacy Bearer token instead of RFC 9421')
    .action(
      async (
        url: string,
        opts: {
          payload?: string;
          brand?: Brand;
          timeout: number;
          keys?: string;
          hmac?: string;
          bearer?: string;
        },
      ) => {
        const config = loadConfigOrExit();
        const { runSend } = await import('./send.js');
        const { ensureRedis, resolveDatabaseUrl } = await import('../../shared/infra/services.js');
        const keysDir = opts.keys ?? config.SVC_KEYS_DIR;
        const databaseUrl = await resolveDatabaseUrl(config.DATABASE_URL);
        // Nothing else needs to run: without a Redis, a private one serves this one send.
        const redis = await ensureRedis(config.REDIS_URL, config.SVC_DATA_DIR);
        try {
          process.exitCode = await runSend({
            url,
            brand: opts.brand ?? config.SVC_BRAND,
            timeoutSeconds: opts.timeout,
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
