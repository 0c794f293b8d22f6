/**
 * oidc-provider's notices go through our logger (once per text); the library's own
 * development interaction pages are never on (agents/oauth/dev-login.ts replaces them), so
 * it has nothing to warn about, in production or not.
 */
import { Writable } from 'node:stream';
import t from 'tap';
import { createOAuthServer } from '../../agents/oauth/server.js';
import { brandProfile } from '../../shared/brand.js';
import { createLogger } from '../../shared/infra/logger.js';
import { testDatabase } from '../helpers/db.js';

const urls = {
  sales: 'http://127.0.0.1:1',
  creative: 'http://127.0.0.1:2',
  signals: 'http://127.0.0.1:3',
};

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk, _e, cb) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { lines, logger: createLogger({ level: 'info', destination }) };
}

t.test('no library notice, none on the console', async (t) => {
  const { pool, schema } = testDatabase(t, 'oidcn');
  const warn = console.warn;
  const printed: unknown[] = [];
  console.warn = (...a: unknown[]) => void printed.push(a);
  t.teardown(() => (console.warn = warn));

  const prod = capture();
  const p = await createOAuthServer({
    pool,
    schema,
    profile: brandProfile('svc'),
    urls,
    logger: prod.logger,
  });
  for (const agent of ['sales', 'creative', 'signals'] as const) p.middleware(agent);
  t.same(prod.lines, [], 'nothing to warn about');

  const dev = capture();
  const d = await createOAuthServer({
    pool,
    schema,
    profile: brandProfile('svc'),
    urls,
    logger: dev.logger,
  });
  for (const agent of ['sales', 'creative', 'signals'] as const) d.middleware(agent);
  console.warn = warn;
  const notices = dev.lines.filter((l) => l.event === 'oidc_provider_notice');
  t.equal(notices.length, 0, 'no development-only library feature is on');
  t.same(
    printed.filter((a) => String((a as unknown[])[0]).includes('oidc-provider')),
    [],
    'nothing on the console',
  );
});
