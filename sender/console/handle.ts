/**
 * What the operator console shows of itself to the code that starts it: the running
 * server's handle and the OAuth-client administration it is given. Declared apart from the
 * Koa app (server.ts) so that these types, which the sender's public entry re-exports
 * (`startSender`'s `startConsole`), carry no Koa types into a consumer's compilation.
 */
import type { Server } from 'node:http';

/**
 * Who a registered OAuth client acts as (agents/oauth/bindings.ts, behind this interface so
 * the console imports nothing of the agents): the operator lists, binds and unbinds; the
 * implementation audits each change with the operator's name and `via: console`.
 */
export interface OAuthClientAdmin {
  list(): Promise<unknown[]>;
  bind(input: Record<string, unknown>, operator: string): Promise<unknown>;
  unbind(input: Record<string, unknown>, operator: string): Promise<unknown>;
}

/** A listening console: its URL, its server, and how to stop it. */
export interface ConsoleServer {
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** A console started with its credentials (`startConsole`). */
export interface RunningConsole extends ConsoleServer {
  token: string;
  operator: string;
  credentialsFile: string | null;
  /** The OpenID provider operators sign in through, or null (the token form). */
  oidcIssuer: string | null;
}
