/** A media buy's persistent channels: what agents and NotificationCore use. */
export { MediaBuyChannels, type MediaBuyChannelsOptions } from './media-buy-channels.js';
export type {
  ChannelsConfiguredInput,
  DeliveryReportDueInput,
  ImpairmentObservedInput,
  MediaBuyTerminalInput,
  CallOptions,
} from './inputs.js';
export { acceleratedClock, wallClock, type ReportingClock } from './clock.js';
export {
  validatePushNotificationConfig,
  validateReportingWebhook,
  deliveryAuthFor,
  type UrlPolicy,
} from './config-validation.js';
export {
  DEFAULT_LATENCY_SENSITIVE_REASON_CODES,
  GENERAL_WINDOW_MAX_SECONDS,
  LATENCY_SENSITIVE_WINDOW_MAX_SECONDS,
  validateImpairment,
  type CoalescenceOptions,
  type ImpairmentKind,
} from './impairment-kinds.js';
export { CHANNEL_MIGRATIONS } from './migrations.js';
export * from './types.js';
export { channelOptionsFromConfig } from './from-config.js';
