import t from 'tap';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';
import {
  CANONICAL_MAX_DEPTH,
  CanonicalJsonError,
  canonicalJson,
  fingerprint,
} from '../../../shared/json/canonical.js';
import { parseStrictJson } from '../../../shared/json/strict-parse.js';

const canonicalize = canonicalizeModule as unknown as (v: unknown) => string | undefined;

function fromIeeeHex(hex: string): number {
  return Buffer.from(hex, 'hex').readDoubleBE(0);
}

t.test('RFC 8785 Appendix B number serialisation', async (t) => {
  const table: [string, string][] = [
    ['0000000000000000', '0'],
    ['8000000000000000', '0'], // -0
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2'],
  ];
  for (const [hex, expected] of table) t.equal(canonicalJson(fromIeeeHex(hex)), expected, hex);
  t.equal(canonicalJson(1e21), '1e+21');
  t.equal(canonicalJson(1e-7), '1e-7');
  t.equal(canonicalJson(-0), '0');
  t.equal(canonicalJson([-0]), '[0]');
  for (const bad of [NaN, Infinity, -Infinity]) {
    t.throws(() => canonicalJson(bad), CanonicalJsonError);
  }
});

t.test('RFC 8785 §3.2.3 member order is by UTF-16 code units', async (t) => {
  const input = {
    '\u20ac': 'Euro Sign',
    '\r': 'Carriage Return',
    '\ufb33': 'Hebrew Letter Dalet With Dagesh',
    '1': 'One',
    '\ud83d\ude00': 'Emoji: Grinning Face',
    '\u0080': 'Control',
    '\u00f6': 'Latin Small Letter O With Diaeresis',
  };
  const keys = Object.keys(JSON.parse(canonicalJson(input)) as object);
  // '1' is an array-index key, so JS lists it first anyway; compare the serialised order
  const order = [...canonicalJson(input).matchAll(/"((?:[^"\\]|\\.)*)":/g)].map((m) => m[1]);
  t.same(order, ['\\r', '1', '\u0080', 'ö', '€', '😀', '\ufb33']);
  t.equal(keys.length, 7);
  // U+FB33 sorts after U+1F600 because its surrogate pair starts with 0xD83D < 0xFB33
  t.ok(canonicalJson(input).indexOf('😀') < canonicalJson(input).indexOf('\ufb33'));
});

t.test('RFC 8785 §3.2.2 complete example', async (t) => {
  const text =
    '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],' +
    ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",' +
    ' "literals": [null, true, false]}';
  t.equal(
    canonicalJson(parseStrictJson(text)),
    '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
      '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
  );
});

t.test('strings: control characters escaped, nothing else', async (t) => {
  t.equal(canonicalJson('\u0000\u001f\u007f\u00e9\u2028'), '"\\u0000\\u001f\u007f\u00e9\u2028"');
  t.equal(canonicalJson('\b\f\n\r\t"\\/'), '"\\b\\f\\n\\r\\t\\"\\\\/"');
});

t.test('input that is not JSON data is refused with a path', async (t) => {
  const cases: [unknown, string][] = [
    [undefined, ''],
    [() => 1, ''],
    [Symbol('s'), ''],
    [10n, ''],
    [{ a: { b: () => 1 } }, '/a/b'],
    [{ a: [1, NaN] }, '/a/1'],
    ['\ud800', ''],
    [{ '\udc00': 1 }, '/\udc00'],
    [{ s: 'x\ud800' }, '/s'],
    [new Date(0), ''],
    [{ m: new Map() }, '/m'],
  ];
  for (const [value, path] of cases) {
    const err = t.throws(() => canonicalJson(value)) as unknown;
    t.type(err, CanonicalJsonError);
    t.equal((err as CanonicalJsonError).path, path);
  }
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  t.throws(() => canonicalJson(cyclic), CanonicalJsonError);
  let deep: unknown = 1;
  for (let i = 0; i < 100_000; i++) deep = [deep];
  t.throws(() => canonicalJson(deep), CanonicalJsonError);
  let ok: unknown = 1;
  for (let i = 0; i < CANONICAL_MAX_DEPTH; i++) ok = [ok];
  t.equal(
    canonicalJson(ok),
    '['.repeat(CANONICAL_MAX_DEPTH) + '1' + ']'.repeat(CANONICAL_MAX_DEPTH),
  );
  // shared (non-cyclic) references are fine
  const shared = { x: 1 };
  t.equal(canonicalJson({ a: shared, b: shared }), '{"a":{"x":1},"b":{"x":1}}');
});

