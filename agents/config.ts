/** Agent settings from the validated environment (shared/config.ts). */
import type { Config } from '../shared/config.js';
import type { ApprovalPolicy, AgentSettings } from './runtime/settings.js';

export function approvalPolicy(value: string): ApprovalPolicy {
  if (value === 'manual' || value === 'never') return value;
  return { autoAfterSeconds: Number(value) };
}

export function agentOptionsFromConfig(config: Config): {
  clockSpeed: number;
  settings: Partial<AgentSettings>;
} {
  return {
    clockSpeed: config.SVC_AGENTS_CLOCK_SPEED,
    settings: {
      protocolVersion: config.SVC_PROTOCOL_VERSION,
      approval: approvalPolicy(config.SVC_AGENTS_APPROVAL),
      validateResponses: config.SVC_AGENTS_VALIDATE_RESPONSES,
      windowedPullGranularities:
        config.SVC_AGENTS_WINDOWED_GRANULARITIES.split(',').filter(Boolean),
      webhookSigning: {
        supported: true,
        algorithms: ['ed25519', 'ecdsa-p256-sha256'],
        legacyHmacFallback: true,
        deliveryRetryHorizonSeconds: config.SVC_RETRY_HORIZON_SECONDS,
      },
    },
  };
}
