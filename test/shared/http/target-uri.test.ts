import t from 'tap';
import fc from 'fast-check';
import tr46 from 'tr46';
import { readdirSync, readFileSync } from 'node:fs';
import {
  TargetUriError,
  asciiHostFastPath,
  canonicalizeAuthority,
  canonicalizeTargetUri,
  removeDotSegments,
} from '../../../shared/http/target-uri.js';

const S = 'https://seller.example.com';

// Supplement §3, canonicalization.json 3.2: [case, input, @target-uri, @authority].
const POSITIVE: [string, string, string, string][] = [
  [
    'scheme-lowercase',
    'HTTPS://seller.example.com/adcp/create_media_buy',
    `${S}/adcp/create_media_buy`,
    'seller.example.com',
  ],
  ['host-lowercase', 'https://Seller.Example.COM/p', `${S}/p`, 'seller.example.com'],
  ['dns-root-dot-stripped', 'https://example.com./p', 'https://example.com/p', 'example.com'],
  [
    'dns-root-dot-with-port-stripped',
    'https://example.com.:8443/p',
    'https://example.com:8443/p',
    'example.com:8443',
  ],
  [
    'idn-to-punycode',
    'https://bücher.example/p',
    'https://xn--bcher-kva.example/p',
    'xn--bcher-kva.example',
  ],
  [
    'idn-mixed-case-to-punycode',
    'https://BÜCHER.Example/p',
    'https://xn--bcher-kva.example/p',
    'xn--bcher-kva.example',
  ],
  [
    'idn-u-label-root-dot-stripped',
    'https://bücher.example./p',
    'https://xn--bcher-kva.example/p',
    'xn--bcher-kva.example',
  ],
  [
    'idn-a-label-root-dot-stripped',
    'https://xn--bcher-kva.example./p',
    'https://xn--bcher-kva.example/p',
    'xn--bcher-kva.example',
  ],
  [
    'ipv6-host-hex-lowercased',
    'https://[2001:DB8::1]/p',
    'https://[2001:db8::1]/p',
    '[2001:db8::1]',
  ],
  ['ipv6-host-with-port', 'https://[::1]:8443/p', 'https://[::1]:8443/p', '[::1]:8443'],
  ['userinfo-stripped', 'https://user:pass@seller.example.com/p', `${S}/p`, 'seller.example.com'],
  [
    'default-port-https-stripped',
    'https://seller.example.com:443/adcp/create_media_buy',
    `${S}/adcp/create_media_buy`,
    'seller.example.com',
  ],
  [
    'default-port-http-stripped',
    'http://seller.example.com:80/p',
    'http://seller.example.com/p',
    'seller.example.com',
  ],
  [
    'non-default-port-preserved',
    'https://seller.example.com:8443/p',
    'https://seller.example.com:8443/p',
    'seller.example.com:8443',
  ],
  [
    'dot-segment-collapsed',
    `${S}/adcp/./create_media_buy`,
    `${S}/adcp/create_media_buy`,
    'seller.example.com',
  ],
  ['double-dot-segment-collapsed', `${S}/a/b/../c`, `${S}/a/c`, 'seller.example.com'],
  ['consecutive-slashes-preserved', `${S}/a//b`, `${S}/a//b`, 'seller.example.com'],
  ['dot-segment-with-consecutive-slashes', `${S}/a/.//b`, `${S}/a//b`, 'seller.example.com'],
  ['double-dot-segment-with-consecutive-slashes', `${S}/a//../b`, `${S}/a/b`, 'seller.example.com'],
  ['empty-path-with-authority-becomes-slash', `${S}?x=1`, `${S}/?x=1`, 'seller.example.com'],
  ['percent-encoded-hex-uppercased', `${S}/path%2fhere`, `${S}/path%2Fhere`, 'seller.example.com'],
  ['percent-encoded-reserved-preserved', `${S}/a%3Ab%3Fc`, `${S}/a%3Ab%3Fc`, 'seller.example.com'],
  ['percent-encoded-unreserved-tilde-decoded', `${S}/%7Efoo`, `${S}/~foo`, 'seller.example.com'],
  ['percent-encoded-unreserved-alpha-decoded', `${S}/%41%42C`, `${S}/ABC`, 'seller.example.com'],
  ['query-byte-preserved', `${S}/p?b=2&a=1&c=3`, `${S}/p?b=2&a=1&c=3`, 'seller.example.com'],
  ['query-plus-not-decoded', `${S}/p?x=a+b`, `${S}/p?x=a+b`, 'seller.example.com'],
  ['trailing-empty-query-preserved', `${S}/p?`, `${S}/p?`, 'seller.example.com'],
  ['no-query-preserved', `${S}/p`, `${S}/p`, 'seller.example.com'],
  ['fragment-stripped', `${S}/p#frag`, `${S}/p`, 'seller.example.com'],
];

