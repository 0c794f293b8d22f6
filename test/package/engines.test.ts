/**
 * `engines` in package.json stays true: every package a user installs with ours (the
 * non-dev entries of the lockfile) accepts the lowest Node version we promise. A dependency
 * bump that quietly needs a newer Node (as @nats-io/nuid 3 needs Node 22) fails here, not on
 * a user's machine.
 */
import { readFileSync } from 'node:fs';
import semver from 'semver';
import t from 'tap';

const root = new URL('../../', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as {
  engines: { node: string };
};
const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8')) as {
  packages: Record<string, { dev?: boolean; engines?: { node?: string } | string[] }>;
};

t.test('every installed dependency accepts our lowest Node', async (t) => {
  const lowest = semver.minVersion(pkg.engines.node);
  if (!lowest) throw new Error(`engines.node "${pkg.engines.node}" has no lowest version`);
  const refused: string[] = [];
  let checked = 0;
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path === '' || entry.dev) continue;
    const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
    if (!range) continue;
    checked++;
    if (!semver.satisfies(lowest, range)) refused.push(`${path} (engines.node ${range})`);
  }
  t.ok(checked > 10, `${checked} dependencies declare engines.node`);
  t.same(refused, [], `all accept Node ${lowest.version}`);
});
