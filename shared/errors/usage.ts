/**
 * A mistake in a command line (every command: the sidecar, the conformance kits, the CLI):
 * the command prints the message, no stack, and exits with code 2.
 */
import { SvcError } from './base.js';

export class UsageError extends SvcError {
  static override readonly code = 'ERR_USAGE';
}
