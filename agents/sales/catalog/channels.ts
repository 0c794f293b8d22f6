/**
 * The published channel enum (enums/channels.json, the same in 3.1.19 and 3.2.0-beta.5)
 * and a seeded fixture's channels read as it: our own words mapped (video is olv, audio
 * streaming audio), published values kept (affiliate, retail_media, ...), anything else
 * dropped, so a product always answers valid published channels.
 */
export const ALL_PUBLISHED_CHANNELS: ReadonlySet<string> = new Set([
  'display',
  'olv',
  'social',
  'search',
  'ctv',
  'linear_tv',
  'radio',
  'streaming_audio',
  'podcast',
  'dooh',
  'ooh',
  'print',
  'cinema',
  'email',
  'gaming',
  'retail_media',
  'influencer',
  'affiliate',
  'product_placement',
  'sponsored_intelligence',
]);

const OURS_AS_PUBLISHED: Record<string, string> = { video: 'olv', audio: 'streaming_audio' };

/** A fixture's `channels` as published values (empty when none is usable). */
export function publishedFixtureChannels(raw: unknown): string[] {
  if (!Array.isArray(raw)) return [];
  const out = raw.flatMap((c) => {
    if (typeof c !== 'string') return [];
    const v = OURS_AS_PUBLISHED[c] ?? c;
    return ALL_PUBLISHED_CHANNELS.has(v) ? [v] : [];
  });
  return [...new Set(out)];
}
