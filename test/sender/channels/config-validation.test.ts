import t from 'tap';
import {
  deliveryAuthFor,
  validatePushNotificationConfig,
  validateReportingWebhook,
} from '../../../sender/channels/config-validation.js';
import { TaskError } from '../../../sender/channels/errors.js';
import { validateImpairment } from '../../../sender/channels/impairment-kinds.js';
import { impairment } from './helpers.js';

const CRED = 'k'.repeat(20) + 'abcdefghijklmnop';

function refusal(fn: () => unknown): TaskError {
  try {
    fn();
  } catch (err) {
    if (err instanceof TaskError) return err;
    throw err;
  }
  throw new Error('accepted');
}

t.test('push_notification_config: each malformed member has its own error', async (t) => {
  const cases: Array<[string, unknown, string, string]> = [
    ['not an object', 'https://x', 'INVALID_REQUEST', 'push_notification_config'],
    ['missing url', { operation_id: 'op1' }, 'INVALID_REQUEST', 'push_notification_config.url'],
    [
      'reserved address',
      { url: 'https://10.1.2.3/h', operation_id: 'op1' },
      'INVALID_REQUEST',
      'push_notification_config.url',
    ],
    [
      'loopback not allow-listed',
      { url: 'https://127.0.0.1:8443/h', operation_id: 'op1' },
      'INVALID_REQUEST',
      'push_notification_config.url',
    ],
    [
      'empty url',
      { url: '', operation_id: 'op1' },
      'INVALID_REQUEST',
      'push_notification_config.url',
    ],
    [
      'relative url',
      { url: '/hook', operation_id: 'op1' },
      'INVALID_REQUEST',
      'push_notification_config.url',
    ],
    [
      'ftp url',
      { url: 'ftp://b.example/h', operation_id: 'op1' },
      'INVALID_REQUEST',
      'push_notification_config.url',
    ],
    [
      'http url',
      { url: 'http://b.example/h', operation_id: 'op1' },
      'INVALID_REQUEST',
      'push_notification_config.url',
    ],
    [
      'userinfo',
      { url: 'https://u:p@b.example/h', operation_id: 'op1' },
      'INVALID_REQUEST',
      'push_notification_config.url',
    ],
    [
      'missing operation_id',
      { url: 'https://b.example/h' },
      'INVALID_REQUEST',
      'push_notification_config.operation_id',
    ],
    [
      'null operation_id',
      { url: 'https://b.example/h', operation_id: null },
      'INVALID_REQUEST',
      'push_notification_config.operation_id',
    ],
    [
      'bad operation_id',
      { url: 'https://b.example/h', operation_id: 'a b' },
      'INVALID_REQUEST',
      'push_notification_config.operation_id',
    ],
    [
      'short token',
      { url: 'https://b.example/h', operation_id: 'op1', token: 'short' },
      'INVALID_REQUEST',
      'push_notification_config.token',
    ],
    [
      'short credentials',
      {
        url: 'https://b.example/h',
        operation_id: 'op1',
        authentication: { schemes: ['Bearer'], credentials: 'x'.repeat(31) },
      },
      'INVALID_REQUEST',
      'push_notification_config.authentication.credentials',
    ],
    [
      'weak credentials',
      {
        url: 'https://b.example/h',
        operation_id: 'op1',
        authentication: { schemes: ['Bearer'], credentials: '0'.repeat(40) },
      },
      'INVALID_REQUEST',
      'push_notification_config.authentication.credentials',
    ],
    [
      'two schemes',
      {
        url: 'https://b.example/h',
        operation_id: 'op1',
        authentication: { schemes: ['Bearer', 'HMAC-SHA256'], credentials: CRED },
      },
      'INVALID_REQUEST',
      'push_notification_config.authentication.schemes',
    ],
    [
      'unknown scheme',
      {
        url: 'https://b.example/h',
        operation_id: 'op1',
        authentication: { schemes: ['Basic'], credentials: CRED },
      },
      'INVALID_REQUEST',
      'push_notification_config.authentication.schemes',
    ],
  ];
  const messages = new Map<string, string>();
  for (const [name, input, code, field] of cases) {
    const err = refusal(() => validatePushNotificationConfig(input));
    t.equal(err.code, code, `${name}: code`);
    t.equal(err.field, field, `${name}: field`);
    t.equal(err.status, 400, `${name}: status`);
    t.same(err.toErrorBody(), { error: { code, message: err.message, field } }, `${name}: body`);
    messages.set(err.message, name);
  }
  t.match(
    refusal(() => validatePushNotificationConfig({ url: 'https://b.example/h' })).message,
    /operation_id is required/,
  );
  t.ok(messages.size >= 10, 'the messages say what is wrong, case by case');
});

