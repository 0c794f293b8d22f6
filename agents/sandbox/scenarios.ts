/**
 * The `comply_test_controller` scenarios each agent implements (the capability document's
 * `compliance_testing.scenarios` and the controller's `list_scenarios` answer). An agent
 * with none has no controller.
 */
import type { AgentKind } from '../auth/principal.js';

export const CONTROLLER_SCENARIOS: Record<AgentKind, readonly string[]> = {
  sales: [
    'force_account_status',
    'force_create_media_buy_arm',
    'force_creative_status',
    'force_get_products_arm',
    'force_media_buy_status',
    'force_task_completion',
    'force_upstream_unavailable',
    'seed_account',
    'seed_creative',
    'seed_creative_format',
    'seed_media_buy',
    'seed_product',
    'seed_pricing_option',
    'simulate_budget_spend',
    'simulate_delivery',
  ],
  // seed_product / seed_pricing_option: the universal storyboards seed their shared
  // fixtures on every agent; a creative agent sells nothing, so it acknowledges them.
  creative: ['seed_creative', 'seed_creative_format', 'seed_product', 'seed_pricing_option'],
  // The async discovery arm and its completion (get_signals_async.yaml); the universal
  // storyboards' shared product fixtures acknowledged, as at the creative agent.
  signals: [
    'force_get_signals_arm',
    'force_task_completion',
    'seed_product',
    'seed_pricing_option',
  ],
};
