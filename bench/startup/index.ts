/**
 * `npm run bench -- startup`: how long our processes take to be useful, compiled (dist/, what
 * an installed package runs) and from the TypeScript sources through tsx (a development
 * checkout). Each section is one file exporting a `StartupSection`; add a section by adding
 * its file and one line to SECTIONS. Options: --runs N (default 7, at most 30), --no-build
 * (time the dist/ already there instead of building it first), --only NAME[,NAME].
 */
import { existsSync } from 'node:fs';
import { cliHelp } from './cli-help.js';
import { ensureBuilt, REPO, type StartupContext, type StartupSection } from './common.js';
import { embeddedStart } from './embedded-start.js';
import { sidecarReady } from './sidecar.js';

const SECTIONS: StartupSection[] = [cliHelp, sidecarReady, embeddedStart];

export async function run(args: string[]): Promise<void> {
  const flag = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const runs = Math.min(Math.max(Number(flag('--runs') ?? 7) || 7, 1), 30);
  const only = flag('--only')?.split(',');
  const unknown = only?.filter((n) => !SECTIONS.some((s) => s.name === n)) ?? [];
  if (unknown.length > 0) {
    throw new Error(
      `unknown startup section ${unknown.join(', ')}; known: ${SECTIONS.map((s) => s.name).join(', ')}`,
    );
  }
  if (!args.includes('--no-build')) await ensureBuilt();
  else if (!existsSync(`${REPO}/dist/cli/main.js`))
    throw new Error('--no-build, but dist/ is missing');
  const ctx: StartupContext = { runs, log: (line) => process.stdout.write(`${line}\n`) };
  ctx.log(`runs per figure: ${runs} (min / median / max, wall ms; noisy on a shared machine)`);
  for (const section of SECTIONS) {
    if (only && !only.includes(section.name)) continue;
    ctx.log(`\n### ${section.name}: ${section.description}`);
    await section.run(ctx);
  }
}
