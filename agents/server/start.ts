/**
 * `svc start`: the whole seller side in this process; writes the demo credentials to the
 * credentials file, prints the banner, and stops cleanly on SIGTERM or SIGINT (also while
 * still starting, since the embedded PostgreSQL may take a while).
 */
import { isProduction, type Config } from '../../shared/config.js';
import { createLogger } from '../../shared/infra/logger.js';
import { ServiceUnavailableError } from '../../shared/infra/services.js';
import { writeCredentialsSection } from '../../shared/infra/credentials-file.js';
import { agentsCredentialsSection, startBanner } from './banner.js';

export async function runStart(config: Config): Promise<void> {
  const logger = createLogger({ name: `${config.SVC_BRAND}-agents`, level: config.LOG_LEVEL });
  const { startAgentsService } = await import('./service.js');
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
  let service;
  try {
    service = await startAgentsService({ config, logger });
  } catch (err) {
    process.off('SIGTERM', onTerm);
    process.off('SIGINT', onInt);
    if (
      err instanceof ServiceUnavailableError ||
      (err as NodeJS.ErrnoException).code === 'EADDRINUSE'
    ) {
      process.stderr.write(`${config.SVC_BRAND} start: ${(err as Error).message}\n`);
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
    `${startBanner(service, file, isProduction(config), config.SVC_DATA_DIR, service.core.settings.testController)}\n`,
  );
  logger.info({ event: 'ready', urls: service.urls }, 'ready');
  if (signalled === null) await new Promise<void>((r) => (wake = r));
  logger.info({ signal: signalled }, 'stopping');
  await service.stop();
  process.off('SIGTERM', onTerm);
  process.off('SIGINT', onInt);
  process.stdout.write('stopped\n');
}
