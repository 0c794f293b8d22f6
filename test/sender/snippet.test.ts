/** The response snippet an attempt keeps: bounded, inert text, never a credential. */
import t from 'tap';
import { responseSnippet, SNIPPET_BYTES, SNIPPET_CHARS } from '../../sender/delivery/snippet.js';

const snip = (s: string | Buffer, secrets?: string[]) =>
  responseSnippet(typeof s === 'string' ? Buffer.from(s) : s, secrets);

t.test('empty, absent and blank answers have no snippet', async (t) => {
  t.equal(responseSnippet(undefined), null);
  t.equal(responseSnippet(null), null);
  t.equal(snip(''), null);
  t.equal(snip(' \r\n\t\u0000 '), null);
});

t.test('plain answers are kept as they are', async (t) => {
  t.equal(
    snip('{"error":"bad request","code":"INVALID"}'),
    '{"error":"bad request","code":"INVALID"}',
  );
  t.equal(snip('<h1>502 Bad Gateway</h1>'), '<h1>502 Bad Gateway</h1>', 'markup kept as text');
});

t.test('bounded: characters and bytes, no half character', async (t) => {
  const long = snip('word '.repeat(3000));
  t.equal(long!.length, SNIPPET_CHARS + 1);
  t.ok(long!.endsWith('…'));
  const wide = snip(Buffer.from('€'.repeat(SNIPPET_BYTES))); // 3 bytes each
  t.notMatch(wide!, /\uFFFD/, 'a character cut at the byte bound is dropped');
  t.ok(wide!.endsWith('…'));
});

t.test('malformed bytes and control characters become inert', async (t) => {
  const bad = snip(Buffer.from([0x66, 0xff, 0xfe, 0x6f, 0x1b, 0x5b, 0x33, 0x31, 0x6d, 0x07]));
  // eslint-disable-next-line no-control-regex
  t.notMatch(bad!, /[\u0000-\u001f\u007f]/, 'no escape sequences or bells');
  t.match(bad!, /^f\uFFFD\uFFFDo/, 'invalid UTF-8 shown as replacement characters');
  t.notMatch(snip('a\u2028b\u0085c')!, /[\u2028\u0085]/);
  t.equal(snip('line one\nline two'), 'line one\nline two', 'newlines kept');
});

t.test('credentials are masked', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['{"token":"tok_live_12345"}', /tok_live/],
    ['{"client_secret": "shh-its-secret"}', /shh-its/],
    ['{"password":"hunter2"}', /hunter2/],
    ['api_key=abc123xyz&x=1', /abc123xyz/],
    ['Authorization: Bearer abcdef.ghijkl.mnop', /abcdef/],
    ['X-Api-Key: k-987654', /k-987654/],
    ['-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----', /MIIEvQ/],
    ['sig ' + 'A'.repeat(64), /AAAAAAAAAA/],
    ['Signature: sig1=:MEUCIQDabc:', /MEUCIQ/],
  ];
  for (const [input, leak] of cases) {
    const out = snip(input)!;
    t.notMatch(out, leak, input);
    t.match(out, /\[redacted\]/, `${input}: marked`);
  }
  t.equal(snip('you sent s3cr3t-value back', ['s3cr3t-value']), 'you sent [redacted] back');
  t.equal(snip('abc', ['']), 'abc', 'an empty secret masks nothing');
});
