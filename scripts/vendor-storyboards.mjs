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
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { listFiles, removeTree, vendorCli } from './vendor-files.mjs';

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

vendorCli({
  name: 'vendor-storyboards',
  usage:
    'usage: node scripts/vendor-storyboards.mjs [--source DIR] [--check]\n' +
    '  Vendors the 3.1.19 and 3.2.0-beta.5 compliance storyboards into\n' +
    '  test/agents/interop/compliance/. --check exits 1 when the vendored copy is stale.\n',
  defaultSource: resolve(ROOT, '..', 'shared', 'spec', 'compliance'),
  out: OUT,
  root: ROOT,
  wanted: wantedFiles,
  clean: () => RELEASES.forEach((release) => removeTree(join(OUT, release))),
});
