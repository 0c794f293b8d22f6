import t from 'tap';
import type { Test } from 'tap';
import {
  AccountStatusChangedSchema,
  CapabilitiesChangedSchema,
  DeliveryReportSchema,
  ImpairmentSchema,
  ImpairmentWebhookResultSchema,
  PushNotificationConfigSchema,
  ReportingWebhookSchema,
  WebhookActivityRecordSchema,
} from '../../../shared/envelope/index.js';
import type { z } from 'zod';

type Obj = Record<string, unknown>;

function check(t: Test, schema: z.ZodType, good: Obj, bad: [string, Obj][]): void {
  t.ok(schema.safeParse(good).success, 'valid example accepted');
  for (const [name, value] of bad) {
    const r = schema.safeParse(value);
    t.notOk(r.success, name);
  }
}
const without = (o: Obj, k: string): Obj => {
  const c = { ...o };
  delete c[k];
  return c;
};

t.test('delivery report', async (t) => {
  const row = {
    media_buy_id: 'mb_1',
    status: 'active',
    totals: { impressions: 1, spend: 2, clicks: 0 },
  };
  const good = {
    notification_type: 'scheduled',
    sequence_number: 1,
    reporting_period: { start: '2026-05-25T00:00:00Z', end: '2026-05-25T23:59:59Z' },
    currency: 'USD',
    next_expected_at: '2026-05-26T01:00:00Z',
    media_buy_deliveries: [row],
  };
  check(t, DeliveryReportSchema, good, [
    ['no notification_type', without(good, 'notification_type')],
    ['unknown notification_type', { ...good, notification_type: 'weekly' }],
    ['no reporting_period', without(good, 'reporting_period')],
    ['bad period', { ...good, reporting_period: { start: 'x', end: 'y' } }],
    ['lowercase currency', { ...good, currency: 'usd' }],
    ['empty deliveries', { ...good, media_buy_deliveries: [] }],
    ['sequence 0', { ...good, sequence_number: 0 }],
    ['fractional sequence', { ...good, sequence_number: 1.5 }],
    ['aggregated_totals', { ...good, aggregated_totals: {} }],
    ['notification_id', { ...good, notification_id: 'n1' }],
    ['row task status', { ...good, media_buy_deliveries: [{ ...row, status: 'working' }] }],
    ['row without id', { ...good, media_buy_deliveries: [without(row, 'media_buy_id')] }],
    ['negative spend', { ...good, media_buy_deliveries: [{ ...row, totals: { spend: -1 } }] }],
    ['final with next_expected_at', { ...good, notification_type: 'final' }],
  ]);
  t.ok(
    DeliveryReportSchema.safeParse({
      ...without(good, 'next_expected_at'),
      notification_type: 'final',
    }).success,
  );
  t.ok(DeliveryReportSchema.safeParse({ ...good, notification_type: 'window_update' }).success);
  t.ok(
    DeliveryReportSchema.safeParse({
      ...good,
      media_buy_deliveries: [
        { ...row, status: 'reporting_delayed', expected_availability: '2026-05-27T00:00:00Z' },
      ],
    }).success,
  );
});

t.test('impairment', async (t) => {
  const good = {
    impairment_id: 'imp_1',
    resource_type: 'creative',
    resource_id: 'cr_1',
    package_ids: ['pk_1'],
    transition: { from: 'active', to: 'suspended' },
    reason_code: 'policy_violation',
    observed_at: '2026-05-25T10:00:00Z',
    vendor_extra: true,
  };
  check(t, ImpairmentSchema, good, [
    ['no id', without(good, 'impairment_id')],
    ['bad resource_type', { ...good, resource_type: 'site' }],
    ['no packages', { ...good, package_ids: [] }],
    ['bad to', { ...good, transition: { to: 'paused' } }],
    ['bad from', { ...good, transition: { from: 'Active', to: 'rejected' } }],
    ['bad reason', { ...good, reason_code: 'because' }],
    ['long reason', { ...good, reason: 'x'.repeat(501) }],
    ['bad observed_at', { ...good, observed_at: 'now' }],
  ]);
  t.ok(ImpairmentWebhookResultSchema.safeParse({ ...good, health: 'impaired' }).success);
  t.notOk(ImpairmentWebhookResultSchema.safeParse({ ...good, health: 'bad' }).success);
});

