/**
 * The seed catalog: formats, products across every channel and pricing model, signals of
 * the three kinds, and demo principals with API keys, so the spec's typical flows work
 * out of the box. Idempotent: rows are upserted by id, and keys are derived from the
 * agent secret, so running it at every start changes nothing and prints the same keys.
 */
import type { Pool, PoolClient } from '../shared/infra/pg.js';
import { assertSchemaName, withTransaction } from '../shared/infra/pg.js';
import { demoApiKey, hashApiKey, issueToken, loadAgentSecrets } from './auth/authenticate.js';
import { ALL_PERMISSIONS, type AgentKind, type Permissions } from './auth/principal.js';
import { clearFormatCache, STANDARD_FORMATS } from './creative/formats.js';

interface SeedPrincipal {
  agent: AgentKind;
  principal_id: string;
  name: string;
  permissions: Permissions;
  signals_access?: boolean;
}

const READ_ONLY: Permissions = {
  products: ['read'],
  media_buys: ['read'],
  creatives: ['read'],
  reports: ['read'],
};

export const DEMO_PRINCIPALS: SeedPrincipal[] = [
  { agent: 'sales', principal_id: 'demo-buyer', name: 'Demo Buyer', permissions: ALL_PERMISSIONS },
  {
    agent: 'sales',
    principal_id: 'demo-viewer',
    name: 'Demo Viewer (read only)',
    permissions: READ_ONLY,
  },
  {
    agent: 'creative',
    principal_id: 'demo-buyer',
    name: 'Demo Buyer',
    permissions: ALL_PERMISSIONS,
  },
  {
    agent: 'creative',
    principal_id: 'demo-viewer',
    name: 'Demo Viewer (read only)',
    permissions: READ_ONLY,
  },
  {
    agent: 'signals',
    principal_id: 'demo-buyer',
    name: 'Demo Buyer',
    permissions: ALL_PERMISSIONS,
  },
  {
    agent: 'signals',
    principal_id: 'demo-viewer',
    name: 'Demo Viewer (read only)',
    permissions: READ_ONLY,
  },
  {
    agent: 'signals',
    principal_id: 'demo-blocked',
    name: 'Demo principal without signal access',
    permissions: ALL_PERMISSIONS,
    signals_access: false,
  },
];

interface SeedProduct {
  product_id: string;
  name: string;
  description: string;
  channel: 'video' | 'ctv' | 'display' | 'audio' | 'dooh';
  delivery_type: 'guaranteed' | 'non_guaranteed';
  is_standard?: boolean;
  custom_principal?: string;
  formats: string[];
  pricing_options: Array<Record<string, unknown>>;
  targeting: Record<string, unknown>;
  keywords: string[];
  expected_delay_minutes?: number;
  ctr: number;
}

const US_CA = ['US', 'CA'];
// Pricing options in the published form (core/pricing-option.json): an auction option is
// one without `fixed_price`, with a `floor_price`.
const cpm = (id: string, price: number, min = 1000) => ({
  pricing_option_id: id,
  pricing_model: 'cpm',
  fixed_price: price,
  currency: 'USD',
  min_spend_per_package: min,
});
const auction = (id: string, floor: number, min = 500) => ({
  pricing_option_id: id,
  pricing_model: 'cpm',
  floor_price: floor,
  currency: 'USD',
  min_spend_per_package: min,
});
const flat = (id: string, price: number) => ({
  pricing_option_id: id,
  pricing_model: 'flat_rate',
  fixed_price: price,
  currency: 'USD',
});

