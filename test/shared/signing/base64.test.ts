import t from 'tap';
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
