/**
 * The test controller's request (published `compliance/comply-test-controller-request.json`),
 * apart from the controller so each scenario module can take it without importing the
 * controller that imports them.
 */
import { z } from 'zod';

export const ControllerSchema = z.looseObject({
  scenario: z.string().min(1).max(100),
  account: z
    .looseObject({
      account_id: z.string().optional(),
      brand: z.looseObject({ domain: z.string().optional() }).optional(),
      operator: z.string().optional(),
      sandbox: z.boolean().optional(),
    })
    .optional(),
  params: z
    .looseObject({
      creative_id: z.unknown().optional(),
      account_id: z.unknown().optional(),
      media_buy_id: z.unknown().optional(),
      format_id: z.unknown().optional(),
      status: z.unknown().optional(),
      fixture: z.unknown().optional(),
      product_id: z.unknown().optional(),
      pricing_option_id: z.unknown().optional(),
      plan_id: z.unknown().optional(),
      task_id: z.unknown().optional(),
      session_id: z.unknown().optional(),
      arm: z.unknown().optional(),
      message: z.unknown().optional(),
      tool: z.unknown().optional(),
      upstream_name: z.unknown().optional(),
      result: z.unknown().optional(),
      spend_percentage: z.unknown().optional(),
      impressions: z.unknown().optional(),
      clicks: z.unknown().optional(),
      reported_spend: z.unknown().optional(),
      is_final: z.unknown().optional(),
      finalized_at: z.unknown().optional(),
      measurement_window: z.unknown().optional(),
      viewability: z.unknown().optional(),
      vendor_metric_values: z.unknown().optional(),
      delivery_date: z.unknown().optional(),
    })
    .optional(),
  context: z.unknown().optional(),
});
export type ControllerRequest = z.output<typeof ControllerSchema>;