// The eight reject cases of the table, with the reason we report.
const REJECT: [string, string, string][] = [
  ['multiple trailing dots', 'https://example.com../p', 'multiple_trailing_dots'],
  ['empty label', 'https://example..com/p', 'empty_label'],
  ['no host', 'https://:443/p', 'empty_host'],
  ['userinfo, no host', 'https://user@/p', 'empty_host'],
  ['empty authority', 'https:///p', 'empty_host'],
  ['missing ]', 'https://[::1/p', 'missing_bracket'],
  ['bare IPv6', 'https://fe80::1/p', 'unbracketed_ipv6'],
  ['zone id', 'https://[fe80::1%25eth0]/p', 'ipv6_zone_id'],
];

/** The reason of the TargetUriError thrown, 'accepted' when nothing was thrown. */
function reasonOf(fn: () => unknown): string {
  try {
    fn();
    return 'accepted';
  } catch (err) {
    if (!(err instanceof TargetUriError)) return `other error: ${String(err)}`;
    // The message names the reason only, never the input (which may carry credentials).
    if (err.message !== `malformed target URI: ${err.code}`) return 'message leaks';
    return err.code;
  }
}

t.test('supplement §3: the 29 positive cases, both outputs', async (t) => {
  t.equal(POSITIVE.length, 29);
  for (const [name, input, target, authority] of POSITIVE) {
    const c = canonicalizeTargetUri(input);
    t.equal(c.targetUri, target, `${name}: @target-uri`);
    t.equal(c.authority, authority, `${name}: @authority`);
  }
});

t.test('supplement §3: the 8 reject cases', async (t) => {
  t.equal(REJECT.length, 8);
  for (const [name, input, reason] of REJECT) {
    t.equal(
      reasonOf(() => canonicalizeTargetUri(input)),
      reason,
      name,
    );
    t.equal(
      reasonOf(() => canonicalizeTargetUri(input, { rejectRawNonAscii: true })),
      reason,
      name,
    );
  }
});

t.test('structured result: scheme, host, port', async (t) => {
  t.same(canonicalizeTargetUri('HTTPS://[2001:DB8::1]:8443/p'), {
    targetUri: 'https://[2001:db8::1]:8443/p',
    authority: '[2001:db8::1]:8443',
    scheme: 'https',
    host: '[2001:db8::1]',
    port: 8443,
  });
  const c = canonicalizeTargetUri('http://Example.com:80');
  t.equal(c.scheme, 'http');
  t.equal(c.host, 'example.com');
  t.equal(c.port, null);
  t.equal(c.targetUri, 'http://example.com/');
  t.equal(canonicalizeTargetUri('http://example.com:443/').port, 443, '443 is not http default');
  t.equal(canonicalizeTargetUri('https://example.com:80/').authority, 'example.com:80');
  t.equal(canonicalizeTargetUri('https://example.com:/p').authority, 'example.com', 'empty port');
  t.equal(canonicalizeTargetUri('https://example.com:08443/p').port, 8443, 'leading zeros');
});

