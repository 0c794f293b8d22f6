/**
 * What the agents need to know about where they run and how the seller behaves: their
 * URLs, the creative agent formats come from, approval policy, publisher properties,
 * reporting granularities and the signing posture the capability document advertises.
 */
import type { BrandProfile } from '../../shared/brand.js';
import type { AgentKind } from '../auth/principal.js';
import type { SubscriberVerifier } from '../common/subscriber-proof.js';
import type { ResponseValidationMode } from '../protocol/index.js';

export interface PublisherProperty {
  property_id: string;
  property_type: string;
  name: string;
  tags: string[];
}

export interface AuthorizedAgent {
  url: string;
  /** Property ids or tags the agent may sell; both empty = every property. */
  property_ids?: string[];
  tags?: string[];
}

export interface Publisher {
  domain: string;
  properties: PublisherProperty[];
  authorized_agents: AuthorizedAgent[];
}

/** Where the signal agent can deploy: DSP platforms and agents (sales agents). */
export interface SignalDestinations {
  /** Platforms; `accounts` limits which accounts each principal may name (absent: any). */
  platforms: Array<{ platform: string; accounts?: Record<string, string[]> }>;
  /** Agents; a private one is visible only to `visible_to` principals. */
  agents: Array<{ agent_url: string; private?: boolean; visible_to?: string[] }>;
}

/** `never`: buys go live at once; `manual`: an operator approves; number: auto after s. */
export type ApprovalPolicy = 'never' | 'manual' | { autoAfterSeconds: number };

export interface AgentSettings {
  profile: BrandProfile;
  protocolVersion: '3.1' | '3.2';
  urls: Record<AgentKind, string>;
  /** Where the creative agent serves previews: `<previewBaseUrl>/<preview_id>`. */
  previewBaseUrl: string;
  approval: ApprovalPolicy;
  publishers: Publisher[];
  signalDestinations: SignalDestinations;
  /** `reporting_capabilities.windowed_pull_granularities` (default `['hourly']`). */
  windowedPullGranularities: string[];
  /** Advertised in `webhook_signing`. */
  webhookSigning: {
    supported: boolean;
    algorithms: Array<'ed25519' | 'ecdsa-p256-sha256'>;
    legacyHmacFallback: boolean;
    deliveryRetryHorizonSeconds: number;
  };
  /** `identity.brand_json_url` of the capability document. */
  brandJsonUrl?: string;
  /** Request idempotency records live this long (seconds). */
  idempotencyTtlSeconds: number;
  /** Previews expire after this many seconds. */
  previewTtlSeconds: number;
  /** Virtual ms between the executor's progress steps of async tasks. */
  taskStepMs: number;
  /** Proof of control for account/agent subscribers (supplement §7.4); none: not checked. */
  subscriberVerifier?: SubscriberVerifier;
  /**
   * Responses checked against the published schemas (SVC_AGENTS_VALIDATE_RESPONSES):
   * `off` (production default), `warn` (log drift) or `strict` (a drift is a fault; tests).
   */
  validateResponses: ResponseValidationMode;
  /**
   * `comply_test_controller` (agents/testing/): off by default; when on, it answers only
   * sandbox principals and never touches a production account. `svc start` turns it on.
   */
  testController: boolean;
  /** Reads `webhook_activity[]` (the sender's activity log) when present. */
  webhookActivity?: {
    list(query: { principalId: string; mediaBuyId: string; limit?: number }): Promise<unknown[]>;
  };
}

export function defaultSettings(
  profile: BrandProfile,
  overrides: Partial<AgentSettings> = {},
): AgentSettings {
  return {
    profile,
    protocolVersion: '3.2',
    urls: {
      sales: 'http://127.0.0.1:3001',
      creative: 'http://127.0.0.1:3002',
      signals: 'http://127.0.0.1:3003',
    },
    previewBaseUrl: 'http://127.0.0.1:3002/previews',
    approval: { autoAfterSeconds: 60 },
    publishers: [],
    signalDestinations: {
      platforms: [
        { platform: 'the-trade-desk' },
        { platform: 'dv360', accounts: { 'demo-buyer': ['dv360-demo-001'] } },
        { platform: 'amazon-dsp' },
      ],
      agents: [
        { agent_url: overrides.urls?.sales ?? 'http://127.0.0.1:3001' },
        { agent_url: 'https://private-sales.example', private: true, visible_to: ['demo-buyer'] },
      ],
    },
    windowedPullGranularities: ['hourly'],
    webhookSigning: {
      supported: true,
      algorithms: ['ed25519', 'ecdsa-p256-sha256'],
      legacyHmacFallback: true,
      deliveryRetryHorizonSeconds: 86400,
    },
    idempotencyTtlSeconds: 86400,
    previewTtlSeconds: 86400,
    taskStepMs: 2000,
    testController: false,
    validateResponses: 'off',
    ...overrides,
  };
}
