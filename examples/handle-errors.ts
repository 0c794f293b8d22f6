// Telling this package's errors apart: every error it throws extends SvcError, so one
// `instanceof` separates them from platform errors; then switch on `err.code`, never on the
// message (the codes are listed in SVC_ERROR_CODES and in the README's "Errors" table).
//   npm install svc-webhooks
import { parseTrust, SvcError, SVC_ERROR_CODES } from 'svc-webhooks/receiver';

function explain(err: unknown): string {
  if (!(err instanceof SvcError)) throw err; // not ours: let it through
  const meaning = SVC_ERROR_CODES[err.code as keyof typeof SVC_ERROR_CODES] ?? err.code;
  return `${err.name} ${err.code}: ${err.message}\n  (${meaning})`;
}

try {
  // A trust file naming a sender without an id or any way to find its keys.
  parseTrust({ senders: [{ id: '' }] });
} catch (err) {
  console.log(explain(err));
}
