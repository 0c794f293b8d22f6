/**
 * What transports publish about a task: a one-line description and the JSON Schema of
 * its parameters (MCP tool `inputSchema`, A2A skill docs). Format ids, custom zod
 * checks, become `{}` (any) in the schema; the dispatcher still enforces them.
 */
import { z } from 'zod';
import type { TaskDefinition } from './types.js';

const DESCRIPTIONS: Record<string, string> = {
  get_products: 'Discover products matching a natural-language brief, with filters.',
  list_authorized_properties: 'List the publisher domains this agent is authorized to sell.',
  list_creative_formats: 'List the creative formats (structured format ids) supported.',
  create_media_buy: 'Create a media buy from packages of products; may need seller approval.',
  update_media_buy: 'Change budget, end time, status, targeting or webhooks of a media buy.',
  sync_creatives: 'Upload or update creatives and assign them to packages.',
  list_creatives: 'List your creatives with filters and paging.',
  get_media_buy_delivery: 'Delivery numbers (impressions, spend, clicks) per buy and package.',
  provide_performance_feedback: 'Send performance signals for optimization.',
  get_media_buys: 'Read media buys with status, impairments and webhook activity.',
  list_accounts: 'List your accounts and their notification subscribers.',
  sync_accounts: 'Create or update accounts and their notification_configs.',
  build_creative: 'Generate or transform a creative manifest for a target format.',
  preview_creative: 'Render previews of creative manifests (single or batch).',
  get_signals: 'Discover audience signals for a description and deployment targets.',
  activate_signal: 'Activate a signal on platforms or agents (asynchronous).',
  get_agent_capabilities: 'Per-event coalescence windows and task list of this agent.',
  sync_agent_notification_configs: 'Register agent-level webhooks (capabilities.changed).',
  get_task_status: 'Poll an asynchronous task by task_id.',
};

export function taskDescription(def: TaskDefinition): string {
  return DESCRIPTIONS[def.name] ?? 'Return the capability document of this agent.';
}

export function taskInputJsonSchema(def: TaskDefinition): Record<string, unknown> {
  return z.toJSONSchema(def.schema, { unrepresentable: 'any', io: 'input' }) as Record<
    string,
    unknown
  >;
}
