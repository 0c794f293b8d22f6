import t from 'tap';
import fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import {
  DEFAULT_MAX_DEPTH,
  JsonParseError,
  parseStrictJson,
  sanitizeForLog,
} from '../../../shared/json/strict-parse.js';

function parseError(input: Uint8Array | string, opts?: { maxDepth?: number }): JsonParseError {
  try {
    parseStrictJson(input, opts);
  } catch (err) {
    if (err instanceof JsonParseError) return err;
    throw err;
  }
  throw new Error(`expected a JsonParseError for ${String(input).slice(0, 60)}`);
}

t.test('well-formed JSON parses to what JSON.parse gives', async (t) => {
  for (const text of [
    '{}',
    '[]',
    ' \t\r\n{ "a" : [ 1 , -2.5e+3 , 0.5E-2 , true , false , null , "x\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9" ] } ',
    '"\\ud83d\\ude00"',
    '"😀 é"',
    '0',
    '-0',
    '1E400'.replace('400', '2'),
    '{"a":{"a":{"a":1}}}',
    '[{"a":1},{"a":1}]',
  ]) {
    t.ok(isDeepStrictEqual(parseStrictJson(text), JSON.parse(text)), text);
    t.ok(isDeepStrictEqual(parseStrictJson(Buffer.from(text)), JSON.parse(text)), `bytes ${text}`);
  }
  // a Uint8Array view into a larger buffer
  const big = Buffer.from('xx{"k":"v"}yy');
  t.same(parseStrictJson(new Uint8Array(big.buffer, big.byteOffset + 2, 9)), { k: 'v' });
});

t.test('duplicate keys are rejected at any depth, all names reported', async (t) => {
  const cases: [string, string[]][] = [
    ['{"a":1,"a":2}', ['a']],
    ['{"a":1,"b":{"c":1,"c":2},"a":3}', ['c', 'a']],
    ['[1,[2,{"x":{"y":[{"z":1,"z":1}]}}]]', ['z']],
    ['{"a":1,"\\u0061":2}', ['a']],
    ['{"é":1,"\\u00e9":2}', ['é']],
    ['{"__proto__":1,"__proto__":2}', ['__proto__']],
    ['{"":1,"":2}', ['']],
    ['{"a":1,"a":2,"a":3}', ['a']],
  ];
  for (const [text, names] of cases) {
    const err = parseError(text);
    t.equal(err.code, 'duplicate_key', text);
    t.same(err.duplicateKeys, names, text);
    t.equal(parseError(Buffer.from(text)).code, 'duplicate_key');
  }
  // large objects switch to a Set: still caught
  const members = Array.from({ length: 100 }, (_, i) => `"k${i}":${i}`);
  t.same(parseError(`{${members.join(',')},"k42":0}`).duplicateKeys, ['k42']);
  // equal keys in sibling objects are fine
  t.same(parseStrictJson('[{"a":1},{"a":2}]'), [{ a: 1 }, { a: 2 }]);
  // position points at the first repeated key (bytes: after the two-byte é)
  t.equal(parseError(Buffer.from('{"é":1,"é":2}')).position, 8);
});

t.test('a syntax error wins over duplicates found before it', async (t) => {
  t.equal(parseError('{"a":1,"a":2,}').code, 'syntax');
});

t.test('RFC 8259 syntax errors are rejected', async (t) => {
  for (const text of [
    '',
    ' ',
    '[1,]',
    '{"a":1,}',
    '[,1]',
    '{,}',
    '01',
    '-01',
    '1.',
    '.5',
    '1e',
    '1e+',
    '+1',
    '-',
    'NaN',
    'Infinity',
    '1e400',
    '-1e400',
    '0x10',
    "'a'",
    '"a',
    '"\\x"',
    '"\\u12"',
    '"\\u12G4"',
    '"a\nb"',
    '"\t"',
    '{"a" 1}',
    '{"a":}',
    '{a:1}',
    '{1:1}',
    '[1 2]',
    '[1}',
    '{"a":1]',
    'tru',
    'nul',
    'truex',
    '1 2',
    '{} {}',
    '// c\n1',
    '/* c */ 1',
    '[1] // c',
    '\ufeff{}',
    '\u00a0{}',
    '[' + '1'.repeat(10) + ']]',
  ]) {
    const err = parseError(text);
    t.equal(err.code, 'syntax', JSON.stringify(text));
    t.same(err.duplicateKeys, []);
    t.ok(err.position >= 0 && err.position <= text.length, 'position in range');
  }
  t.equal(parseError('[1,]').position, 3);
  t.equal(parseError(Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d])).code, 'syntax', 'UTF-8 BOM');
});

