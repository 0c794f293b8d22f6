/**
 * `npm run bench -- chaos`: the long fault-injection runs (./chaos/run.ts), on a private
 * PostgreSQL cluster and Redis. Run 1: 2 sender workers deliver to a receiver that always
 * answers 200 while workers are SIGKILLed 8 times, Redis is flushed and restarted and
 * PostgreSQL restarted (fast and immediate). Run 2: the same through the receiver sidecar,
 * SIGKILLed 3 times, in front of an app that fails 10 % of forwards.
 * Options: --events N (3000), --seconds S of enqueueing (60), --only direct|sidecar.
 */
import { formatResult, runChaos, type Fault } from './chaos/run.js';

function arg(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

export async function run(args: string[]): Promise<void> {
  const events = Number(arg(args, '--events') ?? 3000);
  const seconds = Number(arg(args, '--seconds') ?? 60);
  const only = arg(args, '--only');
  const out = (l: string) => process.stdout.write(`${l}\n`);
  const kill: Fault = 'kill-worker';
  const runs: Array<{ name: string; sidecar: boolean; faults: Fault[] }> = [
    {
      name: 'direct (receiver always 200)',
      sidecar: false,
      faults: [
        kill,
        kill,
        'flush-redis',
        kill,
        'restart-pg-fast',
        kill,
        'restart-redis',
        kill,
        kill,
        'restart-pg-immediate',
        kill,
        kill,
      ],
    },
    {
      name: 'sidecar (app fails 10 % of forwards)',
      sidecar: true,
      faults: [
        'kill-sidecar',
        kill,
        'restart-pg-fast',
        'kill-sidecar',
        'flush-redis',
        kill,
        'restart-pg-immediate',
        'kill-sidecar',
        kill,
      ],
    },
  ];
  for (const r of runs) {
    if (only && !r.name.startsWith(only)) continue;
    out(`\n### chaos ${r.name}: ${events} events over ${seconds} s, 2 workers`);
    const result = await runChaos({
      events,
      enqueueMs: seconds * 1000,
      faults: r.faults,
      sidecar: r.sidecar,
      drainMs: 120_000,
      log: (l) => out(`  ${l}`),
    });
    out(formatResult(r.name, result));
  }
}
