/**
 * The shapes a media buy's persistent channels deal in: the two buyer-supplied configs
 * (after validation), reporting periods, impairments and the delivery data the agents
 * provide.
 */

import { IMPAIRMENT_REASON_CODES } from '../../shared/envelope/impairment.js';

export const REPORTING_FREQUENCIES = ['hourly', 'daily', 'monthly'] as const;
export type ReportingFrequency = (typeof REPORTING_FREQUENCIES)[number];

export const TERMINAL_BUY_STATUSES = ['completed', 'canceled', 'rejected'] as const;
export type TerminalBuyStatus = (typeof TERMINAL_BUY_STATUSES)[number];

/** Legacy authentication block (deprecated; presence selects the legacy mode). */
export interface LegacyAuthentication {
  schemes: ['Bearer' | 'HMAC-SHA256'];
  credentials: string;
}

/** `push_notification_config` after validation. Extra members are kept verbatim. */
export interface PushNotificationConfig {
  url: string;
  operation_id: string;
  token?: string;
  authentication?: LegacyAuthentication;
  [member: string]: unknown;
}

/** `reporting_webhook` after validation. Extra members are kept verbatim. */
export interface ReportingWebhook {
  url: string;
  reporting_frequency: ReportingFrequency;
  token?: string;
  authentication?: LegacyAuthentication;
  requested_metrics?: string[];
  [member: string]: unknown;
}

/** A UTC reporting period; `end` is the last second inside it (e.g. 23:59:59Z). */
export interface ReportingPeriod {
  start: string;
  end: string;
}

export { IMPAIRMENT_REASON_CODES };
export type ImpairmentReasonCode = (typeof IMPAIRMENT_REASON_CODES)[number];

/** `core/impairment.json` (extra members allowed and carried through). */
export interface Impairment {
  impairment_id: string;
  resource_type: 'audience' | 'creative' | 'catalog_item' | 'event_source' | 'property';
  resource_id: string;
  package_ids: string[];
  transition: { from?: string; to: string };
  reason_code: ImpairmentReasonCode;
  observed_at: string;
  reason?: string;
  remediation?: string;
  /** Not in the schema (extra member): set when the impairment is over; it closes it. */
  resolved_at?: string;
  [member: string]: unknown;
}

/** Delivery metrics: `spend` is the one member the schema requires. */
export interface DeliveryTotals {
  spend: number;
  impressions?: number;
  clicks?: number;
  [metric: string]: unknown;
}

export interface PackageDelivery extends DeliveryTotals {
  package_id: string;
}

/** What a data source returns when the period's numbers are ready. */
export interface DeliveryData {
  totals: DeliveryTotals;
  by_package: PackageDelivery[];
  /** The buy's lifecycle or reporting state, e.g. `active`, `paused`. */
  status: string;
  currency: string;
  pricing_model?: string;
  pacing_index?: number;
}

/** Numbers not ready beyond the product's `expected_delay_minutes`. */
export interface LateDelivery {
  late: true;
  /** When the data is expected (ISO 8601); carried as `expected_availability`. */
  expectedAvailability?: string;
  currency?: string;
}

/** Implemented by the agents: where delivery numbers come from. */
export interface DeliveryDataSource {
  getDelivery(mediaBuyId: string, period: ReportingPeriod): Promise<DeliveryData | LateDelivery>;
}

export function isLate(d: object): d is LateDelivery {
  return (d as Partial<LateDelivery>).late === true;
}
