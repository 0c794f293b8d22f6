/**
 * The create_media_buy request the end-to-end tests send as the demo buyer: one package of
 * the svc brand's `video_olv_news` product at its CPM option, starting now, ending at
 * `endMs`, with whatever else the test adds (a push_notification_config, mostly).
 */
export function demoBuy(
  ref: string,
  endMs: number,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    buyer_ref: ref,
    brand_manifest: { url: 'https://acme.example' },
    packages: [
      {
        buyer_ref: 'p',
        product_id: 'video_olv_news',
        pricing_option_id: 'olv_news_cpm',
        budget: 5000,
      },
    ],
    start_time: { type: 'asap' },
    end_time: new Date(endMs).toISOString(),
    ...extra,
  };
}
