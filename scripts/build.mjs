#!/usr/bin/env node
// `npm run build`: a clean dist/ from tsc (ESM JavaScript, .d.ts, source maps), plus every
// other file under the source folders that a module may read at run time relative to
// import.meta.url (vendored schemas, the consoles' CSS and browser script, and the like),
// copied to the same place in dist/. Only TypeScript sources (tsc's input), Markdown (the
// part READMEs ship at their own paths) and test folders stay behind.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist');
const config = JSON.parse(readFileSync(join(root, 'tsconfig.build.json'), 'utf8'));
const sourceFolders = config.include;

const started = Date.now();
rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], {
  stdio: 'inherit',
});
if (result.status !== 0) {
  process.stderr.write('build: tsc failed; dist/ is incomplete\n');
  process.exit(result.status ?? 1);
}

/** Everything but TypeScript sources and Markdown: what tsc does not emit and a module may read. */
function isRuntimeAsset(name) {
  return !/\.(c|m)?ts$/.test(name) && !name.endsWith('.md');
}

let assets = 0;
for (const folder of sourceFolders) {
  for (const entry of readdirSync(join(root, folder), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !isRuntimeAsset(entry.name)) continue;
    const from = join(entry.parentPath, entry.name);
    const rel = relative(root, from);
    if (rel.split(/[\\/]/).some((part) => part === 'test' || part === 'node_modules')) continue;
    mkdirSync(dirname(join(dist, rel)), { recursive: true });
    cpSync(from, join(dist, rel));
    assets++;
  }
}
process.stdout.write(
  `build: dist/ from ${sourceFolders.join(', ')} (+${assets} runtime assets) in ${Date.now() - started} ms\n`,
);
