/* eslint-disable @typescript-eslint/no-explicit-any -- mutating fixtures field by field */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import {
  loadTrustFile,
  parseTrust,
  routeRegistration,
  TrustFileError,
  type TrustConfig,
} from '../../../receiver/trust/trust-file.js';

const SECRET = 'k3Y9vQ2mX7pL4sN8bR1tW6zA5cE0hJ3u';
const TOKEN = 'Tk_7fG2hJ9kL4mN1pQ6rS3tU8vW5xY0zAb';

const good = {
  senders: [
    {
      id: 'seller-a',
      jwks: { keys: [{ kid: 'k1', kty: 'OKP', crv: 'Ed25519', x: 'abc' }] },
    },
    { id: 'seller-b', jwks_uri: 'https://b.example/.well-known/jwks.json' },
    {
      id: 'seller-c',
      agent_url: 'https://c.example/mcp',
      pins: { adagents_url: 'https://pub.example/.well-known/adagents.json' },
      revocation_url: 'https://c.example/.well-known/revocations.json',
      delivery_retry_horizon_seconds: 86400,
    },
    {
      id: 'seller-d',
      jwks_uri: 'https://d.example/jwks.json',
      pins: { signing_keys: [{ kid: 'd1', kty: 'OKP', revoked_at: '2026-01-01T00:00:00Z' }] },
    },
  ],
  revocation_url: 'https://ops.example/revocations.json',
  revoked_kids: ['old-kid'],
  legacy: [
    { path_prefix: '/hooks/a', sender: 'seller-a', scheme: 'HMAC-SHA256', secrets: [SECRET] },
    { path_prefix: '/hooks/a/bearer', sender: 'seller-a', scheme: 'Bearer', token: TOKEN },
  ],
};

function clone(): Record<string, unknown> & typeof good {
  return structuredClone(good);
}

function fieldOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof TrustFileError) return err.field;
    throw err;
  }
  throw new Error('did not throw');
}

t.test('a complete trust file parses with its types', async (t) => {
  const trust = parseTrust(good);
  t.equal(trust.senders.length, 4);
  t.equal(trust.senders[2]!.delivery_retry_horizon_seconds, 86400);
  t.equal(trust.legacy.length, 2);
  t.same(parseTrust({ senders: [] }).legacy, [], 'legacy defaults to none');
  t.same(trust.revoked_kids, ['old-kid']);
  t.same(parseTrust({ senders: [] }).revoked_kids, []);
});

t.test('each bad field is named', async (t) => {
  const cases: Array<[string, (v: ReturnType<typeof clone>) => void]> = [
    [
      'senders[1].jwks_uri',
      (v) => ((v.senders[1] as Record<string, unknown>).jwks_uri = 'ftp://x'),
    ],
    ['senders[0].id', (v) => ((v.senders[0] as Record<string, unknown>).id = 'bad id!')],
    ['senders[1].id', (v) => ((v.senders[1] as Record<string, unknown>).id = 'seller-a')],
    ['senders[0].jwks', (v) => (v.senders[0] = { id: 'x' } as never)],
    [
      'senders[0].jwks_uri',
      (v) => ((v.senders[0] as Record<string, unknown>).jwks_uri = 'https://x.example/j'),
    ],
    ['senders[0].jwks.keys[0].kid', (v) => ((v.senders[0] as any).jwks.keys[0].kid = '')],
    [
      'senders[0].jwks.keys[1].kid',
      (v) => (v.senders[0] as any).jwks.keys.push({ kid: 'k1', kty: 'OKP' }),
    ],
    ['senders[0].colour', (v) => ((v.senders[0] as Record<string, unknown>).colour = 'red')],
    [
      'senders[2].pins.adagents_url',
      (v) => ((v.senders[2] as any).pins = { adagents_url: 'nope' }),
    ],
    [
      'senders[1].pins.agent_url',
      (v) => ((v.senders[1] as any).pins = { adagents_url: 'https://pub.example/adagents.json' }),
    ],
    [
      'senders[3].pins.signing_keys[0].revoked_at',
      (v) => ((v.senders[3] as any).pins.signing_keys[0].revoked_at = 'yesterday'),
    ],
    ['legacy[0].secrets[0]', (v) => ((v.legacy[0] as any).secrets = ['short'])],
    ['senders[3].pins.adagents_url', (v) => ((v.senders[3] as any).pins = {})],
    [
      'senders[3].pins.agent_url',
      (v) => ((v.senders[3] as any).pins.agent_url = 'https://a.example/'),
    ],
    ['legacy[0].secrets[0]', (v) => ((v.legacy[0] as any).secrets = ['a'.repeat(40)])],
    ['legacy[0].secrets', (v) => ((v.legacy[0] as any).secrets = [])],
    ['legacy[1].token', (v) => ((v.legacy[1] as any).token = 'abc')],
    ['legacy[1].token', (v) => ((v.legacy[1] as any).token = `${TOKEN} with spaces`)],
    ['legacy[0].secrets[0]', (v) => ((v.legacy[0] as any).secrets = ['abcd'.repeat(10)])],
    ['legacy[0].scheme', (v) => ((v.legacy[0] as any).scheme = 'MD5')],
    ['legacy[0].path_prefix', (v) => ((v.legacy[0] as any).path_prefix = 'hooks')],
    ['legacy[1].path_prefix', (v) => ((v.legacy[1] as any).path_prefix = '/hooks/a/')],
    ['revocation_url', (v) => (v.revocation_url = 'https://u:p@x.example/')],
    ['revoked_kids[0]', (v) => (v.revoked_kids = [''])],
    ['senders', (v) => delete (v as Record<string, unknown>).senders],
    ['extra', (v) => ((v as Record<string, unknown>).extra = 1)],
  ];
  for (const [field, mutate] of cases) {
    const v = clone();
    mutate(v);
    t.equal(
      fieldOf(() => parseTrust(v)),
      field,
      `names ${field}`,
    );
  }
  t.throws(() => parseTrust(null), TrustFileError);
  t.throws(() => parseTrust([]), TrustFileError);
});

