/** `svc --help`: process start to exit, the floor of every command (target < 300 ms compiled). */
import {
  RUNTIME_LABEL,
  RUNTIMES,
  runtimeEnv,
  SVC,
  timeLines,
  timeProcess,
  type StartupSection,
} from './common.js';

export const cliHelp: StartupSection = {
  name: 'help',
  description: '`svc --help`, spawn to exit',
  async run(ctx) {
    const bare = [];
    for (let i = 0; i < ctx.runs; i++) bare.push(await timeProcess(['-e', '0']));
    for (const l of timeLines('bare `node -e 0` (floor)', bare)) ctx.log(l);
    for (const runtime of RUNTIMES) {
      await timeProcess([SVC, '--help'], { env: runtimeEnv(runtime) }); // warm the file cache
      const samples = [];
      for (let i = 0; i < ctx.runs; i++) {
        samples.push(await timeProcess([SVC, '--help'], { env: runtimeEnv(runtime) }));
      }
      for (const l of timeLines(RUNTIME_LABEL[runtime], samples)) ctx.log(l);
    }
  },
};