t.test('webhook vectors 004-006: URL canonicalises to the base lines', async (t) => {
  const dir = new URL('../../../conformance-vectors/webhook-signing/positive/', import.meta.url);
  const files = readdirSync(dir).filter((f) => /^00[4-6]-/.test(f));
  t.equal(files.length, 3);
  for (const f of files) {
    const v = JSON.parse(readFileSync(new URL(f, dir), 'utf8')) as {
      request: { url: string };
      expected_signature_base: string;
    };
    const line = (name: string) =>
      v.expected_signature_base
        .split('\n')
        .find((l) => l.startsWith(`"${name}": `))!
        .slice(name.length + 4);
    for (const rejectRawNonAscii of [false, true]) {
      const c = canonicalizeTargetUri(v.request.url, { rejectRawNonAscii });
      t.equal(c.targetUri, line('@target-uri'), `${f}: @target-uri`);
      t.equal(c.authority, line('@authority'), `${f}: @authority`);
    }
  }
});

t.test('raw non-ASCII: converted on the signer path, rejected on the verifier path', async (t) => {
  const v = { rejectRawNonAscii: true };
  t.equal(
    reasonOf(() => canonicalizeTargetUri('https://bücher.example/p', v)),
    'raw_non_ascii',
    'host',
  );
  t.equal(
    reasonOf(() => canonicalizeTargetUri(`${S}/caf\u00e9`, v)),
    'raw_non_ascii',
    'path',
  );
  t.equal(
    reasonOf(() => canonicalizeTargetUri(`${S}/p?q=\u00e9`, v)),
    'raw_non_ascii',
    'query',
  );
  t.equal(canonicalizeTargetUri(`${S}/caf\u00e9`).targetUri, `${S}/caf%C3%A9`);
  t.equal(canonicalizeTargetUri(`${S}/p?q=\u2603`).targetUri, `${S}/p?q=%E2%98%83`);
  t.equal(canonicalizeTargetUri(`${S}/p#\u00e9`, v).targetUri, `${S}/p`, 'fragment not examined');
  t.equal(
    reasonOf(() => canonicalizeTargetUri(`${S}/\ud800`)),
    'invalid_character',
    'lone surrogate',
  );
  t.equal(
    reasonOf(() => canonicalizeTargetUri('https://a\ud800.example/')),
    'invalid_character',
    'host',
  );
});

t.test('UTS-46 flags: nontransitional, CheckHyphens, CheckBidi, STD3, joiners', async (t) => {
  t.equal(canonicalizeTargetUri('https://faß.de/').host, 'xn--fa-hia.de', 'ß kept');
  t.equal(canonicalizeTargetUri('https://ＥＸＡＭＰＬＥ.com/').host, 'example.com', 'mapping');
  t.equal(canonicalizeTargetUri('https://example.com\u3002/').host, 'example.com', 'IDN dot');
  t.equal(canonicalizeTargetUri('https://XN--BCHER-KVA.example/').host, 'xn--bcher-kva.example');
  for (const [host, what] of [
    ['-lead.example', 'leading hyphen'],
    ['trail-.example', 'trailing hyphen'],
    ['ab--cd.example', 'hyphens in 3-4'],
    ['a_b.example', 'STD3 underscore'],
    ['a\u05d0.example', 'bidi'],
    ['a\u200db.example', 'joiner'],
    ['xn--a.example', 'bad punycode'],
    ['a%41.example', 'percent in host'],
    ['a*b.example', 'STD3 symbol'],
  ]) {
    t.equal(
      reasonOf(() => canonicalizeTargetUri(`https://${host}/`)),
      'invalid_host',
      what!,
    );
  }
});