export const SEED_PRODUCTS: SeedProduct[] = [
  {
    product_id: 'ctv_premium_sports',
    name: 'Premium Sports CTV',
    description:
      'Live and on-demand sports on connected TV apps, 30s non-skippable, household targeting.',
    channel: 'ctv',
    delivery_type: 'guaranteed',
    formats: ['video_ctv_30s', 'video_30s'],
    pricing_options: [cpm('ctv_sports_cpm', 42)],
    targeting: {
      geo_countries: US_CA,
      device_types: ['ctv'],
      dayparting: true,
      audience_segments: true,
    },
    keywords: [
      'sports',
      'ctv',
      'tv',
      'streaming',
      'live',
      'premium',
      'football',
      'basketball',
      'household',
    ],
    expected_delay_minutes: 60,
    ctr: 0.0005,
  },
  {
    product_id: 'ctv_entertainment_auction',
    name: 'Entertainment CTV Marketplace',
    description: 'Drama, comedy and reality series on CTV, auction priced, broad household reach.',
    channel: 'ctv',
    delivery_type: 'non_guaranteed',
    formats: ['video_ctv_30s', 'video_15s'],
    pricing_options: [auction('ctv_ent_auction', 18)],
    targeting: { geo_countries: US_CA, device_types: ['ctv'], audience_segments: true },
    keywords: ['ctv', 'tv', 'streaming', 'entertainment', 'drama', 'comedy', 'reach', 'awareness'],
    ctr: 0.0005,
  },
  {
    product_id: 'video_olv_news',
    name: 'News & Lifestyle Online Video',
    description: 'Pre-roll on premium news and lifestyle sites, desktop and mobile.',
    channel: 'video',
    delivery_type: 'guaranteed',
    formats: ['video_15s', 'video_30s'],
    pricing_options: [cpm('olv_news_cpm', 22), auction('olv_news_auction', 12)],
    targeting: {
      geo_countries: US_CA,
      device_types: ['desktop', 'mobile'],
      audience_segments: true,
    },
    keywords: [
      'video',
      'preroll',
      'pre-roll',
      'news',
      'lifestyle',
      'online',
      'mobile',
      'awareness',
    ],
    ctr: 0.004,
  },
  {
    product_id: 'display_run_of_network',
    name: 'Run of Network Display',
    description:
      'Standard IAB display units across the whole network, auction priced, performance friendly.',
    channel: 'display',
    delivery_type: 'non_guaranteed',
    formats: ['display_300x250', 'display_728x90', 'display_320x50', 'display_160x600'],
    pricing_options: [auction('ron_display_auction', 2.5, 250)],
    targeting: {
      geo_countries: US_CA,
      device_types: ['desktop', 'mobile', 'tablet'],
      audience_segments: true,
    },
    keywords: [
      'display',
      'banner',
      'performance',
      'retargeting',
      'conversions',
      'network',
      'clicks',
    ],
    ctr: 0.0012,
  },
  {
    product_id: 'display_homepage_takeover',
    name: 'Homepage Takeover',
    description:
      'All display units on the homepage for the day, fixed fee, guaranteed share of voice.',
    channel: 'display',
    delivery_type: 'guaranteed',
    formats: ['display_728x90', 'display_300x600', 'display_300x250'],
    pricing_options: [flat('homepage_flat', 25000)],
    targeting: { geo_countries: ['US'], device_types: ['desktop', 'mobile'] },
    keywords: ['homepage', 'takeover', 'launch', 'premium', 'display', 'roadblock', 'awareness'],
    ctr: 0.002,
  },
  {
    product_id: 'audio_podcast_network',
    name: 'Podcast Network Audio',
    description: 'Host-adjacent audio spots across business, sports and true-crime podcasts.',
    channel: 'audio',
    delivery_type: 'guaranteed',
    formats: ['audio_30s', 'audio_15s'],
    pricing_options: [cpm('podcast_cpm', 18)],
    targeting: { geo_countries: US_CA, device_types: ['mobile', 'desktop', 'smart_speaker'] },
    keywords: ['audio', 'podcast', 'podcasts', 'business', 'sports', 'listeners', 'spoken'],
    expected_delay_minutes: 120,
    ctr: 0.0003,
  },
  {
    product_id: 'audio_streaming_music',
    name: 'Streaming Music Audio',
    description: 'Audio spots between tracks on a streaming music service, auction priced.',
    channel: 'audio',
    delivery_type: 'non_guaranteed',
    formats: ['audio_15s', 'audio_30s'],
    pricing_options: [auction('music_auction', 6)],
    targeting: { geo_countries: US_CA, device_types: ['mobile', 'desktop', 'smart_speaker'] },
    keywords: ['audio', 'music', 'streaming', 'radio', 'young', 'listeners'],
    ctr: 0.0003,
  },
  {
    product_id: 'dooh_times_square',
    name: 'Times Square Spectacular',
    description: 'Digital out-of-home screens in Times Square, 10s loop, guaranteed plays.',
    channel: 'dooh',
    delivery_type: 'guaranteed',
    formats: ['dooh_1920x1080'],
    pricing_options: [cpm('times_square_cpm', 35), flat('times_square_flat', 15000)],
    targeting: { geo_countries: ['US'], geo_metros: ['501'] },
    keywords: [
      'dooh',
      'outdoor',
      'billboard',
      'times',
      'square',
      'new',
      'york',
      'launch',
      'iconic',
    ],
    ctr: 0,
  },
  {
    product_id: 'dooh_transit_network',
    name: 'Transit Screens Network',
    description: 'Portrait and landscape screens in rail and bus stations in major metros.',
    channel: 'dooh',
    delivery_type: 'non_guaranteed',
    formats: ['dooh_1080x1920', 'dooh_1920x1080'],
    pricing_options: [cpm('transit_cpm', 12)],
    targeting: { geo_countries: US_CA },
    keywords: ['dooh', 'outdoor', 'transit', 'commuters', 'city', 'metro', 'station'],
    ctr: 0,
  },
  {
    product_id: 'video_private_marketplace',
    name: 'Private Marketplace Video',
    description: 'Curated premium video inventory available to onboarded buyers only.',
    channel: 'video',
    delivery_type: 'non_guaranteed',
    is_standard: false,
    formats: ['video_30s', 'video_15s'],
    pricing_options: [auction('pmp_video_auction', 15)],
    targeting: { geo_countries: US_CA, audience_segments: true },
    keywords: ['video', 'premium', 'curated', 'private', 'pmp'],
    ctr: 0.003,
  },
  {
    product_id: 'custom_demo_buyer_sports_bundle',
    name: 'Custom Sports Bundle for Demo Buyer',
    description: 'A negotiated CTV and online video sports package built for the demo buyer.',
    channel: 'ctv',
    delivery_type: 'guaranteed',
    is_standard: false,
    custom_principal: 'demo-buyer',
    formats: ['video_ctv_30s', 'video_30s'],
    pricing_options: [cpm('custom_sports_cpm', 30, 5000)],
    targeting: { geo_countries: ['US'], audience_segments: true },
    keywords: ['sports', 'ctv', 'custom', 'bundle', 'video', 'negotiated'],
    ctr: 0.0008,
  },
  // Display at a fixed CPM on enthusiast content: the catalog's only other fixed-price
  // display is the 25,000 takeover, so a fixed-price display brief had nothing buyable at a
  // small budget. Last in the list so that ties (a plain "display" brief) keep run-of-network
  // and the takeover ahead of it.
  {
    product_id: 'display_outdoor_enthusiast',
    name: 'Outdoor Enthusiast Banners',
    description: 'Fixed-CPM IAB banners on hiking, camping and travel sites, desktop and mobile.',
    channel: 'display',
    delivery_type: 'guaranteed',
    formats: ['display_300x250', 'display_728x90', 'display_300x600'],
    pricing_options: [cpm('outdoor_banners_cpm', 9)],
    targeting: {
      geo_countries: US_CA,
      device_types: ['desktop', 'mobile'],
      audience_segments: true,
    },
    keywords: ['display', 'banner', 'outdoor', 'hiking', 'camping', 'travel', 'adventure'],
    ctr: 0.0015,
  },
];

