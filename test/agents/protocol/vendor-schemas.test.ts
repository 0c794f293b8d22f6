/** scripts/vendor-schemas.mjs: the vendored copy is current, and its CLI answers as documented. */
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';

const run = promisify(execFile);
const SCRIPT = 'scripts/vendor-schemas.mjs';

async function exec(args: string[]) {
  try {
    const r = await run(process.execPath, [SCRIPT, ...args], { timeout: 60_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

t.test('--check: the vendored schemas match the shared published ones', async (t) => {
  const r = await exec(['--check']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /files up to date/);
});

t.test('--check fails naming the files when the source differs', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vendor-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  cpSync('../shared/spec/schemas', dir, { recursive: true });
  writeFileSync(
    join(dir, '3.1.19/enums/media-buy-status.json'),
    JSON.stringify({ $id: '/schemas/3.1.19/enums/media-buy-status.json', enum: ['x'] }),
  );
  const r = await exec(['--source', dir, '--check']);
  t.equal(r.code, 1);
  t.match(r.stderr, /3\.1\.19\/enums\/media-buy-status\.json/);
});

t.test('--help and a bad argument', async (t) => {
  const help = await exec(['--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /usage: node scripts\/vendor-schemas\.mjs/);
  const bad = await exec(['--bogus']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /unknown argument --bogus/);
});
