/** `svc --version` says the package's version, read from package.json (checkout or dist/). */
import { readFileSync } from 'node:fs';
import t from 'tap';
import { buildProgram, packageVersion } from '../../cli/main.js';

const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));

t.test("the version is package.json's", async (t) => {
  t.equal(packageVersion(), manifest.version);
  t.equal(buildProgram().version(), manifest.version);
});