interface SeedSignal {
  id: string;
  name: string;
  description: string;
  data_provider: string;
  signal_type: 'marketplace' | 'custom' | 'owned';
  coverage_percentage: number;
  cpm: number | null;
  countries: string[];
  owner_principal?: string;
  keywords: string[];
  activation_minutes: number;
  activatable?: boolean;
}

export const SEED_SIGNALS: SeedSignal[] = [
  {
    id: 'sig_sports_enthusiasts',
    name: 'Sports Enthusiasts',
    description: 'Adults who watch or attend live sports at least weekly.',
    data_provider: 'Polk Insights',
    signal_type: 'marketplace',
    coverage_percentage: 50,
    cpm: 2.5,
    countries: ['US', 'CA'],
    keywords: ['sports', 'fans', 'enthusiasts', 'live', 'football', 'basketball'],
    activation_minutes: 30,
  },
  {
    id: 'sig_luxury_auto_intenders',
    name: 'Luxury Auto Intenders',
    description: 'In-market for a premium vehicle within 90 days.',
    data_provider: 'Meridian Data',
    signal_type: 'marketplace',
    coverage_percentage: 1,
    cpm: 4,
    countries: ['US'],
    keywords: ['auto', 'car', 'luxury', 'vehicle', 'intenders', 'premium', 'in-market'],
    activation_minutes: 60,
  },
  {
    id: 'sig_adults_18_plus',
    name: 'Adults 18+',
    description: 'Broad adult audience for reach campaigns.',
    data_provider: 'Census Graph',
    signal_type: 'marketplace',
    coverage_percentage: 99,
    cpm: 0.5,
    countries: ['US', 'CA', 'GB'],
    keywords: ['adults', 'broad', 'reach', 'everyone', 'general'],
    activation_minutes: 15,
  },
  {
    id: 'sig_demo_buyer_loyalists',
    name: 'Demo Buyer Loyalty Members',
    description: 'Custom model of the demo buyer loyalty program members and lookalikes.',
    data_provider: 'Signals Lab',
    signal_type: 'custom',
    coverage_percentage: 5,
    cpm: 1.5,
    countries: ['US'],
    owner_principal: 'demo-buyer',
    keywords: ['loyalty', 'customers', 'lookalike', 'custom', 'members'],
    activation_minutes: 120,
  },
  {
    id: 'sig_demo_buyer_site_visitors',
    name: 'Demo Buyer Site Visitors (30 days)',
    description: 'First-party visitors of the demo buyer site in the last 30 days.',
    data_provider: 'Demo Buyer',
    signal_type: 'owned',
    coverage_percentage: 2,
    cpm: null,
    countries: ['US', 'CA'],
    owner_principal: 'demo-buyer',
    keywords: ['retargeting', 'visitors', 'site', 'first-party', 'owned'],
    activation_minutes: 10,
  },
  {
    id: 'sig_legacy_segment_unavailable',
    name: 'Legacy Travel Planners',
    description: 'A retired travel segment kept for reporting; it can no longer be activated.',
    data_provider: 'Meridian Data',
    signal_type: 'marketplace',
    coverage_percentage: 10,
    cpm: 1,
    countries: ['US'],
    keywords: ['travel', 'planners', 'vacation', 'legacy'],
    activation_minutes: 30,
    activatable: false,
  },
];

