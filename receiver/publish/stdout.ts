/**
 * Publication as a line on standard output (`svc receiver --forward stdout`): each
 * verified event as one JSON object, for a first try without an app to forward to, or a
 * shell pipeline (`| jq`). The line carries what a forwarded event's headers carry, plus the
 * verified envelope; log lines (which have `level` and `msg`) never do.
 */
import type { Publisher, ReceivedEvent } from './types.js';

/** The `--forward` value that selects this publisher. */
export const STDOUT_TARGET = 'stdout';

export class StdoutPublisher implements Publisher {
  private readonly write: (line: string) => void;

  constructor(write: (line: string) => void = (line) => void process.stdout.write(line)) {
    this.write = write;
  }

  async publish(e: ReceivedEvent): Promise<void> {
    const line = {
      webhook: {
        sender: e.sender,
        idempotency_key: e.idempotencyKey,
        task_id: e.taskId,
        operation_id: e.operationId,
        task_type: e.taskType,
        status: e.status,
        stale: e.stale,
        re_emission: e.reEmission,
        redelivery: e.redelivery,
        format: e.format,
        payload: e.payload,
      },
    };
    this.write(`${JSON.stringify(line)}\n`);
  }
}
