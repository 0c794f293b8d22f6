/**
 * The 3.1.19 / 3.2.0-beta.5 storyboard steps known to fail (storyboards-current.ts), each
 * `<agent>:<storyboard id>/<step id>` with its evidence: the storyboard file and line (under
 * compliance/) and whose the failure is: `runner:` the registry SDK 6.11.0's own limits or
 * defects, `spec conflict:`, or `ours, not fixed yet:` (issue #20 work left). Absent
 * `releases` / `modes`: every release / mode the step runs in.
 */
export interface KnownFailure {
  releases?: Array<'3.1.19' | '3.2.0-beta.5'>;
  modes?: Array<'seeded' | 'unseeded'>;
  evidence: string;
}

export const KNOWN_FAILURES: Record<string, KnownFailure> = {
  'creative:agent_notification_configs/sync_agent_notification_configs_dry_run_clear': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      '3.2.0-beta.5/universal/agent-notification-configs.yaml:145: runner: 6.11.0 has no request schema for sync_agent_notification_configs (its task map predates the task), so it refuses to send the step',
  },
  'creative:creative/asset_type_filtering/published_post_or_audio': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      '3.2.0-beta.5/protocols/creative/scenarios/asset_type_filtering.yaml:141: runner: the answer holds exactly the two published-post fixtures, valid in 3.1.19 and 3.2.0-beta.5 (the response hook); 6.11.0 grades response_schema against its own 3.0.6 list-creatives-response.json (schema_id /schemas/3.0.6/...), which has no published_post asset and requires format_id, so the canonical fixture fails it; every step of the storyboard (OR within asset_types, AND with format_ids, zip, no audio) is asserted in test/agents/interop/test-controller-fixtures.test.ts',
  },
  'creative:creative/canonical_supported_formats/build_image_capability': {
    releases: ['3.1.19', '3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.1.19/protocols/creative/scenarios/canonical_supported_formats.yaml:121: runner: the storyboard names formats of the placeholder host https://your-agent.example.com (issue #20 'What is not ours'); the creative agent answers FORMAT_NOT_SUPPORTED for a foreign agent_url; 3.2.0-beta.5 (:120): 6.11.0's request builder adds target_format_id {agent_url: https://unknown.example.com/, id: unknown} beside the step's target_capability_id, and the two are mutually exclusive (VALIDATION_ERROR); build by target_capability_id is asserted in test/agents/canonical-formats.test.ts",
  },
  'creative:creative/canonical_supported_formats/reject_unknown_capability': {
    releases: ['3.1.19'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.1.19/protocols/creative/scenarios/canonical_supported_formats.yaml:179: runner: the storyboard names formats of the placeholder host https://your-agent.example.com (issue #20 'What is not ours'); the creative agent answers FORMAT_NOT_SUPPORTED for a foreign agent_url (field target_format_id.agent_url before the id is looked at)",
  },
  'creative:creative/creative_lifecycle_webhooks/sync_creative': {
    releases: ['3.1.19', '3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.1.19/protocols/creative/scenarios/creative_lifecycle_webhooks.yaml:140: runner: the storyboard names formats of the placeholder host https://your-platform.example.com (issue #20 'What is not ours'); the creative agent answers FORMAT_NOT_SUPPORTED for a foreign agent_url; 3.2.0-beta.5: runner: 6.11.0's own 3.0 request schema requires format_id and refuses the canonical format_kind creative before sending it; the step's expectations are asserted in test/agents/canonical-formats.test.ts",
  },
  'creative:creative/evaluator_auth/get_capabilities': {
    releases: ['3.1.19', '3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.1.19/protocols/creative/scenarios/evaluator_auth.yaml:101 (3.2.0-beta.5 the same): spec conflict: the unconditional first step captures governance.creative_features[0].feature_id, which only a governance agent has (get-adcp-capabilities-response.json governance: 'Only present if governance is in supported_protocols'); the storyboard means agents without evaluator support to skip the rest (:72-74, its skip_if tests !context.creative_feature_id :171), but its own storyboard-schema.yaml (:815-820) makes an unresolvable capture a failure of this step (capture_path_not_resolvable). The step's validations (schema, context echo) and supports_evaluator false with a build capability_id are asserted in test/agents/canonical-formats.test.ts",
  },
  'creative:creative/native_in_feed/reject_cta_not_in_enum': {
    releases: ['3.1.19'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.1.19/protocols/creative/scenarios/native_in_feed.yaml:357: runner: the creative names format_id {agent_url: https://your-platform.example.com, id: native_in_feed}, which the storyboard itself calls a placeholder to substitute with a format of the agent's list_creative_formats answer (:95-99; issue #20 'What is not ours'); 6.11.0 sends it as is, and the creative agent answers that creative FORMAT_NOT_SUPPORTED (a foreign agent_url) in creatives[0].errors, before any cta outside cta_values check",
  },
  'creative:creative/native_in_feed/reject_image_wrong_size': {
    releases: ['3.1.19'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.1.19/protocols/creative/scenarios/native_in_feed.yaml:304: runner: the creative names format_id {agent_url: https://your-platform.example.com, id: native_in_feed}, which the storyboard itself calls a placeholder to substitute with a format of the agent's list_creative_formats answer (:95-99; issue #20 'What is not ours'); 6.11.0 sends it as is, and the creative agent answers that creative FORMAT_NOT_SUPPORTED (a foreign agent_url) in creatives[0].errors, before any main_image size not declared check",
  },
  'creative:creative/native_in_feed/reject_title_too_long': {
    releases: ['3.1.19'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.1.19/protocols/creative/scenarios/native_in_feed.yaml:250: runner: the creative names format_id {agent_url: https://your-platform.example.com, id: native_in_feed}, which the storyboard itself calls a placeholder to substitute with a format of the agent's list_creative_formats answer (:95-99; issue #20 'What is not ours'); 6.11.0 sends it as is, and the creative agent answers that creative FORMAT_NOT_SUPPORTED (a foreign agent_url) in creatives[0].errors, before any title over title_max_chars check",
  },
  'creative:creative/native_in_feed/sync_full_bundle': {
    releases: ['3.1.19', '3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.1.19/protocols/creative/scenarios/native_in_feed.yaml:139: runner: 6.11.0's own 3.0 request schema refuses this 3.x request before sending it (Request validation failed for sync_creatives: creatives.0.assets.impression_tracker: Invalid input; creatives.0.assets.v)",
  },
  'creative:creative/native_localization/get_capabilities': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.2.0-beta.5/protocols/creative/scenarios/native_localization.yaml:44: spec conflict (the storyboard's own missing gate, re-read in the audit of issue #20): the published capability decides localization is optional and a whole contract (get-adcp-capabilities-response.json creative.localization, agents/protocol/schemas/3.2.0-beta.5 :2609: 'Presence opts the agent into exact locale-variant round-trip, strict RFC 4647 Lookup, ... transactional replacement, seller product-format locale-policy enforcement, and delivery attribution ... Omit this object when localization is unsupported'; 3.1.19 has no such block). This agent implements none of it, so it omits the block. The storyboard names localization only in agent.capabilities (:26), which its own schema calls 'legacy descriptive capability labels; bundle selection is driven by get_adcp_capabilities.supported_protocols and specialisms' (universal/storyboard-schema.yaml:420), and it has no requires_capability gate on creative.localization (the mechanism at storyboard-schema.yaml:296), so it grades every creative library as if it claimed the contract (locale_matching at :67). Nothing the published protocol decides is left to put on the wire; that no localization is claimed is asserted in test/agents/canonical-formats.test.ts",
  },
  'creative:creative/native_localization/sync_localized_image': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.2.0-beta.5/protocols/creative/scenarios/native_localization.yaml:74: runner: 6.11.0's own 3.0 request schema requires format_id and refuses the canonical format_kind creative before sending it; the step's expectations are asserted in test/agents/canonical-formats.test.ts",
  },
  'creative:creative/policy_backed_rejections/sync_dual_violation_creative': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      "3.2.0-beta.5/protocols/creative/scenarios/policy_backed_rejections.yaml:129: runner: 6.11.0's own 3.0 request schema requires format_id and refuses the canonical format_kind creative before sending it; the step's expectations are asserted in test/agents/canonical-formats.test.ts",
  },
  'creative:creative_lifecycle/list_all': {
    releases: ['3.1.19'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.1.19/protocols/creative/index.yaml:166: runner: the storyboard names formats of the placeholder host https://your-platform.example.com (issue #20 'What is not ours'); the creative agent answers FORMAT_NOT_SUPPORTED for a foreign agent_url in sync_creatives, so the creative list_all expects first was never stored",
  },
  'creative:creative_lifecycle/preview_display': {
    releases: ['3.1.19'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.1.19/protocols/creative/index.yaml:331: runner: the storyboard names formats of the placeholder host https://your-platform.example.com (issue #20 'What is not ours'); the creative agent answers FORMAT_NOT_SUPPORTED for a foreign agent_url",
  },
  'creative:creative_lifecycle/sync_creatives': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.2.0-beta.5/protocols/creative/index.yaml:89: runner: 6.11.0's own 3.0 request schema requires format_id and refuses the canonical format_kind creative before sending it; the step's expectations are asserted in test/agents/canonical-formats.test.ts",
  },
  'creative:deterministic_testing/force_creative_approved': {
    releases: ['3.1.19'],
    modes: ['seeded'],
    evidence:
      "3.1.19/universal/deterministic-testing.yaml:816: runner: the storyboard names formats of the placeholder host https://your-platform.example.com (issue #20 'What is not ours'); the creative agent answers FORMAT_NOT_SUPPORTED for a foreign agent_url in sync_creative_for_state, so the creative the controller is asked to force was never stored (NOT_FOUND)",
  },
  'creative:deterministic_testing/sync_creative_for_state': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      "3.2.0-beta.5/universal/deterministic-testing.yaml:793: runner: 6.11.0's own 3.0 request schema requires format_id and refuses the canonical format_kind creative before sending it; the step's expectations are asserted in test/agents/canonical-formats.test.ts",
  },
  'creative:media_buy_seller/list_creatives_filter_behavior/seed_media_buy.creative_filter_other_buy':
    {
      releases: ['3.2.0-beta.5'],
      modes: ['seeded'],
      evidence:
        "3.2.0-beta.5/protocols/creative/scenarios/list_creatives_filter_behavior.yaml:13: spec conflict: the storyboard is a sales agent's (title :4 'Sales agent applies deterministic creative filters', category media_buy_seller, agent.capabilities sells_media :26; its fixtures seed media buys :60 and list_creatives filters by media_buy_ids), but its only gate is requires_capability creative.has_creative_library (:13), which a creative agent's library also declares; a creative agent holds no media buys, so its controller answers seed_media_buy UNKNOWN_SCENARIO (list_scenarios)",
    },
  'creative:media_buy_seller/list_creatives_filter_behavior/seed_media_buy.creative_filter_target_buy':
    {
      releases: ['3.2.0-beta.5'],
      modes: ['seeded'],
      evidence:
        "3.2.0-beta.5/protocols/creative/scenarios/list_creatives_filter_behavior.yaml:13: spec conflict: the storyboard is a sales agent's (title :4 'Sales agent applies deterministic creative filters', category media_buy_seller, agent.capabilities sells_media :26; its fixtures seed media buys :60 and list_creatives filters by media_buy_ids), but its only gate is requires_capability creative.has_creative_library (:13), which a creative agent's library also declares; a creative agent holds no media buys, so its controller answers seed_media_buy UNKNOWN_SCENARIO (list_scenarios)",
    },
  'creative:pagination_integrity/first_page': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      "3.2.0-beta.5/universal/pagination-integrity.yaml:127: runner: the storyboard's own creative fixtures are canonical (format_kind image, pagination-integrity.yaml:63-77) and are answered so, valid in 3.1.19 and 3.2.0-beta.5 (the response hook); 6.11.0 grades response_schema against its own 3.0.6 list-creatives-response.json, which requires format_id on every creative; the step's expectations (two of three, has_more, a cursor to the third) are asserted at both agents in test/agents/interop/test-controller-fixtures.test.ts",
  },
  'creative:read_tool_idempotency/list_creatives_with_idempotency_key': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      "3.2.0-beta.5/universal/read-tool-idempotency.yaml:226: runner: the storyboard's own creative fixtures are canonical (format_kind image, pagination-integrity.yaml:63-77) and are answered so, valid in 3.1.19 and 3.2.0-beta.5 (the response hook); 6.11.0 grades response_schema against its own 3.0.6 list-creatives-response.json, which requires format_id on every creative; the step's expectations (creatives with idempotency_key and context echoed) are asserted at both agents in test/agents/interop/test-controller-fixtures.test.ts",
  },
  'creative:webhook_emission/assert_synchronous_completion_handled': {
    releases: ['3.1.19', '3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.1.19/universal/webhook-emission.yaml:512: spec conflict (as storyboards.test.ts): the storyboard awaits a task webhook after an inline terminal answer, which service-spec (States) and supplement \u00a74.7 forbid and the storyboard's own text says sellers MUST NOT emit",
  },
  'sales:agent_notification_configs/sync_agent_notification_configs_dry_run_clear': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      '3.2.0-beta.5/universal/agent-notification-configs.yaml:145: runner: 6.11.0 has no request schema for sync_agent_notification_configs (its task map predates the task), so it refuses to send the step',
  },
  'sales:idempotency/create_media_buy_replay': {
    releases: ['3.1.19', '3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      "3.1.19/universal/idempotency.yaml:371: runner: the storyboard's start_time is 'asap'; 6.11.0's request builder (request-builder.js create_media_buy) replaces any start it cannot parse as a future date with Date.now() + 24 h on every call, so the replay's payload differs from the initial call's by milliseconds and a conformant seller answers IDEMPOTENCY_CONFLICT",
  },
  'sales:media_buy_seller/canonical_formats/get_seeded_canonical_product': {
    releases: ['3.1.19', '3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      "3.1.19/protocols/media-buy/scenarios/canonical_formats.yaml:351: runner: 6.11.0's request builder starts every get_products from {buying_mode: 'brief', brief: 'Show me all available...'} and merges the step's buying_mode: wholesale over it, so the request carries a brief that wholesale forbids (get-products-request.json: 'Must not be provided when buying_mode is wholesale'; issue #20 'What is not ours'), answered VALIDATION_ERROR",
  },
  'sales:media_buy_seller/creative_reception/sync_creatives': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.2.0-beta.5/protocols/creative/index.yaml:89: runner: 6.11.0's own 3.0 request schema requires format_id and refuses the canonical format_kind creative before sending it; the step's expectations are asserted in test/agents/canonical-formats.test.ts",
  },
  'sales:media_buy_seller/get_products_async/get_products_submitted': {
    releases: ['3.1.19', '3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.1.19/protocols/media-buy/scenarios/get_products_async.yaml:118 (3.2.0-beta.5 :120): runner, seeded (both releases): the answer is the forced submitted envelope (status submitted, the controller's task_id, no products; valid against both releases' get-products-async-response-submitted.json, the response hook), but 6.11.0 grades response_schema against its own 3.0.6 schema, which requires products (schema_id /schemas/3.0.6/...); the submitted arm, its stored task, its push registration and force_task_completion are asserted in test/agents/interop/test-controller-discovery.test.ts. Runner, 3.1.19 unseeded: the storyboard's required_tools name comply_test_controller, which a production deployment does not expose; 6.11.0 skips the forcing step (missing tool) and goes on to the step that depends on it (issue #20 'What is not ours'), which then meets an ordinary synchronous answer",
  },
  'sales:media_buy_seller/get_products_async/get_products_submitted_conflict': {
    releases: ['3.2.0-beta.5'],
    modes: ['unseeded'],
    evidence:
      "3.2.0-beta.5/protocols/media-buy/scenarios/get_products_async.yaml:214: runner: the storyboard's required_tools name comply_test_controller, which a production deployment (unseeded) does not expose; 6.11.0 skips the forcing step (missing tool) and goes on to the step that depends on it (issue #20 'What is not ours': it goes on after a forcing step it skipped), which then meets an ordinary synchronous answer",
  },
  'sales:media_buy_seller/get_products_rejected/get_products_rejected': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.2.0-beta.5/protocols/media-buy/scenarios/get_products_rejected.yaml:104: runner, seeded: the answer is the forced GetProductsRejected (status rejected, the registered reason and suggestions, no products; valid against 3.2.0-beta.5's get-products-rejected.json, the response hook for a 3.2-pinned request), but 6.11.0 grades response_schema against its own 3.0.6 schema, which requires products (schema_id /schemas/3.0.6/media-buy/get-products-rejected.json); asserted in test/agents/interop/test-controller-discovery.test.ts. Runner, unseeded: the storyboard's required_tools name comply_test_controller, which a production deployment does not expose; 6.11.0 skips the forcing step (missing tool) and goes on to the step that depends on it (issue #20 'What is not ours'), which then meets an ordinary synchronous answer",
  },
  'sales:media_buy_seller/portfolio_routing_scope/query_declared_channel': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.2.0-beta.5/protocols/media-buy/scenarios/portfolio_routing_scope.yaml:118: runner: 6.11.0's request builder starts every get_products from {buying_mode: 'brief', brief: 'Show me all available...'} and merges the step's buying_mode: wholesale over it, so the request carries a brief that wholesale forbids (get-products-request.json: 'Must not be provided when buying_mode is wholesale'; issue #20 'What is not ours'), answered VALIDATION_ERROR; the declared scope against the wholesale feed is asserted in test/agents/capabilities-accounts.test.ts",
  },
  'sales:media_buy_seller/pricing_currency_filter/get_products_usd_pricing': {
    releases: ['3.1.19', '3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      "3.1.19/protocols/media-buy/scenarios/pricing_currency_filter.yaml:110: runner: 6.11.0's own 3.0 request schema refuses this 3.x request before sending it (Request validation failed for get_products: fields.3: Invalid input; fields.4: Invalid input; fields.5: Invalid input)",
  },
  'sales:media_buy_seller/product_filter_behavior/get_filtered_wholesale_products': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      "3.2.0-beta.5/protocols/media-buy/scenarios/product_filter_behavior.yaml:123: runner: 6.11.0's request builder starts every get_products from {buying_mode: 'brief', brief: 'Show me all available...'} and merges the step's buying_mode: wholesale over it, so the request carries a brief that wholesale forbids (get-products-request.json: 'Must not be provided when buying_mode is wholesale'; issue #20 'What is not ours'), answered VALIDATION_ERROR",
  },
  'sales:media_buy_seller/provenance_audit_observation/sync_creatives_carveout_claim': {
    releases: ['3.1.19', '3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      "3.1.19/protocols/media-buy/scenarios/provenance_audit_observation.yaml:147: runner: the storyboard's creatives name formats of the placeholder host https://your-platform.example.com (issue #20 'What is not ours'); the seller answers FORMAT_NOT_SUPPORTED for a foreign agent_url before any provenance check. 3.2.0-beta.5: 6.11.0's own 3.0 request schema requires format_id and refuses the canonical creative before sending it",
  },
  'sales:media_buy_seller/provenance_enforcement/sync_creatives_no_provenance': {
    releases: ['3.1.19', '3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      "3.1.19/protocols/media-buy/scenarios/provenance_enforcement.yaml:171: runner: the storyboard's creatives name formats of the placeholder host https://your-platform.example.com (issue #20 'What is not ours'); the seller answers FORMAT_NOT_SUPPORTED for a foreign agent_url before any provenance check. 3.2.0-beta.5: 6.11.0's own 3.0 request schema requires format_id and refuses the canonical creative before sending it",
  },
  'sales:media_buy_seller/provenance_truth_of_claim/sync_creatives_contradicted': {
    releases: ['3.1.19', '3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      "3.1.19/protocols/media-buy/scenarios/provenance_truth_of_claim.yaml:166: runner: the storyboard's creatives name formats of the placeholder host https://your-platform.example.com (issue #20 'What is not ours'); the seller answers FORMAT_NOT_SUPPORTED for a foreign agent_url before any provenance check. 3.2.0-beta.5: 6.11.0's own 3.0 request schema requires format_id and refuses the canonical creative before sending it",
  },
  'sales:media_buy_seller/read_filter_behavior/get_filtered_delivery': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      "3.2.0-beta.5/protocols/media-buy/scenarios/read_filter_behavior.yaml:212: runner: the step expects 3.2's half-open range (end_date exclusive, get-media-buy-delivery-request.json); 6.11.0's client is pinned to 3.0 and sends adcp_major_version 3 without adcp_version (protocols/index.js buildVersionEnvelope), which version negotiation serves as 3.0, whose end_date is an inclusive day; the 3.2 range (unpinned or pinned 3.2: the April 15 row only, reporting_period.end the exclusive boundary, equal bounds VALIDATION_ERROR at start_date) is asserted in test/agents/sales-published.test.ts",
  },
  'sales:media_buy_seller/revenue_share_pricing/get_revenue_share_products': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      "3.2.0-beta.5/protocols/media-buy/scenarios/revenue_share_pricing.yaml:139: runner: 6.11.0's request builder starts every get_products from {buying_mode: 'brief', brief: 'Show me all available...'} and merges the step's buying_mode: wholesale over it, so the request carries a brief that wholesale forbids (issue #20 'What is not ours'), answered VALIDATION_ERROR; and its client pins adcp_major_version 3 alone (served as 3.0), while revenue_share is 3.2's (absent from 3.1.19's pricing-option union), offered only to a 3.2 pin. The runner then skips the buy, the settlement and report_usage steps (prerequisite_failed). Every step (sync_event_sources, the contingent filter, the buy without a bid, simulate_delivery, delivery with commissionable_value, the formula-checked report_usage) is asserted with the storyboard's fixture and requests pinned 3.2 in test/agents/revenue-share.test.ts",
  },
  'sales:media_buy_seller/targeting_aware_discovery/exclude_partial_fixed_placement_set': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      "3.2.0-beta.5/protocols/media-buy/scenarios/targeting_aware_discovery.yaml:528: runner: 6.11.0's request builder starts every get_products from {buying_mode: 'brief', brief: 'Show me all available...'} and merges the step's buying_mode: wholesale over it, so the request carries a brief that wholesale forbids (get-products-request.json: 'Must not be provided when buying_mode is wholesale'; issue #20 'What is not ours'), answered VALIDATION_ERROR",
  },
  'sales:media_buy_seller/targeting_aware_discovery/get_brief_targeted_product': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      "3.2.0-beta.5/protocols/media-buy/scenarios/targeting_aware_discovery.yaml:309: runner: 6.11.0's client sends adcp_major_version 3 without adcp_version (protocols/index.js buildVersionEnvelope), which version negotiation serves as 3.0, whose answer has no targeting_resolution or configured products (the storyboard's own downshift phase requires omitting them below 3.2); the step's expectations (brief_targeting geo_countries US, age 18-44, products[0] is_custom with expires_at) with its fixture and request pinned 3.2, and the 3.1 downshift, are asserted in test/agents/brief-targeting.test.ts",
  },
  'sales:media_buy_seller/targeting_aware_discovery/get_exact_targeted_product': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      "3.2.0-beta.5/protocols/media-buy/scenarios/targeting_aware_discovery.yaml:365: runner: 6.11.0's client sends adcp_major_version 3 without adcp_version (protocols/index.js buildVersionEnvelope), which version negotiation serves as 3.0, a release with no targeting_overlay, required_overlay_support, overlay_support or configured products (the storyboard's own downshift phase requires omitting them below 3.2); the step's expectations (one configured product: is_custom, expires_at, forecast, no targeting_resolution echo, overlay_support with its limits), :491's exclusion for unsupported travel_time, :179/:215's legacy geography and every malformed member are asserted pinned 3.2 with the storyboard's fixture in test/agents/targeting-overlay.test.ts, and every later step (:564-:1537: the fixed placement set, the expired tombstone, the modified-age / remove-Safari offer, the create and update refusals with their readbacks) in test/agents/targeting-lifecycle.test.ts",
  },
  'sales:pagination_integrity/first_page': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      "3.2.0-beta.5/universal/pagination-integrity.yaml:127: runner: the storyboard's own creative fixtures are canonical (format_kind image, pagination-integrity.yaml:63-77) and are answered so, valid in 3.1.19 and 3.2.0-beta.5 (the response hook); 6.11.0 grades response_schema against its own 3.0.6 list-creatives-response.json, which requires format_id on every creative; the step's expectations (two of three, has_more, a cursor to the third) are asserted at both agents in test/agents/interop/test-controller-fixtures.test.ts",
  },
  'sales:read_tool_idempotency/list_creatives_with_idempotency_key': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      "3.2.0-beta.5/universal/read-tool-idempotency.yaml:226: runner: the storyboard's own creative fixtures are canonical (format_kind image, pagination-integrity.yaml:63-77) and are answered so, valid in 3.1.19 and 3.2.0-beta.5 (the response hook); 6.11.0 grades response_schema against its own 3.0.6 list-creatives-response.json, which requires format_id on every creative; the step's expectations (creatives with idempotency_key and context echoed) are asserted at both agents in test/agents/interop/test-controller-fixtures.test.ts",
  },
  'sales:stale_response_advisory/stale_response_wire_placement': {
    releases: ['3.1.19', '3.2.0-beta.5'],
    modes: ['seeded'],
    evidence:
      "3.1.19/universal/stale-response-advisory.yaml:153: runner: the step wants a populated get_products success with the STALE_RESPONSE advisory in errors[] (force_upstream_unavailable, answered so: test/agents/interop/test-controller.test.ts); 6.11.0's client (utils/response-unwrapper.js isAdcpError) reads any non-empty errors[] as a failed task and fails the step with the advisory's message",
  },
  'sales:webhook_emission/assert_synchronous_completion_handled': {
    releases: ['3.1.19', '3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.1.19/universal/webhook-emission.yaml:512: spec conflict (as storyboards.test.ts): the storyboard awaits a task webhook after an inline terminal answer, which service-spec (States) and supplement \u00a74.7 forbid and the storyboard's own text says sellers MUST NOT emit",
  },
  'sales:webhook_emission/expect_webhook_presence': {
    releases: ['3.1.19', '3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.1.19/universal/webhook-emission.yaml:207: spec conflict (as storyboards.test.ts): the storyboard awaits a task webhook after an inline terminal answer, which service-spec (States) and supplement \u00a74.7 forbid and the storyboard's own text says sellers MUST NOT emit",
  },
  'sales:webhook_emission/sync_get_products_with_webhook_config_reject': {
    releases: ['3.1.19', '3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      '3.1.19/universal/webhook-emission.yaml:469: runner: webhook_emission\'s synchronous branch against get_products (issue #20 \'What is not ours\'); sync_get_products_with_webhook_config_reject (get_products): Expected one of ["INVALID_REQUEST","VALIDATION_ERROR"], got',
  },
  'sales:webhook_emission/sync_get_products_with_webhook_config_success': {
    releases: ['3.1.19', '3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.1.19/universal/webhook-emission.yaml:416: runner: webhook_emission's synchronous branch against get_products (issue #20 'What is not ours'); sync_get_products_with_webhook_config_success (get_products): products: Invalid input: expected array, received undefine",
  },
  'signals:agent_notification_configs/sync_agent_notification_configs_dry_run_clear': {
    releases: ['3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      '3.2.0-beta.5/universal/agent-notification-configs.yaml:145: runner: 6.11.0 has no request schema for sync_agent_notification_configs (its task map predates the task), so it refuses to send the step',
  },
  'signals:signals_baseline/get_signals_async/get_signals_submitted': {
    releases: ['3.1.19', '3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.1.19/protocols/signals/scenarios/get_signals_async.yaml:108 (3.2.0-beta.5 the same): runner, seeded: the answer is the forced submitted envelope (status submitted, the controller's task_id, no signals; valid against both releases' get-signals-async-response-submitted.json, the response hook), but 6.11.0 grades response_schema against its own 3.0.6 get-signals-response.json, which requires signals (as get_products_async's step); the arm (force_get_signals_arm, once, never taken by wholesale), list_tasks by id, type, webhook and account, and force_task_completion with its webhook and get_task_status are asserted in test/agents/interop/test-controller-discovery.test.ts. Runner, unseeded: the storyboard's required_tools name comply_test_controller, which a production deployment does not expose; 6.11.0 skips the forcing step (missing tool) and goes on to the step that depends on it (issue #20 'What is not ours'), which then meets an ordinary synchronous answer",
  },
  'signals:webhook_emission/assert_synchronous_completion_handled': {
    releases: ['3.1.19', '3.2.0-beta.5'],
    modes: ['seeded', 'unseeded'],
    evidence:
      "3.1.19/universal/webhook-emission.yaml:512: spec conflict (as storyboards.test.ts): the storyboard awaits a task webhook after an inline terminal answer, which service-spec (States) and supplement \u00a74.7 forbid and the storyboard's own text says sellers MUST NOT emit",
  },
};
