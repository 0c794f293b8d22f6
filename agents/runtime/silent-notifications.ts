/** Notifications that go nowhere: dry runs must not fire a webhook. */
import type { AgentNotifications } from './types.js';

export const silentNotifications: AgentNotifications = {
  taskStatusChanged: async () => [],
  mediaBuyChannelsConfigured: async () => {},
  impairmentObserved: async () => [],
  mediaBuyTerminal: async () => [],
  agentEvent: async () => [],
  accountNotification: async () => [],
};
