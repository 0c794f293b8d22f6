/**
 * The package ships its own copy of the public signing vectors (conformance-vectors/), so the
 * kit works once installed. While the shared folder sits beside the repository, the copy must
 * stay identical to it, file for file.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import {
  DEFAULT_VECTORS_DIR,
  loadSigningVectors,
} from '../../conformance/grade-receiver/vectors.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const copy = join(repo, 'conformance-vectors', 'webhook-signing');
const shared = join(repo, '..', 'shared', 'conformance', 'webhook-signing');

function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

t.test('the kit defaults to the copy in the package', async (t) => {
  t.equal(DEFAULT_VECTORS_DIR, copy);
  t.ok(loadSigningVectors(DEFAULT_VECTORS_DIR).length >= 20, 'the vectors load');
});

t.test('the copy matches ../shared/conformance', { skip: !existsSync(shared) }, async (t) => {
  t.same(files(copy), files(shared));
  for (const f of files(shared)) {
    t.ok(readFileSync(join(copy, f)).equals(readFileSync(join(shared, f))), f);
  }
});