t.test('loadTrustFile reads JSON strictly', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'trust-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const ok = join(dir, 'ok.json');
  await writeFile(ok, JSON.stringify(good));
  t.equal((await loadTrustFile(ok)).senders[0]!.id, 'seller-a');

  const dup = join(dir, 'dup.json');
  await writeFile(dup, '{"senders":[],"senders":[{"id":"x","jwks_uri":"https://x.example/"}]}');
  await t.rejects(loadTrustFile(dup), { name: 'TrustFileError', message: /duplicate key senders/ });

  const broken = join(dir, 'broken.json');
  await writeFile(broken, '{"senders": [');
  await t.rejects(loadTrustFile(broken), { name: 'TrustFileError', message: /not valid JSON/ });

  await t.rejects(loadTrustFile(join(dir, 'missing.json')), {
    name: 'TrustFileError',
    message: /cannot read/,
  });

  const bad = join(dir, 'bad.json');
  await writeFile(bad, JSON.stringify({ senders: [{ id: 'x' }] }));
  const err = await loadTrustFile(bad).catch((e: unknown) => e);
  t.equal(err instanceof TrustFileError && err.field, 'senders[0].jwks');
});

t.test('routeRegistration picks the mode from the path, longest prefix first', async (t) => {
  const trust: TrustConfig = parseTrust(good);
  t.same(routeRegistration(trust, '/webhooks/x'), { mode: 'rfc9421' });
  t.same(routeRegistration(trust, '/hooks/ab'), { mode: 'rfc9421' }, 'segment aligned');
  const hmac = routeRegistration(trust, '/hooks/a');
  t.equal(hmac.mode, 'hmac');
  t.equal(routeRegistration(trust, '/hooks/a/task/1?x=/hooks/a/bearer').mode, 'hmac');
  const bearer = routeRegistration(trust, '/hooks/a/bearer/x');
  t.equal(bearer.mode, 'bearer');
  t.equal(bearer.mode !== 'rfc9421' && bearer.registration.sender, 'seller-a');
  const root = parseTrust({
    senders: [],
    legacy: [{ path_prefix: '/', sender: 's', scheme: 'Bearer', token: TOKEN }],
  });
  t.equal(routeRegistration(root, '/anything').mode, 'bearer');
});

t.test('capabilities_url and key_origins: strict, each malformed member named', async (t) => {
  const ok = parseTrust({
    senders: [
      {
        id: 'a',
        agent_url: 'https://a.example/mcp',
        capabilities_url: 'https://a.example/capabilities.json',
        key_origins: { webhook_signing: 'https://keys.a.example' },
      },
      { id: 'b', jwks_uri: 'https://b.example/j', key_origins: { webhook_signing: 'b.example' } },
      { id: 'c', jwks: { keys: [] }, capabilities_url: 'https://c.example/caps' },
    ],
  });
  t.equal(ok.senders[0]?.capabilities_url, 'https://a.example/capabilities.json');
  t.equal(ok.senders[1]?.key_origins?.webhook_signing, 'b.example');
  const field = (sender: Record<string, unknown>): string => {
    try {
      parseTrust({ senders: [{ id: 's', ...sender }] });
    } catch (err) {
      if (err instanceof TrustFileError) return err.field;
      throw err;
    }
    return 'accepted';
  };
  const uri = { jwks_uri: 'https://s.example/j' };
  t.equal(field({ ...uri, capabilities_url: 'ftp://s.example/c' }), 'senders[0].capabilities_url');
  t.equal(
    field({ ...uri, capabilities_url: 'https://u:p@s.example/c' }),
    'senders[0].capabilities_url',
  );
  t.equal(field({ ...uri, key_origins: 'keys.s.example' }), 'senders[0].key_origins');
  t.equal(field({ ...uri, key_origins: {} }), 'senders[0].key_origins.webhook_signing');
  t.equal(
    field({ ...uri, key_origins: { webhook_signing: 'https://k.example/path' } }),
    'senders[0].key_origins.webhook_signing',
  );
  t.equal(
    field({ ...uri, key_origins: { webhook_signing: 42 } }),
    'senders[0].key_origins.webhook_signing',
  );
  t.equal(
    field({ ...uri, key_origins: { webhook_signing: 'k.example', request_signing: 'k.example' } }),
    'senders[0].key_origins.request_signing',
    'unknown member named',
  );
  t.equal(
    field({ jwks: { keys: [] }, key_origins: { webhook_signing: 'k.example' } }),
    'senders[0].key_origins',
    'an inline jwks has no origin to check',
  );
});
