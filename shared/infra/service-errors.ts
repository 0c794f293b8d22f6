/** A backing service (PostgreSQL, Redis) that is missing: the message says which, where, and what to do. */
import { SvcError } from '../errors/base.js';

export class ServiceUnavailableError extends SvcError {
  static override readonly code = 'ERR_SERVICE_UNAVAILABLE';

  constructor(message: string) {
    super(message);
    this.name = 'ServiceUnavailableError';
  }
}