t.test('further rejects beyond the table', async (t) => {
  for (const [input, reason] of [
    ['ftp://example.com/', 'unsupported_scheme'],
    ['javascript:alert(1)', 'unsupported_scheme'],
    ['https:example.com/p', 'missing_authority'],
    ['https:/example.com/p', 'missing_authority'],
    ['//example.com/p', 'invalid_syntax'],
    ['example.com/p', 'invalid_syntax'],
    ['', 'invalid_syntax'],
    ['https://exa mple.com/', 'invalid_character'],
    [' https://example.com/', 'invalid_character'],
    ['https://example.com/a\tb', 'invalid_character'],
    ['https://example.com/a\nb', 'invalid_character'],
    ['https://example.com/p?\x7f', 'invalid_character'],
    ['https://a@b@example.com/', 'ambiguous_userinfo'],
    ['https://example.com\\@evil.example/', 'invalid_character'],
    ['https://u\\x@example.com/', 'invalid_character'],
    ['https://example.com/a\\b', 'invalid_character'],
    ['https://example.com/a"b', 'invalid_character'],
    ['https://example.com/a<b>', 'invalid_character'],
    ['https://example.com/a{b}', 'invalid_character'],
    ['https://example.com/a`b', 'invalid_character'],
    ['https://example.com/p?a<b', 'invalid_character'],
    ['https://example.com/p?a"b', 'invalid_character'],
    ['https://example.com:0/', 'invalid_port'],
    ['https://example.com:65536/', 'invalid_port'],
    ['https://example.com:99999999999999999999999/', 'invalid_port'],
    ['https://example.com:8a/', 'invalid_port'],
    ['https://[::1]x/', 'invalid_port'],
    ['https://[::1]:x/', 'invalid_port'],
    ['https://[v1.fe]/', 'invalid_ipv6'],
    ['https://[1:2:3]/', 'invalid_ipv6'],
    ['https://[]/', 'invalid_ipv6'],
    ['https://[fe80::1%eth0]/', 'ipv6_zone_id'],
    ['https://::1/', 'unbracketed_ipv6'],
    ['https://./', 'empty_label'],
    ['https://.example.com/', 'empty_label'],
    ['https://example.com/a%2', 'invalid_percent_encoding'],
    ['https://example.com/a%zz', 'invalid_percent_encoding'],
    ['https://example.com/%', 'invalid_percent_encoding'],
  ] as const) {
    t.equal(
      reasonOf(() => canonicalizeTargetUri(input)),
      reason,
      JSON.stringify(input),
    );
  }
  t.equal(
    reasonOf(() => canonicalizeTargetUri(42 as unknown as string)),
    'invalid_syntax',
    'non-string',
  );
});

t.test('path and query details', async (t) => {
  const c = (p: string) => canonicalizeTargetUri(`${S}${p}`).targetUri.slice(S.length);
  t.equal(c('/a/%2e%2E/b'), '/b', 'encoded dots are dot segments (decoded first)');
  t.equal(c('/a/b/..'), '/a/', 'final .. leaves a slash');
  t.equal(c('/a/.'), '/a/', 'final . leaves a slash');
  t.equal(c('/../../a'), '/a', 'above root');
  t.equal(c('//'), '//');
  t.equal(c(''), '/');
  t.equal(c('/%2d%5f%2E%7e'), '/-_.~', 'request vector 009 style');
  t.equal(c('/%25%2f%3F'), '/%25%2F%3F', 'reserved stay encoded');
  t.equal(c('/a|b^c[d]'), '/a|b^c[d]', 'other printable ASCII kept byte for byte');
  t.equal(c("/p?a[]=1&b={x}|'^`\\"), "/p?a[]=1&b={x}|'^`\\", 'query too');
  t.equal(c('/p?%zz&a=%2f&./..'), '/p?%zz&a=%2f&./..', 'query untouched');
  t.equal(c('/p??#x'), '/p??', 'second ? belongs to the query');
  t.equal(c('?'), '/?');
  t.equal(c('#'), '/');
  t.equal(removeDotSegments('/a/b/c/./../../g'), '/a/g', 'RFC 3986 §5.2.4 example');
  t.equal(removeDotSegments('/mid/content=5/../6'), '/mid/6', 'RFC 3986 §5.2.4 example');
});

