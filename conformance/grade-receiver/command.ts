/**
 * `svc conformance receiver <url>`: act as a sender and grade the receiver at <url>.
 * Exit 0 when every applicable check passed, 1 otherwise, 2 on a usage error.
 */
import { existsSync } from 'node:fs';
import { emitReport } from '../report/output.js';
import {
  brandFromFlag,
  checkUrl,
  runCommand,
  terminalIo,
  UsageError,
} from '../report/command-line.js';
export { UsageError };
import type { SigningKey } from '../../shared/signing/keys.js';
import { gradeReceiver } from './grade-receiver.js';
import { loadSigningVectors, VectorLoadError, vectorsDir } from './vectors.js';
import {
  generateTesterKeys,
  readKeyFile,
  saveKeyFile,
  TesterKeyError,
  testerJwks,
} from './tester-keys.js';

export interface ReceiverCommandFlags {
  brand?: string;
  key?: string[];
  saveKey?: string;
  /** Replace an existing --save-key file (else its keys are used). */
  force?: boolean;
  printJwks?: boolean;
  protocolVersion?: string;
  hmacSecret?: string;
  hmacPath?: string;
  countUrl?: string;
  harnessUrl?: string;
  wrongPurposeKey?: string;
  signOnlyKey?: string;
  trustVectorKeys?: boolean;
  vectors?: string;
  json?: boolean;
  junit?: string;
  timeout?: string;
  /** Skip the "press Enter once installed" pause after generating keys. */
  yes?: boolean;
}

async function single(path: string | undefined, flag: string): Promise<SigningKey | undefined> {
  if (!path) return undefined;
  const keys = await readKeyFile(path);
  if (keys.length !== 1) throw new UsageError(`${flag} takes a file with exactly one key`);
  return keys[0];
}

export interface CommandIo {
  out: (text: string) => void;
  err: (text: string) => void;
  /** Waits for the tester to install the keys (interactive runs only). */
  confirm?: (prompt: string) => Promise<void>;
}

/** Runs the command; returns the exit code. */
export async function runReceiverConformance(
  url: string,
  flags: ReceiverCommandFlags,
  io: CommandIo = terminalIo,
): Promise<number> {
  const profile = brandFromFlag(flags.brand);
  const version = flags.protocolVersion ?? '3.2';
  if (version !== '3.1' && version !== '3.2')
    throw new UsageError('--protocol-version is 3.1 or 3.2');
  if ((flags.hmacSecret === undefined) !== (flags.hmacPath === undefined)) {
    throw new UsageError('--hmac-secret and --hmac-path go together');
  }
  if (flags.hmacPath !== undefined && !flags.hmacPath.startsWith('/')) {
    throw new UsageError('--hmac-path is a path on the target origin, starting with "/"');
  }
  const timeoutMs = flags.timeout === undefined ? 10_000 : Number(flags.timeout);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 100 || timeoutMs > 300_000) {
    throw new UsageError('--timeout is milliseconds, 100-300000');
  }

  let keys: SigningKey[] = [];
  for (const file of flags.key ?? []) keys.push(...(await readKeyFile(file)));
  // Tester keys saved before (a receiver may trust them by now) are used, never replaced,
  // unless --force: a pasted command run twice prints the same JWKS.
  const reuse =
    keys.length === 0 && flags.saveKey !== undefined && !flags.force && existsSync(flags.saveKey);
  if (reuse) {
    keys = await readKeyFile(flags.saveKey!);
    io.err(`${flags.saveKey} exists: using the tester keys saved in it (--force makes new ones)\n`);
  }
  const generated = keys.length === 0;
  if (generated) {
    const g = await generateTesterKeys();
    keys = g.keys;
    if (flags.saveKey) await saveKeyFile(flags.saveKey, g.privateJwks, flags.force === true);
  }
  const jwks = `${JSON.stringify(testerJwks(keys, profile), null, 2)}\n`;
  if (flags.printJwks) {
    io.out(jwks);
    if (generated && !flags.saveKey) {
      io.err('note: the private keys were not saved; pass --save-key FILE to keep them\n');
    }
    return 0;
  }
  if (!url) throw new UsageError('the receiver URL is required');
  checkUrl(url, 'the receiver URL');
  // Unreadable vectors fail here, before any generated key is announced for installing.
  loadSigningVectors(vectorsDir(flags.vectors));
  if (generated) {
    io.err(
      `Generated tester keys. The receiver must trust this JWKS (request-signing purpose):\n${jwks}` +
        (flags.saveKey ? `Private keys saved to ${flags.saveKey} (reuse with --key).\n` : ''),
    );
    if (io.confirm && !flags.yes) await io.confirm('Press Enter once the receiver trusts it... ');
  }

  const report = await gradeReceiver({
    target: url,
    profile,
    protocolVersion: version,
    keys,
    wrongPurposeKey: await single(flags.wrongPurposeKey, '--wrong-purpose-key'),
    signOnlyKey: await single(flags.signOnlyKey, '--sign-only-key'),
    trustVectorKeys: flags.trustVectorKeys ?? false,
    vectorsDir: flags.vectors,
    hmac: flags.hmacSecret ? { secret: flags.hmacSecret, path: flags.hmacPath! } : undefined,
    countUrl: flags.countUrl ? checkUrl(flags.countUrl, '--count-url') : undefined,
    harnessUrl: flags.harnessUrl ? checkUrl(flags.harnessUrl, '--harness-url') : undefined,
    timeoutMs,
  });
  return emitReport(report, { json: flags.json, junit: flags.junit, write: io.out });
}

/** The command line's action: a usage error prints and exits 2 (runCommand). */
export function receiverConformanceAction(
  url: string | undefined,
  flags: ReceiverCommandFlags,
): Promise<void> {
  return runCommand('svc conformance receiver', [TesterKeyError, VectorLoadError], () =>
    runReceiverConformance(url ?? '', flags),
  );
}
