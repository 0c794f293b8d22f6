/**
 * The seller's operator console, the part's one entry point: `startConsole` wires the
 * store, the actions and the authentication onto a listening server (used by `svc start`
 * and `svc console`); the CLI's `svc deliveries` uses the same store and actions.
 */
import type { Config } from '../../shared/config.js';
import type { Logger } from '../../shared/infra/logger.js';
import type { Pool } from '../../shared/infra/pg.js';
import type { DeliveryQueue } from '../delivery/queue.js';
import { ConsoleActions } from './actions.js';
import { ConsoleAuth } from '../../shared/console/auth.js';
import { credentialsPath, ensureConsoleToken } from '../../shared/console/credentials.js';
import { OidcSignIn } from '../../shared/console/oidc.js';
import { listenConsole, type OidcSetting } from './server.js';
import { ConsoleStore } from './store.js';
import type { OAuthClientAdmin, RunningConsole } from './handle.js';

export { ConsoleActions, ConsoleActionError, type Operator } from './actions.js';
export { ConsoleStore } from './store.js';
export { consoleMigrations } from './migrations.js';
export { credentialsPath, ensureConsoleToken } from '../../shared/console/credentials.js';
export type { ConsoleServer, OAuthClientAdmin, RunningConsole } from './handle.js';

export interface StartConsoleOptions {
  pool: Pool;
  queue: DeliveryQueue;
  schema: string;
  /** Where credentials.json lives (the token is made there on first start). */
  dataDir: string;
  /** A token to use instead of the file's. */
  token?: string;
  host?: string;
  port?: number;
  brand?: string;
  logger?: Logger;
  /**
   * Browser sign-in through this OpenID provider (SVC_CONSOLE_AUTH=oidc) instead of the
   * token form. `operators` are the admitted subjects; default the credentials file's
   * operator (`console.operator`).
   */
  oidc?: { issuer: string; operators?: string[]; initialAccessToken?: string } | null;
  /** The seller's OAuth client bindings (svc start): `/api/oauth-clients`. */
  oauthClients?: OAuthClientAdmin | null;
}

export async function startConsole(o: StartConsoleOptions): Promise<RunningConsole> {
  const file = o.token ? null : credentialsPath(o.dataDir);
  const creds = o.token
    ? { token: o.token, operator: 'operator' }
    : await ensureConsoleToken(file!);
  const auth = new ConsoleAuth({ token: creds.token, operator: creds.operator });
  const store = new ConsoleStore(o.pool, o.schema);
  const actions = new ConsoleActions(o.pool, o.queue, o.schema, o.logger);
  const oidc: OidcSetting | null = o.oidc ? { issuer: o.oidc.issuer, signIn: null } : null;
  const server = await listenConsole({
    store,
    actions,
    auth,
    oidc,
    ...(o.oauthClients ? { oauthClients: o.oauthClients } : {}),
    ...(o.brand ? { brand: o.brand } : {}),
    ...(o.logger ? { logger: o.logger } : {}),
    ...(o.host ? { host: o.host } : {}),
    port: o.port ?? 0,
  });
  if (oidc && o.oidc) {
    // The callback names the port, known once listening; the console registers then.
    try {
      oidc.signIn = await OidcSignIn.register({
        issuer: o.oidc.issuer,
        redirectUri: `${server.url}/auth/callback`,
        operators: o.oidc.operators ?? [creds.operator],
        ...(o.oidc.initialAccessToken ? { initialAccessToken: o.oidc.initialAccessToken } : {}),
      });
    } catch (err) {
      await server.close();
      throw err;
    }
  }
  if (file) await ensureConsoleToken(file, server.url);
  return {
    ...server,
    token: creds.token,
    operator: creds.operator,
    credentialsFile: file,
    oidcIssuer: oidc?.issuer ?? null,
  };
}

/**
 * The console's OIDC setting from the configuration (SVC_CONSOLE_AUTH=oidc), or null for
 * the token form. `builtIn` is the issuer of this deployment's own provider (svc start's
 * sales agent at /oauth), used when SVC_CONSOLE_OIDC_ISSUER is unset. The built-in
 * provider's sign-in is its development page (SVC_OAUTH_DEV_LOGIN=1, loopback only, the
 * one-time code printed on svc start's terminal), never with NODE_ENV=production: there it
 * must be another provider.
 */
export function consoleOidcFromConfig(
  config: Pick<
    Config,
    | 'SVC_CONSOLE_AUTH'
    | 'SVC_CONSOLE_OIDC_ISSUER'
    | 'SVC_CONSOLE_OPERATORS'
    | 'NODE_ENV'
    | 'SVC_OAUTH_DEV_LOGIN'
  >,
  builtIn: string | null,
): { issuer: string; operators?: string[] } | null {
  if (config.SVC_CONSOLE_AUTH !== 'oidc') return null;
  const issuer = config.SVC_CONSOLE_OIDC_ISSUER ?? builtIn;
  if (!issuer) {
    throw new Error(
      'SVC_CONSOLE_AUTH=oidc needs SVC_CONSOLE_OIDC_ISSUER: this process has no built-in provider',
    );
  }
  if (issuer === builtIn && config.NODE_ENV === 'production') {
    throw new Error(
      "SVC_CONSOLE_AUTH=oidc: the built-in provider's login pages are a demo, off with NODE_ENV=production; set SVC_CONSOLE_OIDC_ISSUER to your OpenID provider",
    );
  }
  if (issuer === builtIn && config.SVC_OAUTH_DEV_LOGIN !== '1') {
    throw new Error(
      "SVC_CONSOLE_AUTH=oidc through the built-in provider needs its development sign-in, SVC_OAUTH_DEV_LOGIN=1 (loopback only; operators sign in with the one-time code printed on svc start's terminal), or SVC_CONSOLE_OIDC_ISSUER set to your OpenID provider",
    );
  }
  const operators = config.SVC_CONSOLE_OPERATORS?.split(',');
  return { issuer, ...(operators ? { operators } : {}) };
}
