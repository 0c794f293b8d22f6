/**
 * `svc start`: the whole seller side in this process; prints the agent URLs and demo
 * credentials, and stops cleanly on SIGTERM or SIGINT.
 */
import type { Config } from '../../shared/config.js';
import { createLogger } from '../../shared/infra/logger.js';
import { ServiceUnavailableError } from '../../shared/infra/services.js';
import { AGENT_KINDS } from '../auth/principal.js';
import { formatDemoCredentials } from '../seed.js';

export async function runStart(config: Config): Promise<void> {
  const logger = createLogger({ name: `${config.SVC_BRAND}-agents`, level: config.LOG_LEVEL });
  const { startAgentsService } = await import('./service.js');
  let service;
  try {
    service = await startAgentsService({ config, logger });
  } catch (err) {
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
  const out: string[] = [`${service.profile.brand} agents are up`, ''];
  for (const agent of AGENT_KINDS) {
    const u = service.urls[agent];
    out.push(
      `${agent.padEnd(8)} ${u}  (MCP ${u}/mcp, A2A ${u}/a2a, card ${u}/.well-known/agent-card.json)`,
    );
  }
  out.push(
    '',
    `keys     ${service.urls.sales}/.well-known/jwks.json, ${service.urls.sales}/.well-known/brand.json`,
  );
  if (service.oauth)
    out.push(`oauth    ${service.oauth.issuer('sales')}/register (and on every agent origin)`);
  out.push('', 'demo credentials:', formatDemoCredentials(service.credentials), '');
  out.push('bearer tokens of demo-buyer (30 days):');
  for (const c of service.credentials.filter((x) => x.principal_id === 'demo-buyer')) {
    out.push(
      `${c.agent.padEnd(8)} ${c.principal_id.padEnd(13)} Authorization: Bearer ${c.bearer_token}`,
    );
  }
  process.stdout.write(`${out.join('\n')}\n`);
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, 'stopping');
      resolve();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  await service.stop();
  process.stdout.write('stopped\n');
}
