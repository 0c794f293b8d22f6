import t from 'tap';
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { WebhookVerificationError } from '../../../shared/errors/webhook-codes.js';
import { TaskError } from '../../../shared/errors/task-errors.js';
import {
  assertLegacyCredential,
  bearerAuthorization,
  legacyCredentialProblem,
  verifyBearer,
} from '../../../shared/legacy/bearer.js';

const token = randomBytes(32).toString('base64url');
const previous = randomBytes(24).toString('hex');

function code(authorization: string | string[] | undefined, tokens = [token]): string {
  try {
    verifyBearer({ tokens, authorization });
  } catch (err) {
    if (err instanceof WebhookVerificationError) return err.code;
    throw err;
  }
  return 'ok';
}

t.test('verifyBearer', async (t) => {
  t.equal(bearerAuthorization(token), `Bearer ${token}`);
  t.same(verifyBearer({ tokens: [token], authorization: bearerAuthorization(token) }), {
    tokenIndex: 0,
  });
  t.same(verifyBearer({ tokens: [token, previous], authorization: `Bearer ${previous}` }), {
    tokenIndex: 1,
  });
  t.same(
    verifyBearer({ tokens: [token], authorization: [`bearer ${token}`] }),
    { tokenIndex: 0 },
    'scheme is case-insensitive',
  );
  t.equal(code(`Bearer ${token}x`), 'webhook_signature_invalid');
  t.equal(code(`Bearer ${token.slice(0, -1)}`), 'webhook_signature_invalid');
  t.equal(code(`Bearer ${previous}`), 'webhook_signature_invalid', 'previous token not configured');
  for (const bad of [
    undefined,
    '',
    'Bearer',
    'Bearer ',
    `Basic ${token}`,
    token,
    `Bearer ${token} extra`,
    `Bearer\t${token}`,
    [],
    [`Bearer ${token}`, `Bearer ${token}`],
  ]) {
    t.equal(code(bad), 'webhook_signature_header_malformed', JSON.stringify(bad));
  }
  t.throws(() => verifyBearer({ tokens: [], authorization: `Bearer ${token}` }), TypeError);
  fc.assert(
    fc.property(fc.option(fc.string()), (h) => {
      const c = code(h ?? undefined);
      return c === 'webhook_signature_header_malformed' || c === 'webhook_signature_invalid';
    }),
    { numRuns: 500 },
  );
});

t.test('legacy credentials: 32+ characters and not weak', async (t) => {
  const { secret_rejection_vectors: rejected } = JSON.parse(
    readFileSync(new URL('./fixtures/hmac-vectors.json', import.meta.url), 'utf8'),
  ) as { secret_rejection_vectors: string[] };
  for (const s of rejected) {
    t.not(legacyCredentialProblem(s), null, JSON.stringify(s));
    const err = t.throws(() =>
      assertLegacyCredential(s, { field: 'push_notification_config.authentication.credentials' }),
    ) as TaskError;
    t.type(err, TaskError);
    t.equal(err.code, 'VALIDATION_ERROR');
    t.equal(err.status, 400);
    t.equal(err.field, 'push_notification_config.authentication.credentials');
  }
  for (const weak of [
    'ab'.repeat(16),
    'abcd'.repeat(8),
    '12345678'.repeat(4),
    '\u0000'.repeat(32),
    'ÿ'.repeat(32),
    ' '.repeat(40),
  ]) {
    t.not(legacyCredentialProblem(weak), null, JSON.stringify(weak));
  }
  t.not(legacyCredentialProblem('é'.repeat(31)), null, '31 characters even if 62 bytes');
  t.not(legacyCredentialProblem(42), null);
  t.equal(legacyCredentialProblem(token), null);
  t.equal(
    legacyCredentialProblem('1234567890abcdef1234567890abcdef'),
    null,
    '32 characters, not a short repeat',
  );
  t.equal(legacyCredentialProblem('q'.repeat(31) + 'r'), null);
  // Bearer tokens must fit a header
  t.not(legacyCredentialProblem(`${token} with spaces`, { scheme: 'Bearer' }), null);
  t.equal(legacyCredentialProblem(`${token} with spaces`, { scheme: 'HMAC-SHA256' }), null);
  t.doesNotThrow(() => assertLegacyCredential(token, { scheme: 'Bearer' }));
  t.equal(
    (t.throws(() => assertLegacyCredential('short')) as TaskError).field,
    'authentication.credentials',
  );
});
