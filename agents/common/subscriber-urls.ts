/**
 * Registration-time check of subscriber URLs (`notification_configs[]` of sync_accounts
 * and sync_agent_notification_configs; issue 21 item 4): every URL a principal registers
 * passes the sender's own rules (https only, no credentials, no reserved address unless
 * the operator allows the host: sender/core/registration.ts, reached through the
 * notifications' `validateRegistration`), or the call is refused with INVALID_REQUEST
 * naming the field. Dry runs are checked the same way.
 */
import { taskError } from '../runtime/errors.js';
import type { TaskContext } from '../runtime/types.js';

export function checkSubscriberUrls(
  ctx: Pick<TaskContext, 'notifications'>,
  configs: unknown[],
  channel: 'account' | 'agent',
  field: string,
): void {
  try {
    ctx.notifications.validateRegistration?.({ subscriberConfigs: { configs, channel, field } });
  } catch (err) {
    const e = err as { field?: string; message?: string };
    throw taskError('INVALID_REQUEST', e.message ?? `${field} refused`, {
      field: e.field ?? field,
    });
  }
}
