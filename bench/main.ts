/**
 * `npm run bench -- <suite>`: each suite prints the figures its issue asks for.
 * Suites register here; with no argument every suite runs.
 */
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
  'claim-cost': async () => (await import('./sender/claim-cost.js')).run,
  'sender-scale': async () => (await import('./sender-scale.js')).run,
};

export async function main(args: string[]): Promise<void> {
  const [name, ...rest] = args;
  if (name === '--help' || name === '-h') {
    process.stdout.write(`usage: npm run bench -- [${Object.keys(suites).join('|')}]\n`);
    return;
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
