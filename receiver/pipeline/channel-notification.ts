/**
 * Persistent-channel notifications (delivery reports and impairments) ride in the task
 * envelope with `status: completed`, under the media buy's task id, but they are not the
 * task's result: each report is one more item of a stream (`sequence_number` detects gaps)
 * and an impairment is a state change of the buy (ordered by `observed_at`). Treated as
 * task observations, the second report of a buy would read as a conflicting terminal result
 * (409) and an impairment would conflict with the buy's real create result.
 *
 * So they skip task ordering and terminal convergence; their delivery key is still claimed
 * once and their `notification_id` re-emissions are still tracked.
 */
import { MEDIA_BUY_NOTIFICATION_TYPES } from '../../shared/envelope/notification-types.js';
import type { WebhookEvent } from '../../shared/envelope/parse.js';

const CHANNEL_NOTIFICATION_TYPES: ReadonlySet<string> = new Set(MEDIA_BUY_NOTIFICATION_TYPES);

/** The channel notification type of an event, or null for a task status notification. */
export function channelNotificationType(event: WebhookEvent): string | null {
  const result = event.result;
  const type =
    result !== null && typeof result === 'object' && !Array.isArray(result)
      ? (result as Record<string, unknown>).notification_type
      : undefined;
  if (typeof type === 'string' && CHANNEL_NOTIFICATION_TYPES.has(type)) return type;
  // A delivery report always names its type; one that does not is still not a task result.
  return event.taskType === 'media_buy_delivery' ? 'media_buy_delivery' : null;
}