t.test('the first defect in text order is reported (fast scan, then exact re-scan)', async (t) => {
  const cases: [string, string, number][] = [
    ['["a\u0001b", 1,]', 'syntax', 3], // raw control char before a trailing comma
    ['{"k\u0001":1,"k\u0001":2}', 'syntax', 3], // syntax beats duplicates
    ['{"a\\n\u0001":1}', 'syntax', 5], // control char in a key that also has an escape
    ['{"a":"x\u0002","a":1}', 'syntax', 7],
    ['["\\u0041\u0007"]', 'syntax', 8],
    ['["ok", "\\x"]', 'syntax', 8],
    ['["\\"", 01]', 'syntax', 8], // at the digit after the leading zero
    ['{"a":"\\ud800", "b":[1,]}', 'invalid_utf8', 6],
  ];
  for (const [text, kind, position] of cases) {
    const err = parseError(text);
    t.equal(err.code, kind, text);
    t.equal(err.position, position, `position in ${JSON.stringify(text)}`);
  }
  // escapes everywhere: quotes, backslashes and unicode in keys and values
  const tricky = '{"a\\"b":"c\\\\","\\\\":["\\"",{"\\u00e9":"\\ud83d\\ude00"}],"é":"\\/"}';
  t.same(parseStrictJson(tricky), JSON.parse(tricky));
  t.same(parseError('{"a\\"b":1,"a\\u0022b":2}').duplicateKeys, ['a"b']);
  t.same(parseError('{"\\\\":1,"\\u005c":2}').duplicateKeys, ['\\']);
  // a long string with no escapes, and one with an escape near its end
  const long = `["${'x'.repeat(100_000)}","${'y'.repeat(50_000)}\\n"]`;
  t.same(parseStrictJson(long), JSON.parse(long));
});

t.test('invalid UTF-8 and lone surrogates are rejected', async (t) => {
  const bad: [number[], number][] = [
    [[0x22, 0xff, 0x22], 1],
    [[0x22, 0xc3, 0x22], 1], // truncated sequence
    [[0x22, 0xc0, 0xaf, 0x22], 1], // overlong
    [[0x22, 0xe0, 0x80, 0xaf, 0x22], 1], // overlong 3-byte
    [[0x22, 0xed, 0xa0, 0x80, 0x22], 1], // encoded surrogate
    [[0x22, 0xf4, 0x90, 0x80, 0x80, 0x22], 1], // above U+10FFFF
    [[0x22, 0x61, 0xc3, 0xa9, 0x80, 0x22], 4], // stray continuation after é
    [[0x22, 0xf0, 0x9f, 0x98], 1], // cut 4-byte sequence at end
  ];
  for (const [bytes, position] of bad) {
    const err = parseError(Uint8Array.from(bytes));
    t.equal(err.code, 'invalid_utf8', bytes.join(' '));
    t.equal(err.position, position, `position of ${bytes.join(' ')}`);
  }
  for (const text of [
    '"\\ud800"',
    '"\\udc00"',
    '"\\ud800\\u0041"',
    '"\\ud800x"',
    '"\ud800"',
    '"\udc00\ud800"',
    '{"\\ud800":1}',
  ]) {
    t.equal(parseError(text).code, 'invalid_utf8', JSON.stringify(text));
  }
});