t.test('index-like keys still sort by code units', async (t) => {
  t.equal(
    canonicalJson({ b: 1, 10: 'x', 9: 'y', 1: 'z', a: [{ 2: 0, 10: 1 }] }),
    '{"1":"z","10":"x","9":"y","a":[{"10":1,"2":0}],"b":1}',
  );
  t.equal(canonicalJson({ '4294967295': 1, '01': 2, '-1': 3 }), '{"-1":3,"01":2,"4294967295":1}');
  t.equal(canonicalJson({ x: { 0: undefined, 1: 1 } }), '{"x":{"1":1}}');
  const err = t.throws(() => canonicalJson({ 1: { 2: NaN } })) as CanonicalJsonError;
  t.equal(err.path, '/1/2');
});

t.test('JSON.stringify semantics for undefined members and slots', async (t) => {
  t.equal(canonicalJson({ b: 1, a: undefined }), '{"b":1}');
  t.equal(canonicalJson([1, undefined]), '[1,null]');
  t.equal(
    canonicalJson(Object.assign(Object.create(null) as object, { b: 2, a: 1 })),
    '{"a":1,"b":2}',
  );
  t.equal(canonicalJson(JSON.parse('{"__proto__":1}')), '{"__proto__":1}');
});

t.test('fingerprint is the hex SHA-256 of the canonical UTF-8 bytes', async (t) => {
  const v = { b: 'é', a: [1, 2.5] };
  const expected = createHash('sha256')
    .update(Buffer.from('{"a":[1,2.5],"b":"é"}', 'utf8'))
    .digest('hex');
  t.equal(fingerprint(v), expected);
  t.match(fingerprint(null), /^[0-9a-f]{64}$/);
  t.equal(fingerprint({ a: 1, b: 2 }), fingerprint({ b: 2, a: 1 }));
  t.not(fingerprint({ a: 1 }), fingerprint({ a: '1' }));
  t.throws(() => fingerprint(undefined), CanonicalJsonError);
});

/** Rebuilds a value with every object's keys in a shuffled order. */
function reorder(v: unknown, seed: number): unknown {
  if (Array.isArray(v)) return v.map((x, i) => reorder(x, seed + i));
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v);
    entries.sort((a, b) => ((a[0].length * 31 + seed) % 7) - ((b[0].length * 17 + seed) % 5));
    if (seed % 2) entries.reverse();
    return Object.fromEntries(entries.map(([k, x]) => [k, reorder(x, seed * 3 + 1)]));
  }
  return v;
}

t.test('properties of canonical JSON', async (t) => {
  const json = fc.jsonValue({ maxDepth: 6 });
  fc.assert(
    fc.property(json, (v) => {
      const c = canonicalJson(v);
      // idempotent through a parse
      return canonicalJson(parseStrictJson(c)) === c && canonicalJson(JSON.parse(c)) === c;
    }),
    { numRuns: 500 },
  );
  fc.assert(
    fc.property(
      json,
      fc.nat(1000),
      (v, seed) => canonicalJson(reorder(v, seed)) === canonicalJson(v),
    ),
    { numRuns: 500 },
  );
  // agrees with the canonicalize package on JSON data, including index-like keys
  fc.assert(
    fc.property(json, (v) => canonicalJson(v) === canonicalize(v)),
    { numRuns: 500 },
  );
  const indexy = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      fc.jsonValue({ maxDepth: 1 }),
      fc.array(tie('value'), { maxLength: 3 }),
      fc.dictionary(fc.oneof(fc.nat(20).map(String), fc.string({ maxLength: 3 })), tie('value'), {
        maxKeys: 6,
      }),
    ),
  })).value;
  fc.assert(
    fc.property(indexy, (v) => canonicalJson(v) === canonicalize(v)),
    { numRuns: 500 },
  );
  // whitespace and member order of the text do not change the fingerprint
  fc.assert(
    fc.property(
      json,
      (v) => fingerprint(JSON.parse(JSON.stringify(reorder(v, 7), null, 2))) === fingerprint(v),
    ),
    { numRuns: 300 },
  );
  // never throws anything but CanonicalJsonError on arbitrary values
  fc.assert(
    fc.property(
      fc.anything({
        withBigInt: true,
        withMap: true,
        withSet: true,
        withDate: true,
        withNullPrototype: true,
        withTypedArray: true,
        withSparseArray: true,
      }),
      (v) => {
        try {
          canonicalJson(v);
          return true;
        } catch (err) {
          return err instanceof CanonicalJsonError;
        }
      },
    ),
    { numRuns: 500 },
  );
  t.pass('held');
});
