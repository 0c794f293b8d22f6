/**
 * The sidecar console's errors (its README's JSON API): an action refused with the status
 * and stable code its answer carries (404 `NOT_FOUND`, 409 `BODY_NOT_KEPT`, 503
 * `NO_PUBLISHER`), and bad input (400 `INVALID_REQUEST`, naming the field).
 */
import { SvcError } from '../../shared/errors/base.js';

export class ConsoleActionFailure extends SvcError {
  static override readonly code = 'ERR_RECEIVER_CONSOLE_ACTION';

  constructor(
    readonly status: number,
    code: string,
    message: string,
  ) {
    super(message, { code });
    this.name = 'ConsoleActionFailure';
  }
}

export class ConsoleInputFailure extends SvcError {
  static override readonly code = 'ERR_RECEIVER_CONSOLE_INPUT';
  readonly status = 400;

  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`, { code: 'INVALID_REQUEST' });
    this.name = 'ConsoleInputFailure';
  }
}