/** Live from the start: some signals are already deployed on a platform. */
const LIVE_DEPLOYMENTS = [
  { signal: 'sig_adults_18_plus', platform: 'the-trade-desk' },
  { signal: 'sig_sports_enthusiasts', platform: 'the-trade-desk' },
];

export interface DemoCredential {
  agent: AgentKind;
  principal_id: string;
  name: string;
  api_key: string;
  /** A bearer token (HS256, 30 days) with the principal's permissions. */
  bearer_token: string;
}

/** Writes (or refreshes) the seed catalog. Safe to run at every start. */
export async function seedCatalog(pool: Pool, schema: string): Promise<void> {
  const s = assertSchemaName(schema);
  const secrets = await loadAgentSecrets(pool, s);
  await withTransaction(pool, async (db) => {
    await seedFormats(db, s);
    await seedProducts(db, s);
    await seedSignals(db, s);
    await seedPrincipals(db, s, secrets);
  });
  clearFormatCache();
}

/** The standard formats, refreshed. */
async function seedFormats(db: PoolClient, s: string): Promise<void> {
  for (const f of STANDARD_FORMATS) {
    await db.query(
      `INSERT INTO ${s}.formats (format_id, name, type, width, height, duration_ms, is_responsive,
         assets_required, renders, requirements)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)
       ON CONFLICT (format_id) DO UPDATE SET name = EXCLUDED.name, type = EXCLUDED.type,
         width = EXCLUDED.width, height = EXCLUDED.height, duration_ms = EXCLUDED.duration_ms,
         is_responsive = EXCLUDED.is_responsive, assets_required = EXCLUDED.assets_required,
         renders = EXCLUDED.renders, requirements = EXCLUDED.requirements`,
      [
        f.format_id,
        f.name,
        f.type,
        f.width,
        f.height,
        f.duration_ms,
        f.is_responsive,
        JSON.stringify(f.assets_required),
        JSON.stringify(f.renders),
        f.requirements,
      ],
    );
  }
}

/** The products, in their listed order (`sort_order`). */
async function seedProducts(db: PoolClient, s: string): Promise<void> {
  for (const [i, p] of SEED_PRODUCTS.entries()) {
    await db.query(
      `INSERT INTO ${s}.products (product_id, name, description, channel, delivery_type, is_standard,
         custom_principal, format_ids, pricing_options, targeting, keywords, expected_delay_minutes,
         ctr, sort_order)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14)
       ON CONFLICT (product_id) DO UPDATE SET name = EXCLUDED.name,
         description = EXCLUDED.description, channel = EXCLUDED.channel,
         delivery_type = EXCLUDED.delivery_type, is_standard = EXCLUDED.is_standard,
         custom_principal = EXCLUDED.custom_principal, format_ids = EXCLUDED.format_ids,
         pricing_options = EXCLUDED.pricing_options, targeting = EXCLUDED.targeting,
         keywords = EXCLUDED.keywords, expected_delay_minutes = EXCLUDED.expected_delay_minutes,
         ctr = EXCLUDED.ctr, sort_order = EXCLUDED.sort_order`,
      [
        p.product_id,
        p.name,
        p.description,
        p.channel,
        p.delivery_type,
        p.is_standard ?? true,
        p.custom_principal ?? null,
        JSON.stringify(p.formats),
        JSON.stringify(p.pricing_options),
        p.targeting,
        p.keywords,
        p.expected_delay_minutes ?? 0,
        p.ctr,
        i,
      ],
    );
  }
}

