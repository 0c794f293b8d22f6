/**
 * The one error base (the `JOSEError` pattern): every error this package throws extends
 * `SvcError`, so a caller can tell ours from a platform error with one `instanceof` and
 * switch on a stable string `code` instead of parsing messages.
 *
 * - `SvcError.code` (static) names the class; the codes are listed once in ./codes.ts and
 *   documented in the README's "Errors" section. They never change once released.
 * - `err.code` (instance) is the same string, except where a class carries a finer
 *   identity: the protocol codes of `TaskError` and `WebhookVerificationError` (the public
 *   wire contract), and the reason of a family such as `SafeFetchError` (`'address_not_allowed'`).
 * - `err.name` is the class name; `err.cause` is kept when given.
 */
import type { SvcErrorCode } from './codes.js';

export interface SvcErrorOptions {
  /** The error that led to this one (standard `Error.cause`). */
  cause?: unknown;
  /** The instance's finer code, where the class has one (see the module header). */
  code?: string;
}

export class SvcError extends Error {
  /** This class's stable code (see ./codes.ts). */
  static readonly code: SvcErrorCode = 'ERR_SVC';
  /** What to switch on: the class code, or the instance's finer code. */
  readonly code: string;
  constructor(message?: string, options?: SvcErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    // new.target is the class actually constructed, so a subclass needs no name line.
    this.name = new.target.name;
    this.code = options?.code ?? (new.target as typeof SvcError).code;
  }
}
