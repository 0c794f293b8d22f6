/**
 * The logger: pino, JSON lines. Redaction keeps bodies, keys and credentials out of logs
 * whatever a caller passes by mistake.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
  'body',
  'payload',
  'headers.authorization',
  'headers.signature',
  'secret',
  'credentials',
  'token',
  'privateKey',
  'd',
  '*.body',
  '*.payload',
  '*.credentials',
  '*.secret',
  '*.token',
  '*.d',
];

export function createLogger(
  options: { level?: string; name?: string; destination?: NodeJS.WritableStream } = {},
): Logger {
  return pino(
    {
      level: options.level ?? process.env.LOG_LEVEL ?? 'info',
      name: options.name ?? 'svc',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
    },
    options.destination as pino.DestinationStream | undefined,
  );
}

/** A logger that prints nothing: the default for libraries when the caller passes none. */
export const silentLogger: Logger = pino({ level: 'silent' });
