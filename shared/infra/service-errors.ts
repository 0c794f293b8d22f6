/** A backing service (PostgreSQL, Redis) that is missing: the message says which, where, and what to do. */
export class ServiceUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServiceUnavailableError';
  }
}
