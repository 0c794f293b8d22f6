/**
 * A failed key discovery is logged once per cause, naming the URL and why (repeats go to
 * debug), and a loopback http agent without the opt-in is refused naming the opt-in.
 */
import { Writable } from 'node:stream';
import t from 'tap';
import { BrandJsonDiscovery } from '../../../receiver/keys/brand-discovery.js';
import { checkFetchableUrl } from '../../../receiver/keys/fetch-json.js';
import { RemoteKeySet, DEFAULT_CACHE_POLICY } from '../../../receiver/keys/remote-key-set.js';
import { createLogger } from '../../../shared/infra/logger.js';
import { manualClock } from './doc-server.js';

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk, _e, cb) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { lines, logger: createLogger({ level: 'debug', destination }) };
}

t.test('the opt-in is named when loopback http is refused', async (t) => {
  t.throws(() => checkFetchableUrl('http://127.0.0.1:3001/.well-known/brand.json', false), {
    message: /--allow-http-loopback \(SVC_RECEIVER_ALLOW_HTTP_LOOPBACK=1/,
  });
  t.throws(() => checkFetchableUrl('http://seller.example/x', true), {
    message: /^http:\/\/seller\.example\/x: only https is allowed$/,
  });
  t.equal(checkFetchableUrl('http://127.0.0.1:3001/x', true).port, '3001');
});

t.test('brand.json discovery: one warning per distinct cause', async (t) => {
  const { lines, logger } = capture();
  const clock = manualClock();
  const d = new BrandJsonDiscovery('http://127.0.0.1:3001', clock.now, 60_000, 1_000, {
    allowLoopback: false,
    logger,
  });
  for (let i = 0; i < 3; i++) {
    t.equal(await d.current(), null);
    clock.advance(2_000);
  }
  const warns = lines.filter((l) => l.event === 'key_discovery_failed' && l.level === 40);
  const debugs = lines.filter((l) => l.event === 'key_discovery_failed' && l.level === 20);
  t.equal(warns.length, 1, 'warned once');
  t.equal(debugs.length, 2, 'repeats at debug');
  t.match(
    warns[0]!.msg,
    /key discovery for http:\/\/127\.0\.0\.1:3001 failed: http:\/\/127\.0\.0\.1:3001.*: only https is allowed; plain http to a loopback host needs the opt-in/,
  );
});

t.test('JWKS fetch: one warning per distinct cause, again after a success', async (t) => {
  const { lines, logger } = capture();
  const clock = manualClock();
  const set = new RemoteKeySet('http://127.0.0.1:1/jwks.json', clock.now, DEFAULT_CACHE_POLICY, {
    allowLoopback: true,
    logger,
    connectTimeoutMs: 500,
    totalTimeoutMs: 1000,
  });
  for (let i = 0; i < 2; i++) {
    await set.view();
    clock.advance(DEFAULT_CACHE_POLICY.negativeTtlMs + 1);
  }
  const fails = lines.filter((l) => /JWKS fetch failed/.test(String(l.msg)));
  t.same(
    fails.map((l) => l.level),
    [40, 20],
  );
});
