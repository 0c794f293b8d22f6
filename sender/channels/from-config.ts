/** MediaBuyChannels options from the environment (`shared/config.ts`). */
import type { Config } from '../../shared/config.js';
import { wallClock } from './clock.js';
import type { MediaBuyChannelsOptions } from './media-buy-channels.js';

export function channelOptionsFromConfig(
  config: Pick<
    Config,
    | 'SVC_IMPAIRMENT_WINDOW_SECONDS'
    | 'SVC_IMPAIRMENT_FAST_WINDOW_SECONDS'
    | 'SVC_CHANNEL_TICK_MS'
    | 'SVC_SENDER_ALLOW_HOSTS'
    | 'SVC_PROTOCOL_VERSION'
    | 'SVC_REPORT_AGGREGATION'
  >,
): Pick<
  MediaBuyChannelsOptions,
  'coalescence' | 'reportingClock' | 'allowHosts' | 'protocolVersion' | 'aggregateReports'
> {
  return {
    protocolVersion: config.SVC_PROTOCOL_VERSION,
    coalescence: {
      generalSeconds: config.SVC_IMPAIRMENT_WINDOW_SECONDS,
      latencySensitiveSeconds: config.SVC_IMPAIRMENT_FAST_WINDOW_SECONDS,
    },
    reportingClock: wallClock(config.SVC_CHANNEL_TICK_MS),
    allowHosts: config.SVC_SENDER_ALLOW_HOSTS.split(',').filter((h) => h.length > 0),
    aggregateReports: config.SVC_REPORT_AGGREGATION === '1',
  };
}