t.test('push_notification_config and reporting_webhook', async (t) => {
  const auth = { schemes: ['HMAC-SHA256'], credentials: 'k'.repeat(32) };
  const push = {
    url: 'https://buyer.example/hooks/1',
    operation_id: 'op_1',
    token: 't'.repeat(16),
    authentication: auth,
  };
  check(t, PushNotificationConfigSchema, push, [
    ['no url', without(push, 'url')],
    ['not a url', { ...push, url: 'buyer hooks' }],
    ['bad operation_id', { ...push, operation_id: 'op 1' }],
    ['long operation_id', { ...push, operation_id: 'o'.repeat(256) }],
    ['short token', { ...push, token: 'short' }],
    ['long token', { ...push, token: 't'.repeat(4097) }],
    ['short credentials', { ...push, authentication: { ...auth, credentials: 'k'.repeat(31) } }],
    ['two schemes', { ...push, authentication: { ...auth, schemes: ['Bearer', 'HMAC-SHA256'] } }],
    ['no scheme', { ...push, authentication: { ...auth, schemes: [] } }],
    ['unknown scheme', { ...push, authentication: { ...auth, schemes: ['Basic'] } }],
    ['extra auth member', { ...push, authentication: { ...auth, extra: 1 } }],
  ]);
  t.ok(
    PushNotificationConfigSchema.safeParse({ url: 'https://b.example/h' }).success,
    'operation_id optional in the shape',
  );
  const rw = {
    url: 'https://buyer.example/reports',
    reporting_frequency: 'daily',
    requested_metrics: ['impressions', 'spend'],
  };
  check(t, ReportingWebhookSchema, rw, [
    ['no frequency', without(rw, 'reporting_frequency')],
    ['weekly', { ...rw, reporting_frequency: 'weekly' }],
    ['duplicate metrics', { ...rw, requested_metrics: ['spend', 'spend'] }],
    ['short token', { ...rw, token: 'x' }],
    ['bad auth', { ...rw, authentication: { schemes: ['Bearer'], credentials: 'short' } }],
  ]);
  t.ok(
    ReportingWebhookSchema.safeParse({
      ...rw,
      authentication: { schemes: ['Bearer'], credentials: 'b'.repeat(40) },
    }).success,
  );
});

t.test('webhook activity record', async (t) => {
  const good = {
    idempotency_key: 'whk_0123456789abcdef',
    fired_at: '2026-05-25T10:00:00Z',
    notification_type: 'scheduled',
    attempt: 1,
    status: 'success',
    url: 'https://buyer.example/hooks',
    completed_at: '2026-05-25T10:00:01Z',
    http_status_code: 200,
    response_time_ms: 120,
    error_message: null,
    sequence_number: 3,
    payload_size_bytes: 512,
  };
  check(t, WebhookActivityRecordSchema, good, [
    ['extra member', { ...good, body: '{}' }],
    ['attempt 0', { ...good, attempt: 0 }],
    ['bad status', { ...good, status: 'ok' }],
    ['omitted nullable', without(good, 'error_message')],
    ['query kept', { ...good, url: 'https://buyer.example/hooks?token=abc' }],
    ['fragment kept', { ...good, url: 'https://buyer.example/hooks#x' }],
    ['code out of range', { ...good, http_status_code: 99 }],
    [
      'long error',
      { ...good, status: 'failed', http_status_code: 500, error_message: 'e'.repeat(501) },
    ],
    ['success with 500', { ...good, http_status_code: 500 }],
    ['failed with 200', { ...good, status: 'failed' }],
    ['timeout with code', { ...good, status: 'timeout' }],
    ['pending completed', { ...good, status: 'pending', http_status_code: null }],
    ['negative time', { ...good, response_time_ms: -1 }],
  ]);
  t.ok(
    WebhookActivityRecordSchema.safeParse({
      ...good,
      status: 'timeout',
      http_status_code: null,
      response_time_ms: null,
      error_message: 'timeout',
    }).success,
  );
  t.ok(
    WebhookActivityRecordSchema.safeParse({
      ...good,
      status: 'pending',
      completed_at: null,
      http_status_code: null,
      response_time_ms: null,
    }).success,
  );
});

t.test('agent- and account-level payloads', async (t) => {
  const cap = {
    idempotency_key: 'whk_0123456789abcdef',
    notification_id: 'cap_v42',
    notification_type: 'capabilities.changed',
    fired_at: '2026-05-25T10:00:00Z',
    agent_url: 'https://seller.example/mcp',
    changed_at: '2026-05-25T09:59:00Z',
    reason: 'feature_added',
    capabilities_version: 'v42',
  };
  check(t, CapabilitiesChangedSchema, cap, [
    ['no version', without(cap, 'capabilities_version')],
    ['closed schema', { ...cap, capabilities: {} }],
    ['wrong type', { ...cap, notification_type: 'capabilities.updated' }],
    ['short key', { ...cap, idempotency_key: 'k' }],
    ['bad agent_url', { ...cap, agent_url: 'seller' }],
  ]);
  t.ok(
    CapabilitiesChangedSchema.safeParse({
      ...cap,
      capabilities_version: 42,
      changed_paths: ['media_buy'],
    }).success,
  );
  const acct = {
    idempotency_key: 'whk_0123456789abcdef',
    notification_id: 'acct_1.active',
    notification_type: 'account.status_changed',
    fired_at: '2026-05-25T10:00:00Z',
    account_id: 'acct_1',
    previous_status: 'pending_approval',
    status: 'active',
    observed_at: '2026-05-25T09:00:00Z',
    reason_code: 'approved',
  };
  check(t, AccountStatusChangedSchema, acct, [
    ['setup url', { ...acct, setup: { url: 'https://x' } }],
    ['no account', without(acct, 'account_id')],
  ]);
});
