/**
 * scripts/vendor-storyboards.mjs: its CLI answers as documented, and its --check names a
 * drifted file. The source here is a copy of what is vendored (tests never read ../shared).
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';

const run = promisify(execFile);
const SCRIPT = 'scripts/vendor-storyboards.mjs';
const VENDORED = 'test/agents/interop/compliance';

async function exec(args: string[]) {
  try {
    const r = await run(process.execPath, [SCRIPT, ...args], { timeout: 60_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

t.test('both releases are vendored with what the runner reads', async (t) => {
  for (const release of ['3.1.19', '3.2.0-beta.5']) {
    for (const part of ['index.json', 'universal', 'protocols', 'specialisms', 'test-kits']) {
      t.ok(existsSync(join(VENDORED, release, part)), `${release}/${part}`);
    }
    t.notOk(existsSync(join(VENDORED, release, 'domains')), `${release}: no duplicate domains/`);
  }
});

t.test('--check against an identical source passes; a changed file is named', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vendor-sb-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(VENDORED, dir, { recursive: true });
  const same = await exec(['--source', dir, '--check']);
  t.equal(same.code, 0, same.stderr);
  t.match(same.stdout, /files up to date/);
  writeFileSync(join(dir, '3.1.19/universal/idempotency.yaml'), 'id: changed\n');
  const changed = await exec(['--source', dir, '--check']);
  t.equal(changed.code, 1);
  t.match(changed.stderr, /3\.1\.19\/universal\/idempotency\.yaml/);
});

t.test('a source without the releases, --help and a bad argument', async (t) => {
  const empty = mkdtempSync(join(tmpdir(), 'vendor-sb-'));
  t.teardown(() => rmSync(empty, { recursive: true, force: true }));
  const missing = await exec(['--source', empty, '--check']);
  t.not(missing.code, 0);
  t.match(missing.stderr, /no index\.json/);
  const help = await exec(['--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /usage: node scripts\/vendor-storyboards\.mjs/);
  const bad = await exec(['--bogus']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /unknown argument --bogus/);
});