/** The signals and their live deployments. */
async function seedSignals(db: PoolClient, s: string): Promise<void> {
  for (const g of SEED_SIGNALS) {
    await db.query(
      `INSERT INTO ${s}.signals (signal_agent_segment_id, name, description, data_provider,
         signal_type, coverage_percentage, cpm, countries, owner_principal, keywords,
         activation_minutes, activatable)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)
       ON CONFLICT (signal_agent_segment_id) DO UPDATE SET name = EXCLUDED.name,
         description = EXCLUDED.description, data_provider = EXCLUDED.data_provider,
         signal_type = EXCLUDED.signal_type, coverage_percentage = EXCLUDED.coverage_percentage,
         cpm = EXCLUDED.cpm, countries = EXCLUDED.countries,
         owner_principal = EXCLUDED.owner_principal, keywords = EXCLUDED.keywords,
         activation_minutes = EXCLUDED.activation_minutes, activatable = EXCLUDED.activatable`,
      [
        g.id,
        g.name,
        g.description,
        g.data_provider,
        g.signal_type,
        g.coverage_percentage,
        g.cpm,
        g.countries,
        g.owner_principal ?? null,
        g.keywords,
        g.activation_minutes,
        g.activatable ?? true,
      ],
    );
  }
  for (const d of LIVE_DEPLOYMENTS) {
    await db.query(
      `INSERT INTO ${s}.signal_deployments (signal_agent_segment_id, destination, target, is_live,
         activation_key, deployed_at)
       VALUES ($1, $2, $3, true, $4, now()) ON CONFLICT DO NOTHING`,
      [
        d.signal,
        `platform:${d.platform}:`,
        { type: 'platform', platform: d.platform },
        { type: 'segment_id', segment_id: `${d.platform}_${d.signal}` },
      ],
    );
  }
}

/** The demo principals and their API keys (derived from the agent secrets). */
async function seedPrincipals(
  db: PoolClient,
  s: string,
  secrets: Awaited<ReturnType<typeof loadAgentSecrets>>,
): Promise<void> {
  for (const p of DEMO_PRINCIPALS) {
    await db.query(
      `INSERT INTO ${s}.principals (agent, principal_id, name, permissions, signals_access)
       VALUES ($1,$2,$3,$4,$5)
       ON CONFLICT (agent, principal_id) DO UPDATE SET name = EXCLUDED.name,
         permissions = EXCLUDED.permissions, signals_access = EXCLUDED.signals_access`,
      [p.agent, p.principal_id, p.name, p.permissions, p.signals_access ?? true],
    );
    await db.query(
      `INSERT INTO ${s}.api_keys (key_hash, agent, principal_id) VALUES ($1,$2,$3)
       ON CONFLICT (key_hash) DO NOTHING`,
      [hashApiKey(demoApiKey(secrets[p.agent], p.agent, p.principal_id)), p.agent, p.principal_id],
    );
  }
}

/** The demo principals' credentials, for the start banner (and tests). */
export async function demoCredentials(pool: Pool, schema: string): Promise<DemoCredential[]> {
  const secrets = await loadAgentSecrets(pool, schema);
  const out: DemoCredential[] = [];
  for (const p of DEMO_PRINCIPALS) {
    out.push({
      agent: p.agent,
      principal_id: p.principal_id,
      name: p.name,
      api_key: demoApiKey(secrets[p.agent], p.agent, p.principal_id),
      bearer_token: await issueToken({
        secret: secrets[p.agent],
        agent: p.agent,
        sub: p.principal_id,
        permissions: p.permissions,
        ttlSeconds: 30 * 86400,
      }),
    });
  }
  return out;
}

/** Printable lines: one per credential. */
export function formatDemoCredentials(creds: DemoCredential[]): string {
  return creds
    .map((c) => `${c.agent.padEnd(8)} ${c.principal_id.padEnd(13)} X-API-Key: ${c.api_key}`)
    .join('\n');
}