t.test('canonicalizeAuthority for Host / :authority', async (t) => {
  t.equal(canonicalizeAuthority('Seller.Example.COM', 'https'), 'seller.example.com');
  t.equal(canonicalizeAuthority('seller.example.com:443', 'https'), 'seller.example.com');
  t.equal(canonicalizeAuthority('seller.example.com:443', 'HTTP'), 'seller.example.com:443');
  t.equal(canonicalizeAuthority('seller.example.com:80', 'http'), 'seller.example.com');
  t.equal(canonicalizeAuthority('example.com.:8443', 'https'), 'example.com:8443');
  t.equal(canonicalizeAuthority('[2001:DB8::1]:443', 'https'), '[2001:db8::1]');
  t.equal(canonicalizeAuthority('[::1]:8443', 'https'), '[::1]:8443');
  t.equal(canonicalizeAuthority('xn--BCHER-kva.example.', 'https'), 'xn--bcher-kva.example');
  t.equal(
    canonicalizeAuthority('bücher.example', 'https', { rejectRawNonAscii: false }),
    'xn--bcher-kva.example',
  );
  for (const [value, reason] of [
    ['bücher.example', 'raw_non_ascii'],
    ['user@example.com', 'invalid_host'],
    ['example.com/p', 'invalid_host'],
    ['example.com?x', 'invalid_host'],
    ['', 'empty_host'],
    [':443', 'empty_host'],
    ['example..com', 'empty_label'],
    ['example.com..', 'multiple_trailing_dots'],
    ['[::1', 'missing_bracket'],
    ['fe80::1', 'unbracketed_ipv6'],
    ['[fe80::1%25eth0]', 'ipv6_zone_id'],
    ['example.com:x', 'invalid_port'],
    ['example.com ', 'invalid_character'],
  ] as const) {
    t.equal(
      reasonOf(() => canonicalizeAuthority(value, 'https')),
      reason,
      JSON.stringify(value),
    );
  }
  t.equal(
    reasonOf(() => canonicalizeAuthority('example.com', 'ftp')),
    'unsupported_scheme',
    'scheme',
  );
  t.equal(
    reasonOf(() => canonicalizeAuthority(7 as unknown as string, 'https')),
    'invalid_syntax',
    'type',
  );
});

// Generated URLs: a mix of what the rules normalise (case, dots, escapes, ports, IDN, IPv6).
const label = fc
  .stringMatching(/^[a-z0-9](?:[a-z0-9-]{0,6}[a-z0-9])?$/)
  .filter((l) => l.slice(2, 4) !== '--');
const mixedCase = (s: string) =>
  fc
    .array(fc.boolean(), { minLength: s.length, maxLength: s.length })
    .map((up) => [...s].map((ch, i) => (up[i] ? ch.toUpperCase() : ch)).join(''));
const regName = fc
  .tuple(
    fc.array(fc.oneof(label, fc.constantFrom('bücher', 'BÜCHER', 'faß', '日本', 'пример')), {
      minLength: 1,
      maxLength: 4,
    }),
    fc.boolean(),
  )
  .map(([labels, rootDot]) => labels.join('.') + (rootDot ? '.' : ''))
  .chain(mixedCase);
