/** Bad input to a console (pages, JSON API, CLI): names the field and what it takes. */
export class ConsoleInputError extends Error {
  readonly code = 'INVALID_REQUEST';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = 'ConsoleInputError';
  }
}
