/**
 * The task error this part throws for bad registrations. Engineer A's
 * `shared/errors/task-errors.ts` is the home of `TaskError`; until it lands this file
 * carries a compatible stand-in so the rest of `sender/channels/` imports from one place.
 */
export type ChannelErrorCode = 'INVALID_REQUEST' | 'VALIDATION_ERROR';

const STATUS: Record<ChannelErrorCode, number> = { INVALID_REQUEST: 400, VALIDATION_ERROR: 400 };

export class TaskError extends Error {
  readonly code: ChannelErrorCode;
  readonly status: number;
  readonly field: string | undefined;
  constructor(code: ChannelErrorCode, message: string, options: { field?: string } = {}) {
    super(message);
    this.name = 'TaskError';
    this.code = code;
    this.status = STATUS[code];
    this.field = options.field;
  }
}

/** A registration or call refused: the code and the field path are the contract. */
export function channelError(code: ChannelErrorCode, message: string, field: string): TaskError {
  return new TaskError(code, message, { field });
}