const host = fc.oneof(
  { weight: 4, arbitrary: regName },
  { weight: 1, arbitrary: fc.ipV4() },
  {
    weight: 1,
    arbitrary: fc
      .ipV6()
      .chain(mixedCase)
      .map((h) => `[${h}]`),
  },
);
const segment = fc.oneof(
  fc.constantFrom('', '.', '..', '%2e', '%2E%2e', 'a', 'B', '%7e', '%41', '%2f', '%3a', 'é', '~'),
  fc.stringMatching(/^[A-Za-z0-9._~!$&'()*+,;=:@-]{0,6}$/),
);
const validUrl = fc
  .record({
    scheme: fc.constantFrom('http', 'https', 'HTTP', 'HtTpS'),
    userinfo: fc.option(fc.stringMatching(/^[a-z0-9:]{0,6}$/), { nil: undefined }),
    host,
    port: fc.option(fc.oneof(fc.integer({ min: 1, max: 65535 }), fc.constantFrom(80, 443, '')), {
      nil: undefined,
    }),
    path: fc.array(segment, { maxLength: 6 }),
    query: fc.option(fc.stringMatching(/^[A-Za-z0-9=&+%/?.é-]{0,10}$/), { nil: undefined }),
    fragment: fc.option(fc.stringMatching(/^[a-z#?/]{0,5}$/), { nil: undefined }),
  })
  .map(
    (u) =>
      `${u.scheme}://${u.userinfo !== undefined ? `${u.userinfo}@` : ''}${u.host}` +
      `${u.port !== undefined ? `:${u.port}` : ''}${u.path.map((s) => `/${s}`).join('')}` +
      `${u.query !== undefined ? `?${u.query}` : ''}${u.fragment !== undefined ? `#${u.fragment}` : ''}`,
  );

t.test('property: canonicalisation is idempotent on generated valid URLs', async (t) => {
  fc.assert(
    fc.property(validUrl, (url) => {
      const once = canonicalizeTargetUri(url);
      const twice = canonicalizeTargetUri(once.targetUri, { rejectRawNonAscii: true });
      if (twice.targetUri !== once.targetUri || twice.authority !== once.authority) return false;
      if (canonicalizeAuthority(once.authority, once.scheme) !== once.authority) return false;
      // The output is ASCII, has no fragment and no dot segment left in its path.
      if (/[^\x21-\x7e]|#/.test(once.targetUri)) return false;
      const path = once.targetUri.slice(`${once.scheme}://${once.authority}`.length).split('?')[0]!;
      return !path.split('/').some((s) => s === '.' || s === '..');
    }),
    { numRuns: 2000 },
  );
  t.pass('2000 generated URLs');
});

const onlyTargetUriErrors = (input: string) => {
  for (const rejectRawNonAscii of [false, true]) {
    try {
      canonicalizeTargetUri(input, { rejectRawNonAscii });
    } catch (err) {
      if (!(err instanceof TargetUriError)) throw err;
    }
    try {
      canonicalizeAuthority(input, 'https', { rejectRawNonAscii });
    } catch (err) {
      if (!(err instanceof TargetUriError)) throw err;
    }
  }
};

t.test('property: random strings never throw anything but TargetUriError', async (t) => {
  fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 60 }), onlyTargetUriErrors), {
    numRuns: 3000,
  });
  fc.assert(
    fc.property(
      fc.tuple(
        fc.constantFrom('', 'https://', 'HTTP://'),
        fc.string({ unit: fc.constantFrom(...'[]@:/?#%.aZ09-é\u05d0\u200d'), maxLength: 40 }),
      ),
      ([prefix, rest]) => onlyTargetUriErrors(prefix + rest),
    ),
    { numRuns: 3000 },
  );
  // Mutations of valid URLs: one character replaced or inserted anywhere.
  fc.assert(
    fc.property(
      validUrl,
      fc.nat(),
      fc.string({ unit: 'binary', minLength: 1, maxLength: 2 }),
      fc.boolean(),
      (url, at, ins, replace) => {
        const i = at % (url.length + 1);
        onlyTargetUriErrors(url.slice(0, i) + ins + url.slice(replace ? i + 1 : i));
      },
    ),
    { numRuns: 3000 },
  );
  t.pass('no other error escaped');
});

t.test('property: the ASCII fast path agrees with tr46 wherever it answers', async (t) => {
  const uts46 = {
    transitionalProcessing: false,
    checkHyphens: true,
    checkBidi: true,
    checkJoiners: true,
    useSTD3ASCIIRules: true,
  };
  let answered = 0;
  fc.assert(
    fc.property(
      fc.string({ unit: fc.constantFrom(...'aZ09-._xn\u212a'), maxLength: 20 }),
      (name) => {
        const fast = asciiHostFastPath(name);
        if (fast === undefined) return true;
        answered++;
        return fast === tr46.toASCII(name, uts46);
      },
    ),
    { numRuns: 5000 },
  );
  t.ok(answered > 1000, `fast path answered ${answered} of 5000`);
  t.equal(asciiHostFastPath('\u212aelvin.example'), undefined, 'Kelvin sign goes to tr46');
  t.equal(canonicalizeTargetUri('https://\u212aelvin.example/').host, 'kelvin.example');
  t.equal(asciiHostFastPath('xn--bcher-kva.example'), undefined, 'A-labels go to tr46');
  t.equal(asciiHostFastPath('Seller.Example.COM'), 'seller.example.com');
});
