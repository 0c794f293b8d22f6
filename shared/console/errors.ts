/** Bad input to a console (pages, JSON API, CLI): names the field and what it takes. */
import { SvcError } from '../errors/base.js';

export class ConsoleInputError extends SvcError {
  static override readonly code = 'ERR_CONSOLE_INPUT';

  declare readonly code: 'INVALID_REQUEST';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`, { code: 'INVALID_REQUEST' });
    this.name = 'ConsoleInputError';
  }
}
