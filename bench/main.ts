/**
 * `npm run bench -- <suite>`: each suite prints the figures its issue asks for.
 * Suites register here; with no argument every suite runs. `--base REV` runs one suite on a
 * base commit and on this tree, side by side (compare.ts).
 */
import { compare, parseCompareArgs } from './compare.js';

type Suite = (args: string[]) => Promise<void>;

const suites: Record<string, () => Promise<Suite>> = {
  sender: async () => (await import('./sender.js')).run,
  crypto: async () => (await import('./crypto.js')).run,
  replay: async () => (await import('./replay.js')).run,
  json: async () => (await import('./json.js')).run,
  receiver: async () => (await import('./receiver.js')).run,
  hostile: async () => (await import('./hostile.js')).run,
  channels: async () => (await import('./channels.js')).run,
  agents: async () => (await import('./agents.js')).run,
  conformance: async () => (await import('./conformance.js')).run,
  'agents-core': async () => (await import('./agents-core.js')).run,
  startup: async () => (await import('./startup/index.js')).run,
  chaos: async () => (await import('./chaos.js')).run,
  console: async () => (await import('./console.js')).run,
  'console-write': async () => (await import('./console-write.js')).run,
  'claim-cost': async () => (await import('./sender/claim-cost.js')).run,
  'receiver-store': async () => (await import('./receiver-store.js')).run,
  storage: async () => (await import('./storage.js')).run,
  'sender-scale': async () => (await import('./sender-scale.js')).run,
  tracing: async () => (await import('./tracing.js')).run,
};

export async function main(args: string[]): Promise<void> {
  const [name, ...rest] = args;
  if (name === '--help' || name === '-h') {
    process.stdout.write(
      `usage: npm run bench -- [${Object.keys(suites).join('|')}] [--base REV [--rounds N]]\n` +
        '  --base REV   run the suite on commit REV and on this tree, alternating, then print\n' +
        '               every figure side by side (REV is checked out once under .bench-base/)\n' +
        '  --rounds N   how many alternations with --base (default 2)\n',
    );
    return;
  }
  if (name !== undefined && rest.includes('--base')) {
    if (!suites[name]) {
      process.stderr.write(
        `bench: unknown suite "${name}"; known: ${Object.keys(suites).join(', ')}\n`,
      );
      process.exitCode = 2;
      return;
    }
    try {
      const opts = parseCompareArgs(name, rest);
      if (opts) return await compare(opts);
    } catch (err) {
      process.stderr.write(`${(err as Error).message}\n`);
      process.exitCode = 2;
      return;
    }
  }
  const names = name ? [name] : Object.keys(suites);
  for (const n of names) {
    const load = suites[n];
    if (!load) {
      process.stderr.write(
        `bench: unknown suite "${n}"; known: ${Object.keys(suites).join(', ')}\n`,
      );
      process.exitCode = 2;
      return;
    }
    process.stdout.write(`\n## bench ${n}\n`);
    await (
      await load()
    )(rest);
  }
}
