/** Publication to a function in the same process (the library case). */
import type { Publisher, ReceivedEvent } from './types.js';

export type EventHandler = (event: ReceivedEvent) => unknown;

export class HandlerPublisher implements Publisher {
  private readonly handler: EventHandler;
  constructor(handler: EventHandler) {
    this.handler = handler;
  }
  async publish(event: ReceivedEvent): Promise<void> {
    await this.handler(event);
  }
}
