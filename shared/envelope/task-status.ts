/**
 * Task statuses and task types as they appear in webhook envelopes (supplement §6.1, §5.3).
 */

/** The task-status enum of the MCP envelope, which is also what A2A states normalise to. */
export const TASK_STATUSES = [
  'submitted',
  'working',
  'input-required',
  'completed',
  'canceled',
  'failed',
  'rejected',
  'auth-required',
  'unknown',
] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** First authoritative terminal wins; `unknown` neither settles nor reopens (§5.3). */
export const TERMINAL_STATUSES = ['completed', 'failed', 'canceled', 'rejected'] as const;
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];

/** Statuses whose A2A data rides in `status.message.parts[]` (first DataPart, §6.2). */
export const INTERIM_STATUSES = [
  'working',
  'submitted',
  'input-required',
  'auth-required',
] as const;

export function isTaskStatus(value: unknown): value is TaskStatus {
  return typeof value === 'string' && (TASK_STATUSES as readonly string[]).includes(value);
}

export function isTerminalStatus(status: unknown): status is TerminalStatus {
  return typeof status === 'string' && (TERMINAL_STATUSES as readonly string[]).includes(status);
}

export function isInterimStatus(status: unknown): boolean {
  return typeof status === 'string' && (INTERIM_STATUSES as readonly string[]).includes(status);
}

/**
 * A2A state -> task status (§6.2): strip `TASK_STATE_`, lowercase, `_` -> `-`, then exact
 * match only. `TASK_STATE_INPUT_REQUIRED` and `input-required` both give `input-required`;
 * `TASK_STATE_UNSPECIFIED` or `done` give null.
 */
export function normalizeA2aState(state: unknown): TaskStatus | null {
  if (typeof state !== 'string') return null;
  const s = (state.startsWith('TASK_STATE_') ? state.slice('TASK_STATE_'.length) : state)
    .toLowerCase()
    .replaceAll('_', '-');
  return isTaskStatus(s) ? s : null;
}

/** Task status -> A2A 1.0 enum name, e.g. `input-required` -> `TASK_STATE_INPUT_REQUIRED`. */
export function a2a10State(status: TaskStatus): string {
  return `TASK_STATE_${status.toUpperCase().replaceAll('-', '_')}`;
}

/** `task_type` enum of `mcp-webhook-payload.json`. */
export const WEBHOOK_TASK_TYPES = [
  'create_media_buy',
  'update_media_buy',
  'buy_products',
  'accept_proposal',
  'control_media_buy',
  'media_buy_delivery',
  'sync_creatives',
  'build_creative',
  'preview_creative',
  'activate_signal',
  'get_products',
  'request_proposals',
  'refine_proposals',
  'decline_proposals',
  'get_signals',
  'create_property_list',
  'update_property_list',
  'get_property_list',
  'list_property_lists',
  'delete_property_list',
  'sync_accounts',
  'get_account_financials',
  'get_creative_delivery',
  'sync_event_sources',
  'sync_audiences',
  'sync_catalogs',
  'log_event',
  'get_brand_identity',
  'search_brands',
  'get_rights',
  'acquire_rights',
  'update_rights',
  'sync_agent_notification_configs',
] as const;
export type WebhookTaskType = (typeof WEBHOOK_TASK_TYPES)[number];

/** Optional `protocol` member of the MCP envelope. */
export const PROTOCOL_DOMAINS = [
  'media-buy',
  'signals',
  'governance',
  'creative',
  'brand',
  'sponsored-intelligence',
  'measurement',
] as const;