t.test('nesting is bounded without recursion', async (t) => {
  const nest = (n: number, open = '[', close = ']'): string => open.repeat(n) + close.repeat(n);
  t.same(parseStrictJson(nest(DEFAULT_MAX_DEPTH)), JSON.parse(nest(DEFAULT_MAX_DEPTH)));
  const err = parseError(nest(DEFAULT_MAX_DEPTH + 1));
  t.equal(err.code, 'too_deep');
  t.equal(err.position, DEFAULT_MAX_DEPTH);
  t.equal(parseError('['.repeat(100_000)).code, 'too_deep');
  t.equal(parseError('{"a":'.repeat(100_000)).code, 'too_deep');
  t.equal(parseError(nest(3), { maxDepth: 2 }).code, 'too_deep');
  t.same(parseStrictJson(nest(3), { maxDepth: 3 }), [[[]]]);
  t.equal(parseStrictJson('1', { maxDepth: 0 }), 1);
  t.equal(parseError('[]', { maxDepth: 0 }).code, 'too_deep');
  // with a raised bound, 100k levels are scanned without a stack overflow
  const deep = parseStrictJson(nest(100_000), { maxDepth: 200_000 });
  t.ok(Array.isArray(deep));
});

t.test('__proto__ stays data and never reaches a prototype', async (t) => {
  const v = parseStrictJson(
    '{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}',
  ) as Record<string, unknown>;
  t.equal(Object.getPrototypeOf(v), Object.prototype);
  t.same(Object.keys(v), ['__proto__', 'constructor']);
  t.equal(({} as Record<string, unknown>).polluted, undefined);
  t.same(Object.getOwnPropertyDescriptor(v, '__proto__')?.value, { polluted: true });
});

t.test('property: parseStrictJson(JSON.stringify(v)) equals JSON.parse of it', async (t) => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 8 }), (v) => {
      const text = JSON.stringify(v);
      const expected: unknown = JSON.parse(text);
      return (
        isDeepStrictEqual(parseStrictJson(text), expected) &&
        isDeepStrictEqual(parseStrictJson(Buffer.from(text)), expected) &&
        isDeepStrictEqual(parseStrictJson(JSON.stringify(v, null, 2)), expected)
      );
    }),
    { numRuns: 500 },
  );
  t.pass('held');
});

t.test('property: random and mutated bytes only ever throw JsonParseError', async (t) => {
  const check = (input: Uint8Array): boolean => {
    let strict: unknown;
    try {
      strict = parseStrictJson(input);
    } catch (err) {
      if (!(err instanceof JsonParseError)) throw err;
      // whatever JSON.parse rejects, we reject too; the converse is not expected
      return true;
    }
    // whatever we accept, JSON.parse accepts with the same value
    return isDeepStrictEqual(strict, JSON.parse(Buffer.from(input).toString('utf8')));
  };
  fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), check), { numRuns: 1000 });
  const mutated = fc
    .tuple(
      fc.jsonValue({ maxDepth: 5 }),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), {
        minLength: 1,
        maxLength: 4,
      }),
    )
    .map(([v, edits]) => {
      const bytes = Buffer.from(JSON.stringify(v) ?? 'null');
      for (const [at, byte] of edits) bytes[at % bytes.length] = byte;
      return new Uint8Array(bytes);
    });
  fc.assert(fc.property(mutated, check), { numRuns: 2000 });
  // mutations drawn from JSON's own alphabet hit the grammar harder than random bytes
  const alphabet = fc.constantFrom(...'{}[]",:0123456789-+.eE \\utrfn\u00e9'.split(''));
  const textual = fc
    .tuple(
      fc.jsonValue({ maxDepth: 4 }),
      fc.array(fc.tuple(fc.nat(), alphabet), { minLength: 1, maxLength: 3 }),
    )
    .map(([v, edits]) => {
      const chars = (JSON.stringify(v) ?? 'null').split('');
      for (const [at, ch] of edits) chars.splice(at % (chars.length + 1), 0, ch);
      return new Uint8Array(Buffer.from(chars.join('')));
    });
  fc.assert(fc.property(textual, check), { numRuns: 2000 });
  t.pass('held');
});

/** Writes `key` as a JSON string with some characters escaped as \uXXXX. */
function encodeKeyVariant(key: string, mask: number): string {
  let out = '"';
  let i = 0;
  for (const ch of key) {
    const cu = ch.charCodeAt(0);
    if ((mask >> (i++ % 30)) & 1 && ch.length === 1)
      out += '\\u' + cu.toString(16).padStart(4, '0');
    else out += JSON.stringify(ch).slice(1, -1);
  }
  return out + '"';
}

