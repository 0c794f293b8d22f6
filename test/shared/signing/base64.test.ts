import t from 'tap';
import { serializeInnerList, type InnerList } from 'structured-headers';
import fc from 'fast-check';
import {
  BinaryEncodingError,
  decodeBinary,
  decodeRfc8941Binary,
  decodeWebhookBinary,
  encodeBinary,
} from '../../../shared/signing/base64.js';
import {
  WEBHOOK_ERROR_CODES,
  WebhookVerificationError,
  webhookCodeFromWwwAuthenticate,
} from '../../../shared/errors/webhook-codes.js';

t.test(
  'webhook-v1 decodes base64url, tolerates pure standard base64, rejects mixtures',
  async (t) => {
    const bytes = Buffer.from([0xfb, 0xff, 0xfe, 0x00, 0x01]);
    t.same(decodeWebhookBinary('-__-AAE'), bytes);
    t.same(decodeWebhookBinary('+//+AAE='), bytes, 'padded standard');
    t.same(decodeWebhookBinary('+//+AAE'), bytes, 'unpadded standard');
    for (const bad of ['A+B-', 'ab_/', 'abc=_', 'a', 'ab!c', 'abc==']) {
      t.throws(() => decodeWebhookBinary(bad), BinaryEncodingError, bad);
    }
  },
);

t.test('rfc8941 accepts only padded standard base64', async (t) => {
  t.same(decodeRfc8941Binary('AAE='), Buffer.from([0, 1]));
  t.throws(() => decodeRfc8941Binary('AAE'), BinaryEncodingError);
  t.throws(() => decodeRfc8941Binary('-_8='), BinaryEncodingError);
});

t.test('each profile decodes what it encodes', async (t) => {
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 96 }),
      fc.constantFrom('webhook-v1', 'rfc8941' as const),
      (b, p) => {
        const enc = encodeBinary(b, p);
        if (p === 'webhook-v1' && /[+/=]/.test(enc)) return false;
        return Buffer.compare(decodeBinary(enc, p), Buffer.from(b)) === 0;
      },
    ),
  );
  t.pass();
});

t.test('verification errors carry the exact WWW-Authenticate value', async (t) => {
  t.equal(WEBHOOK_ERROR_CODES.length, 17);
  const e = new WebhookVerificationError('webhook_signature_invalid', 10);
  t.equal(e.status, 401);
  t.equal(e.wwwAuthenticate, 'Signature error="webhook_signature_invalid"');
  t.equal(webhookCodeFromWwwAuthenticate(e.wwwAuthenticate), 'webhook_signature_invalid');
  t.equal(webhookCodeFromWwwAuthenticate('Bearer realm="x"'), null);
  t.equal(webhookCodeFromWwwAuthenticate('Signature error="not_ours"'), null);
  t.equal(webhookCodeFromWwwAuthenticate(undefined), null);
});

t.test('the fast header paths agree with structured-headers', async (t) => {
  const { parseSignatureDictionary, parseSignatureDictionarySlow } =
    await import('../../../shared/signing/structured.js');
  const sfString = fc.stringMatching(/^[\x20\x21\x23-\x5b\x5d-\x7e]{0,12}$/);
  const key = fc.stringMatching(/^[a-z][a-z0-9_-]{0,6}$/);
  const input = fc
    .tuple(
      key,
      fc.array(sfString, { maxLength: 6 }),
      fc.array(fc.tuple(key, fc.oneof(fc.integer({ min: -1e9, max: 1e9 }), sfString)), {
        maxLength: 7,
      }),
    )
    .map(([k, items, params]) => {
      const list = items.map((i) => JSON.stringify(i)).join(' ');
      const ps = params
        .map(([pk, v]) => `;${pk}=${typeof v === 'number' ? v : JSON.stringify(v)}`)
        .join('');
      return `${k}=(${list})${ps}`;
    });
  fc.assert(
    fc.property(input, (s) => {
      const fast = parseSignatureDictionary(s, 'webhook-v1');
      const slow = parseSignatureDictionarySlow(s, 'webhook-v1');
      t.same(fast.dictionary, slow.dictionary);
      t.same(
        fast.members.map((m) => m.paramKeys),
        slow.members.map((m) => m.paramKeys),
      );
      const text = fast.members[0]!.canonicalText;
      if (text !== undefined)
        t.equal(text, serializeInnerList(slow.dictionary.get(fast.members[0]!.key) as InnerList));
      return true;
    }),
    { numRuns: 300 },
  );
  const bytes = fc
    .uint8Array({ maxLength: 70 })
    .map((b) => `sig1=:${Buffer.from(b).toString('base64url')}:`);
  fc.assert(
    fc.property(bytes, (s) => {
      t.same(
        parseSignatureDictionary(s, 'webhook-v1'),
        parseSignatureDictionarySlow(s, 'webhook-v1'),
      );
      return true;
    }),
    { numRuns: 100 },
  );
});
