/**
 * Test plumbing for the channels: an EventSink that records what is enqueued, in order,
 * inside the caller's transaction (a rolled-back call leaves nothing, as with the real
 * outbox), and an in-test DeliveryDataSource.
 */
import type { SenderHarness } from '../harness.js';
import { brandProfile } from '../../../shared/brand.js';
import type { Pool, PoolClient } from '../../../shared/infra/pg.js';
import type { EventSink, OutboundEvent } from '../../../sender/outbox/types.js';
import {
  MediaBuyChannels,
  type MediaBuyChannelsOptions,
} from '../../../sender/channels/media-buy-channels.js';
import type {
  DeliveryData,
  DeliveryDataSource,
  LateDelivery,
  ReportingPeriod,
} from '../../../sender/channels/types.js';
import {
  DeliveryReportSchema,
  ImpairmentWebhookResultSchema,
  McpWebhookPayloadSchema,
  parseWebhookPayload,
} from '../../../shared/envelope/index.js';
import { testDatabase } from '../../helpers/db.js';

export class RecordingSink implements EventSink {
  constructor(
    private readonly pool: Pool,
    private readonly schema: string,
  ) {}

  async init(): Promise<void> {
    await this.pool.query(`CREATE SCHEMA IF NOT EXISTS ${this.schema}`);
    await this.pool.query(
      `CREATE TABLE IF NOT EXISTS ${this.schema}.test_sink (seq bigserial PRIMARY KEY, event jsonb NOT NULL)`,
    );
  }

  async enqueue(events: OutboundEvent[], client?: PoolClient): Promise<string[]> {
    const db = client ?? this.pool;
    const ids: string[] = [];
    for (const event of events) {
      const { rows } = await db.query<{ seq: string }>(
        `INSERT INTO ${this.schema}.test_sink (event) VALUES ($1::jsonb) RETURNING seq`,
        [JSON.stringify(event)],
      );
      ids.push(rows[0]!.seq);
    }
    return ids;
  }

  /** Everything committed so far, in enqueue order. */
  async events(): Promise<OutboundEvent[]> {
    const { rows } = await this.pool.query<{ event: OutboundEvent }>(
      `SELECT event FROM ${this.schema}.test_sink ORDER BY seq`,
    );
    return rows.map((r) => r.event);
  }
}

/** Deterministic numbers per (buy, period start); periods marked late answer `late`. */
export class TestDataSource implements DeliveryDataSource {
  readonly calls: Array<{ mediaBuyId: string; period: ReportingPeriod }> = [];
  readonly late = new Set<string>();
  status = 'active';
  currency = 'EUR';
  spendOffset = 0;

  async getDelivery(
    mediaBuyId: string,
    period: ReportingPeriod,
  ): Promise<DeliveryData | LateDelivery> {
    this.calls.push({ mediaBuyId, period });
    if (this.late.has(period.start)) {
      return { late: true, expectedAvailability: '2030-01-01T00:00:00Z' };
    }
    const spend = 10 + this.spendOffset;
    return {
      totals: { spend, impressions: 1000, clicks: 5 },
      by_package: [{ package_id: 'pkg_1', spend, impressions: 1000 }],
      status: this.status,
      currency: this.currency,
    };
  }
}

export interface Harness {
  channels: MediaBuyChannels;
  sink: RecordingSink;
  data: TestDataSource;
  pool: Pool;
  schema: string;
  clock: { now: number };
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** A migrated MediaBuyChannels on a throwaway schema with a settable clock. */
export async function harness(
  t: Teardown,
  options: Partial<MediaBuyChannelsOptions> & { start?: number } = {},
): Promise<Harness> {
  const { pool, schema } = testDatabase(t, 'ch');
  const sink = new RecordingSink(pool, schema);
  await sink.init();
  const data = new TestDataSource();
  const clock = { now: options.start ?? Date.parse('2026-03-10T10:20:00Z') };
  const channels = new MediaBuyChannels({
    pool,
    schema,
    sink,
    profile: brandProfile('svc'),
    protocolVersion: '3.2',
    dataSource: data,
    clock: () => clock.now,
    ...options,
  });
  await channels.migrate();
  t.teardown(() => channels.stop());
  return { channels, sink, data, pool, schema, clock };
}

export const PUSH = {
  url: 'https://buyer.example/hooks/push',
  operation_id: 'op_create_1',
};

export const REPORTING = {
  url: 'https://buyer.example/hooks/reports',
  reporting_frequency: 'hourly',
};

export function impairment(id: string, reason = 'consent_expired', extra: object = {}) {
  return {
    impairment_id: id,
    resource_type: 'audience',
    resource_id: `aud_${id}`,
    package_ids: ['pkg_1'],
    transition: { from: 'active', to: 'suspended' },
    reason_code: reason,
    observed_at: '2026-03-10T10:20:00Z',
    ...extra,
  };
}

export type Result = Record<string, unknown> & {
  notification_type: string;
  sequence_number: number;
  reporting_period: ReportingPeriod;
  next_expected_at?: string;
  media_buy_deliveries: Array<Record<string, unknown>>;
};

export function resultOf(event: OutboundEvent): Result {
  return event.payload.result as Result;
}

/**
 * Checks every event against the shared schemas (engineer A's): the MCP envelope, the
 * delivery report or impairment result, and that our receiver's parser reads it back.
 * Returns the list of failures (empty when all conform).
 */
export function shapeFailures(events: OutboundEvent[]): string[] {
  const failures: string[] = [];
  for (const [i, e] of events.entries()) {
    const envelope = McpWebhookPayloadSchema.safeParse(e.payload);
    if (!envelope.success) failures.push(`${i}: envelope ${envelope.error.message}`);
    const schema =
      e.notificationType === 'impairment' ? ImpairmentWebhookResultSchema : DeliveryReportSchema;
    const result = schema.safeParse(e.payload.result);
    if (!result.success) failures.push(`${i}: result ${result.error.message}`);
    const parsed = parseWebhookPayload(JSON.parse(JSON.stringify(e.payload)));
    if (parsed.idempotencyKey !== e.idempotencyKey) failures.push(`${i}: key not read back`);
  }
  return failures;
}

/**
 * MediaBuyChannels on a sender harness's schema, writing to its real outbox (the end-to-end
 * tests: the harness's worker delivers what the channels fire), loopback targets allowed.
 */
export async function outboxChannels(
  h: Pick<SenderHarness, 'pool' | 'schema' | 'outbox'>,
  clock: { now: number },
  options: Partial<MediaBuyChannelsOptions> = {},
): Promise<{ channels: MediaBuyChannels; migrations: string[] }> {
  const channels = new MediaBuyChannels({
    pool: h.pool,
    schema: h.schema,
    sink: h.outbox,
    profile: brandProfile('svc'),
    protocolVersion: '3.2',
    dataSource: new TestDataSource(),
    clock: () => clock.now,
    allowHosts: ['127.0.0.1'],
    ...options,
  });
  return { channels, migrations: await channels.migrate() };
}
