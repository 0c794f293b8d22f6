#!/usr/bin/env node
// Copies the protocol's compliance storyboards of the releases our agents speak out of the
// shared folder (../shared/spec/compliance/<release>/) into
// test/agents/interop/compliance/<release>/: what the reference SDK's storyboard runner reads
// from a compliance directory (index.json, universal/, protocols/, specialisms/, test-kits/,
// and the request-signing test vectors), nothing else (`domains/` is a duplicate of
// `protocols/`). Tests only: the package and the tests never read ../shared.
//
// Usage: node scripts/vendor-storyboards.mjs [--source DIR] [--check]
//   --source DIR  the folder holding the release folders (default ../shared/spec/compliance)
//   --check       compare with what is vendored; exit 1 when it differs (CI drift check)
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, 'test', 'agents', 'interop', 'compliance');
const RELEASES = ['3.1.19', '3.2.0-beta.5'];
/** What the runner reads, relative to a release folder. */
const PARTS = [
  'index.json',
  'universal',
  'protocols',
  'specialisms',
  'test-kits',
  'test-vectors/request-signing',
];

function usage() {
  process.stdout.write(
    'usage: node scripts/vendor-storyboards.mjs [--source DIR] [--check]\n' +
      '  Vendors the 3.1.19 and 3.2.0-beta.5 compliance storyboards into\n' +
      '  test/agents/interop/compliance/. --check exits 1 when the vendored copy is stale.\n',
  );
}

function parseArgs(argv) {
  const args = { source: resolve(ROOT, '..', 'shared', 'spec', 'compliance'), check: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') {
      usage();
      process.exit(0);
    } else if (a === '--check') args.check = true;
    else if (a === '--source' && argv[i + 1]) args.source = resolve(argv[++i]);
    else {
      process.stderr.write(`vendor-storyboards: unknown argument ${a}\n`);
      usage();
      process.exit(2);
    }
  }
  return args;
}

function listFiles(dir, base = dir, out = []) {
  if (!existsSync(dir)) return out;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) listFiles(p, base, out);
    else out.push(relative(base, p));
  }
  return out;
}

/** release-relative path -> text, for every file the runner reads. */
function wantedFiles(source) {
  const wanted = new Map();
  for (const release of RELEASES) {
    const dir = join(source, release);
    if (!existsSync(join(dir, 'index.json'))) {
      throw new Error(`${dir}: no index.json (is --source the compliance folder?)`);
    }
    for (const part of PARTS) {
      const p = join(dir, part);
      const files = part.endsWith('.json') ? [part] : listFiles(p).map((f) => join(part, f));
      for (const f of files) wanted.set(join(release, f), readFileSync(join(dir, f), 'utf8'));
    }
  }
  return wanted;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const wanted = wantedFiles(args.source);
  if (args.check) {
    const have = new Set(listFiles(OUT));
    const stale = [];
    for (const [file, text] of wanted) {
      const p = join(OUT, file);
      if (!existsSync(p) || readFileSync(p, 'utf8') !== text) stale.push(file);
      have.delete(file);
    }
    stale.push(...have);
    if (stale.length > 0) {
      process.stderr.write(
        `vendor-storyboards: ${stale.length} file(s) differ, e.g. ${stale.slice(0, 5).join(', ')}; run node scripts/vendor-storyboards.mjs\n`,
      );
      process.exit(1);
    }
    process.stdout.write(`vendor-storyboards: ${wanted.size} files up to date\n`);
    return;
  }
  for (const release of RELEASES) rmSync(join(OUT, release), { recursive: true, force: true });
  for (const [file, text] of wanted) {
    const p = join(OUT, file);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, text);
  }
  process.stdout.write(`vendor-storyboards: ${wanted.size} files into ${relative(ROOT, OUT)}\n`);
}

main();