t.test('property: an injected duplicate key is always detected, at any depth', async (t) => {
  const wrapper = fc.array(fc.oneof(fc.constant('array' as const), fc.string({ maxLength: 6 })), {
    maxLength: 12,
  });
  fc.assert(
    fc.property(
      fc.string({ maxLength: 12 }),
      fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 }),
      fc.jsonValue({ maxDepth: 2 }),
      fc.jsonValue({ maxDepth: 2 }),
      fc.nat(),
      wrapper,
      (key, others, a, b, mask, wrappers) => {
        const rest = Object.entries(others)
          .filter(([k]) => k !== key)
          .map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`);
        const members = [
          `${JSON.stringify(key)}:${JSON.stringify(a)}`,
          ...rest,
          `${encodeKeyVariant(key, mask)}:${JSON.stringify(b)}`,
        ];
        let text = `{${members.join(',')}}`;
        for (const w of wrappers)
          text = w === 'array' ? `[1,${text}]` : `{${JSON.stringify(w)}:${text}}`;
        const err = parseError(text, { maxDepth: 100 });
        return err.code === 'duplicate_key' && err.duplicateKeys.includes(key);
      },
    ),
    { numRuns: 1000 },
  );
  t.pass('held');
});

const UNPRINTABLE_RANGES: [number, number][] = [
  [0x00, 0x1f],
  [0x7f, 0x9f],
  [0x200b, 0x200f],
  [0x202a, 0x202e],
  [0x2066, 0x2069],
  [0x2028, 0x2029],
  [0xfeff, 0xfeff],
];
const UNPRINTABLE = {
  test: (s: string): boolean =>
    [...s].some((ch) => {
      const cp = ch.codePointAt(0) as number;
      return UNPRINTABLE_RANGES.some(([lo, hi]) => cp >= lo && cp <= hi);
    }),
};

t.test('sanitizeForLog follows step 14b', async (t) => {
  t.same(sanitizeForLog(['budget']), ['budget']);
  t.same(sanitizeForLog(['abc\u0000def']), ['abc<sanitized:3>']);
  t.same(sanitizeForLog(['\u202eevil']), ['<sanitized:0>']);
  t.same(sanitizeForLog(['é\u2028x']), ['é<sanitized:2>']);
  for (const cp of [
    0x00, 0x1f, 0x7f, 0x80, 0x9f, 0x200b, 0x200c, 0x200d, 0x200e, 0x200f, 0x202a, 0x202e, 0x2066,
    0x2069, 0x2028, 0x2029, 0xfeff,
  ]) {
    t.same(
      sanitizeForLog([`ok${String.fromCodePoint(cp)}tail`]),
      ['ok<sanitized:2>'],
      cp.toString(16),
    );
  }
  t.same(sanitizeForLog(['a\u00a0b']), ['a\u00a0b'], 'U+00A0 is printable');
  t.same(sanitizeForLog(['x'.repeat(40)]), ['x'.repeat(32)]);
  // 11 three-byte characters = 33 bytes: the 11th does not fit
  t.same(sanitizeForLog(['€'.repeat(11)]), ['€'.repeat(10)]);
  t.same(sanitizeForLog(['😀'.repeat(9)]), ['😀'.repeat(8)]);
  t.same(sanitizeForLog(['a' + '😀'.repeat(8)]), ['a' + '😀'.repeat(7)]);
  // cut first (N = 40), then truncate the kept prefix
  t.same(sanitizeForLog(['y'.repeat(40) + '\n']), ['y'.repeat(32) + '<sanitized:40>']);
  t.same(sanitizeForLog(['a', 'b', 'c', 'd']), ['a', 'b', 'c', 'd']);
  t.same(sanitizeForLog(['a', 'b', 'c', 'd', 'e', 'f']), ['a', 'b', 'c', 'd', '<...2 more>']);
  t.same(sanitizeForLog([]), []);
  fc.assert(
    fc.property(
      fc.array(fc.string({ unit: 'binary', maxLength: 60 }), { maxLength: 10 }),
      (names) => {
        const out = sanitizeForLog(names);
        return (
          out.length === Math.min(names.length, 5) &&
          out.every((s) => Buffer.byteLength(s.replace(/<sanitized:\d+>$/, '')) <= 32) &&
          out.every((s) => !UNPRINTABLE.test(s)) &&
          out.every((s) => Buffer.from(s, 'utf8').toString('utf8') === s)
        );
      },
    ),
    { numRuns: 500 },
  );
});
