/**
 * `svc conformance sender`: host a grading receiver and grade the sender that delivers to
 * it, driven by the tester (printed instructions) or by `--agent <url>` (MCP).
 * Exit 0 when every applicable check passed, 1 otherwise, 2 on a usage error.
 */
import { readFile } from 'node:fs/promises';
import { parseStrictJson } from '../../shared/json/strict-parse.js';
import { emitReport } from '../report/output.js';
import {
  brandFromFlag,
  checkUrl,
  runCommand,
  terminalIo,
  UsageError,
} from '../report/command-line.js';
export { UsageError };
import { ManualDriver, McpAgentDriver, type ManualIo, type SenderDriver } from './driver.js';
import { gradeSender } from './grade-sender.js';
import { SenderKeyError } from './sender-keys.js';

export interface SenderCommandFlags {
  brand?: string;
  protocolVersion?: string;
  listen?: string;
  publicUrl?: string;
  jwks?: string;
  jwksUrl?: string;
  brandJsonUrl?: string;
  agentUrl?: string;
  agent?: string;
  agentHeader?: string[];
  agentArgs?: string;
  stepTimeout?: string;
  quiet?: string;
  retryCount?: string;
  retryStatus?: string;
  json?: boolean;
  junit?: string;
}

const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/;

function url(value: string | undefined, flag: string): string | undefined {
  return value === undefined ? undefined : checkUrl(value, flag);
}

function intIn(
  value: string | undefined,
  flag: string,
  min: number,
  max: number,
): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new UsageError(`${flag} is an integer ${min}-${max}`);
  return n;
}

export function parseListen(value: string): { host: string; port: number } {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s]+):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) throw new UsageError(`--listen "${value}" is not host:port`);
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
}

function parseHeader(value: string): [string, string] {
  const i = value.indexOf(':');
  if (i < 1) throw new UsageError(`--agent-header "${value}" is not "Name: value"`);
  return [value.slice(0, i).trim().toLowerCase(), value.slice(i + 1).trim()];
}

/** The seller-specific `create_media_buy` arguments (account, brand, packages...). */
async function readArgs(path: string): Promise<Record<string, unknown>> {
  let value: unknown;
  try {
    value = parseStrictJson(await readFile(path));
  } catch (err) {
    throw new UsageError(`--agent-args ${path}: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UsageError(`--agent-args ${path}: not a JSON object`);
  }
  return value as Record<string, unknown>;
}

export interface SenderCommandIo extends ManualIo {
  out: (text: string) => void;
}

export async function runSenderConformance(
  flags: SenderCommandFlags,
  io: SenderCommandIo = terminalIo,
  driverOverride?: SenderDriver,
): Promise<number> {
  const profile = brandFromFlag(flags.brand);
  const version = flags.protocolVersion ?? '3.2';
  if (version !== '3.1' && version !== '3.2')
    throw new UsageError('--protocol-version is 3.1 or 3.2');
  const listen = parseListen(flags.listen ?? '127.0.0.1:0');
  const agent = url(flags.agent, '--agent');
  const keySources = {
    jwksFile: flags.jwks,
    jwksUrl: url(flags.jwksUrl, '--jwks-url'),
    brandJsonUrl: url(flags.brandJsonUrl, '--brand-json-url'),
    agentUrl: url(flags.agentUrl, '--agent-url'),
  };
  if (
    !keySources.jwksFile &&
    !keySources.jwksUrl &&
    !keySources.brandJsonUrl &&
    !keySources.agentUrl
  ) {
    if (!agent) {
      throw new UsageError(
        'name the sender keys: --jwks FILE, --jwks-url, --brand-json-url or --agent-url',
      );
    }
    keySources.agentUrl = agent;
  }
  const hosts = [keySources.jwksUrl, keySources.brandJsonUrl, keySources.agentUrl]
    .filter((u): u is string => u !== undefined)
    .map((u) => new URL(u).hostname);
  const headers = Object.fromEntries((flags.agentHeader ?? []).map(parseHeader));
  const createMediaBuy = flags.agentArgs ? await readArgs(flags.agentArgs) : undefined;
  const driver =
    driverOverride ??
    (agent ? new McpAgentDriver(agent, { headers, createMediaBuy }) : new ManualDriver(io));
  const stepSeconds = intIn(flags.stepTimeout, '--step-timeout', 1, 600) ?? 90;
  const quietSeconds = intIn(flags.quiet, '--quiet', 1, 600) ?? 10;
  const report = await gradeSender({
    profile,
    protocolVersion: version,
    driver,
    keys: {
      ...keySources,
      allowLoopback: hosts.length > 0 && hosts.every((h) => LOOPBACK.test(h)),
    },
    listenHost: listen.host,
    listenPort: listen.port,
    publicUrl: url(flags.publicUrl, '--public-url'),
    onStep: agent
      ? (step) => io.err(`[${step.stepId}] driving ${agent}: ${step.url}\n`)
      : undefined,
    stepTimeoutMs: stepSeconds * 1000,
    quietMs: quietSeconds * 1000,
    retryCount: intIn(flags.retryCount, '--retry-count', 1, 10),
    retryStatus: intIn(flags.retryStatus, '--retry-status', 429, 504),
  });
  return emitReport(report, { json: flags.json, junit: flags.junit, write: io.out });
}

/** The command line's action: a usage error prints and exits 2 (runCommand). */
export function senderConformanceAction(flags: SenderCommandFlags): Promise<void> {
  return runCommand('svc conformance sender', [SenderKeyError, RangeError], () =>
    runSenderConformance(flags),
  );
}
