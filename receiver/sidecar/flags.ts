/**
 * The `svc receiver` flags and their parsing, shared by the command (command.ts, which
 * declares them) and the sidecar start-up (run.ts, which reads them), so neither of those
 * two imports the other.
 */
import { SvcError } from '../../shared/errors/base.js';
import { UsageError } from '../../shared/errors/usage.js';

export { UsageError };

export interface Flags {
  listen?: string;
  trust?: string;
  brand?: string;
  protocolVersion?: string;
  forward?: string;
  queue?: string;
  publish?: string;
  scheme?: string;
  workers?: string;
  maxConnections?: string;
  maxConnectionsPerAddress?: string;
  publicOrigins?: string;
  bodyBudgetMib?: string;
  headersTimeoutMs?: string;
  bodyTimeoutMs?: string;
  bodyIdleTimeoutMs?: string;
  synchronousCommit?: boolean;
  allowHttpLoopback?: boolean;
  wait?: string;
  consoleListen?: string;
  consoleToken?: string;
  consoleTokenFile?: string;
}

/** A listen address already taken (exit 1; the message names the setting that moves it). */
export class PortInUseError extends SvcError {
  static override readonly code = 'ERR_PORT_IN_USE';
}

export function parseListen(value: string): { host: string; port: number } {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s]+):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) throw new UsageError(`--listen "${value}" is not host:port`);
  return { host: (m[1] as string).replace(/^\[|\]$/g, ''), port };
}

/** An integer flag within [min, max], or the variable's (already validated) value. */
export function intFlag(
  name: string,
  value: string | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (value === undefined) return fallback;
  const n = /^\d{1,9}$/.test(value) ? Number(value) : NaN;
  if (!(n >= min && n <= max)) throw new UsageError(`--${name}: an integer ${min}-${max}`);
  return n;
}
