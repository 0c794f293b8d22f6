/**
 * Envelope rejections on the receiver (supplement §5.7, §5.8). The ids are the contract;
 * they come after signature verification and before the idempotency claim.
 */
import { SvcError } from '../errors/base.js';

export type EnvelopeErrorId =
  | 'missing_envelope_fields'
  | 'missing_idempotency_key'
  | 'invalid_envelope_status'
  | 'invalid_envelope';

export class EnvelopeError extends SvcError {
  static override readonly code = 'ERR_ENVELOPE';

  declare readonly code: EnvelopeErrorId;
  /** Envelope members at fault, dotted paths (`status.state`), in schema order. */
  readonly fields: string[];
  /**
   * HTTP status to answer with. The supplement leaves it open (400 or 422); the spec's
   * status table gives 422 to schema validation failures, so every envelope error is 422.
   */
  readonly status = 422;
  constructor(id: EnvelopeErrorId, fields: string[], message?: string) {
    super(message ?? (fields.length ? `${id}: ${fields.join(', ')}` : id), { code: id });
    this.fields = fields;
  }

  /** Response body for the receiver: the code is the machine-readable part. */
  toJSON(): { error: { code: EnvelopeErrorId; message: string; fields: string[] } } {
    return { error: { code: this.code, message: this.message, fields: this.fields } };
  }
}