t.test('reporting_webhook: each malformed member has its own error', async (t) => {
  const ok = { url: 'https://b.example/r', reporting_frequency: 'daily' };
  const cases: Array<[string, unknown, string]> = [
    ['missing url', { reporting_frequency: 'daily' }, 'reporting_webhook.url'],
    ['bad url', { ...ok, url: 'not a url' }, 'reporting_webhook.url'],
    ['non-string url', { ...ok, url: 42 }, 'reporting_webhook.url'],
    ['missing frequency', { url: ok.url }, 'reporting_webhook.reporting_frequency'],
    [
      'bad frequency',
      { ...ok, reporting_frequency: 'weekly' },
      'reporting_webhook.reporting_frequency',
    ],
    [
      'frequency case',
      { ...ok, reporting_frequency: 'Daily' },
      'reporting_webhook.reporting_frequency',
    ],
    [
      'short credentials',
      { ...ok, authentication: { schemes: ['HMAC-SHA256'], credentials: 'abc' } },
      'reporting_webhook.authentication.credentials',
    ],
    [
      'extra auth member',
      { ...ok, authentication: { schemes: ['HMAC-SHA256'], credentials: CRED, x: 1 } },
      'reporting_webhook.authentication.x',
    ],
    [
      'duplicate metrics',
      { ...ok, requested_metrics: ['clicks', 'clicks'] },
      'reporting_webhook.requested_metrics',
    ],
  ];
  for (const [name, input, field] of cases) {
    const err = refusal(() => validateReportingWebhook(input));
    t.equal(err.code, 'INVALID_REQUEST', `${name}: code`);
    t.equal(err.field, field, `${name}: field`);
  }
});

t.test('valid configs keep extra members and select the delivery auth', async (t) => {
  const push = validatePushNotificationConfig({
    url: 'https://b.example/h',
    operation_id: 'op:1',
    token: 't'.repeat(16),
    vendor_x: 1,
  });
  t.equal(push.vendor_x, 1);
  t.same(deliveryAuthFor(push), { mode: 'rfc9421' });
  const hmac = validateReportingWebhook({
    url: 'https://b.example/r',
    reporting_frequency: 'monthly',
    authentication: { schemes: ['HMAC-SHA256'], credentials: CRED },
  });
  t.same(deliveryAuthFor(hmac), { mode: 'hmac', secret: CRED });
  const bearer = validatePushNotificationConfig({
    url: 'https://b.example/h',
    operation_id: 'op1',
    authentication: { schemes: ['Bearer'], credentials: CRED },
  });
  t.same(deliveryAuthFor(bearer), { mode: 'bearer', token: CRED });
  t.equal(
    validatePushNotificationConfig(
      { url: 'http://127.0.0.1:9/h', operation_id: 'op1' },
      { allowHosts: ['127.0.0.1'] },
    ).url,
    'http://127.0.0.1:9/h',
    'plain http only when allowed',
  );
});

t.test('impairments are checked against core/impairment.json', async (t) => {
  t.equal(validateImpairment(impairment('imp_1')).impairment_id, 'imp_1');
  const cases: Array<[string, unknown, string]> = [
    ['bad reason', impairment('i', 'made_up'), 'impairment.reason_code'],
    ['no packages', { ...impairment('i'), package_ids: [] }, 'impairment.package_ids'],
    ['bad id', impairment('has space'), 'impairment.impairment_id'],
    ['bad to', { ...impairment('i'), transition: { to: 'gone' } }, 'impairment.transition.to'],
    ['bad observed_at', { ...impairment('i'), observed_at: 'yesterday' }, 'impairment.observed_at'],
    ['long reason', { ...impairment('i'), reason: 'x'.repeat(501) }, 'impairment.reason'],
  ];
  for (const [name, input, field] of cases) {
    const err = refusal(() => validateImpairment(input));
    t.equal(err.code, 'VALIDATION_ERROR', `${name}: code`);
    t.equal(err.field, field, `${name}: field`);
  }
});
