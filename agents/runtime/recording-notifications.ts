/**
 * A NotificationCore stand-in that records every call in order (tests, and a way to run
 * the agents without a sender). Its `validateRegistration` applies the spec's minimum.
 */
import type { AgentNotifications } from './types.js';

export type RecordedCall = {
  [M in Exclude<keyof AgentNotifications, 'validateRegistration'>]: {
    method: M;
    input: Parameters<AgentNotifications[M]>[0];
  };
}[Exclude<keyof AgentNotifications, 'validateRegistration'>];

export class RecordingNotifications implements AgentNotifications {
  readonly calls: RecordedCall[] = [];

  private record(call: RecordedCall): void {
    // The transaction client is not part of what happened.
    const input: Record<string, unknown> = { ...call.input };
    delete input.client;
    this.calls.push({ method: call.method, input } as unknown as RecordedCall);
  }

  of<M extends RecordedCall['method']>(method: M): Extract<RecordedCall, { method: M }>['input'][] {
    return this.calls.filter((c) => c.method === method).map((c) => c.input) as never;
  }

  clear(): void {
    this.calls.length = 0;
  }

  async taskStatusChanged(input: Parameters<AgentNotifications['taskStatusChanged']>[0]) {
    this.record({ method: 'taskStatusChanged', input });
    return [];
  }
  async mediaBuyChannelsConfigured(
    input: Parameters<AgentNotifications['mediaBuyChannelsConfigured']>[0],
  ) {
    this.record({ method: 'mediaBuyChannelsConfigured', input });
  }
  async impairmentObserved(input: Parameters<AgentNotifications['impairmentObserved']>[0]) {
    this.record({ method: 'impairmentObserved', input });
    return [];
  }
  async mediaBuyTerminal(input: Parameters<AgentNotifications['mediaBuyTerminal']>[0]) {
    this.record({ method: 'mediaBuyTerminal', input });
    return [];
  }
  async agentEvent(input: Parameters<AgentNotifications['agentEvent']>[0]) {
    this.record({ method: 'agentEvent', input });
    return [];
  }
  async accountNotification(input: Parameters<AgentNotifications['accountNotification']>[0]) {
    this.record({ method: 'accountNotification', input });
    return [];
  }
}
