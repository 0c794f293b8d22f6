/**
 * `svc start`: the whole seller side in this process; writes the demo credentials to the
 * credentials file, prints the banner, and stops cleanly on SIGTERM or SIGINT (also while
 * still starting, since the embedded PostgreSQL may take a while), or when the npm that ran
 * it (`npm start`) is gone.
 */
import { shutdownTracing, startTracing } from '../../shared/telemetry/tracing.js';
import { isProduction, type Config } from '../../shared/config.js';
import { createLogger } from '../../shared/infra/logger.js';
import { ServiceUnavailableError } from '../../shared/infra/services.js';
import { writeCredentialsSection } from '../../shared/infra/credentials-file.js';
import { agentsCredentialsSection, startBanner } from './banner.js';

/**
 * Run by npm (`npm start`), npm's child is a shell and ours its child: npm passes SIGTERM to
 * the shell, which dies without passing it on, and we would live on under PID 1 with the
 * embedded PostgreSQL. So under npm, a parent that is gone is a SIGTERM. Only under npm: a
 * `nohup svc start &` outlives its shell on purpose. (The `start` script also `exec`s, so
 * npm's signal reaches us directly where the shell honours it.)
 */
export function watchNpmParent(
  onGone: () => void,
  env: NodeJS.ProcessEnv = process.env,
  everyMs = 500,
): () => void {
  if (!env.npm_lifecycle_event) return () => {};
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid !== parent) onGone();
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

const PORT_SETTINGS = [
  ['SVC_SALES_PORT', '--sales-port'],
  ['SVC_CREATIVE_PORT', '--creative-port'],
  ['SVC_SIGNALS_PORT', '--signals-port'],
] as const;

/** An agent port already taken, as the setting that moves it (else the error's own text). */
export function portInUseMessage(err: NodeJS.ErrnoException, config: Config): string {
  const port = (err as { port?: number }).port;
  const setting = PORT_SETTINGS.find(([variable]) => config[variable] === port);
  if (err.code !== 'EADDRINUSE' || !setting || !port) return err.message;
  return (
    `${config.SVC_HTTP_HOST}:${port} is already in use (another svc start?): choose another ` +
    `port with ${setting[1]} <port> (${setting[0]}; 0: any free port)`
  );
}

export async function runStart(config: Config): Promise<void> {
  const logger = createLogger({ name: `${config.SVC_BRAND}-agents`, level: config.LOG_LEVEL });
  // OTLP export of the emit-to-settle spans when OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set.
  startTracing(`${config.SVC_BRAND}-agents`);
  const { startAgentsService } = await import('./seller-process.js');
  // Stop cleanly whenever the signal comes, also while still starting (embedded PostgreSQL).
  let signalled: string | null = null;
  let wake: () => void = () => {};
  const onSignal = (signal: string) => {
    signalled ??= signal;
    wake();
  };
  const onTerm = () => onSignal('SIGTERM');
  const onInt = () => onSignal('SIGINT');
  process.on('SIGTERM', onTerm);
  process.on('SIGINT', onInt);
  const unwatch = watchNpmParent(() => onSignal('parent gone'));
  let service;
  try {
    service = await startAgentsService({ config, logger });
  } catch (err) {
    process.off('SIGTERM', onTerm);
    process.off('SIGINT', onInt);
    unwatch();
    if (
      err instanceof ServiceUnavailableError ||
      (err as NodeJS.ErrnoException).code === 'EADDRINUSE'
    ) {
      process.stderr.write(
        `${config.SVC_BRAND} start: ${portInUseMessage(err as NodeJS.ErrnoException, config)}\n`,
      );
      process.exitCode = 1;
      return;
    }
    throw err;
  }
  const file = await writeCredentialsSection(
    config.SVC_DATA_DIR,
    'agents',
    agentsCredentialsSection(service.urls, service.credentials),
  );
  if (service.oauth) {
    // The token buyers' developers need to register OAuth clients (null: registration open).
    await writeCredentialsSection(config.SVC_DATA_DIR, 'oauth', {
      registration_endpoints: Object.fromEntries(
        Object.entries(service.urls).map(([agent, url]) => [agent, `${url}/oauth/register`]),
      ),
      initial_access_token: service.oauth.initialAccessToken,
    });
  }
  process.stdout.write(
    `${startBanner(service, file, isProduction(config), config.SVC_DATA_DIR, service.core.settings.testController, { approval: service.core.settings.approval, allowHosts: config.SVC_SENDER_ALLOW_HOSTS.split(',').filter(Boolean) })}\n`,
  );
  logger.info({ event: 'ready', urls: service.urls }, 'ready');
  if (signalled === null) await new Promise<void>((r) => (wake = r));
  logger.info({ signal: signalled }, 'stopping');
  await service.stop();
  await shutdownTracing();
  process.off('SIGTERM', onTerm);
  process.off('SIGINT', onInt);
  unwatch();
  process.stdout.write('stopped\n');
}
