/** One delivery: what it is, why it stands where it stands, its body and its attempts. */
import type { Attempt, DeliveryDetail } from '../store.js';
import { stateBadge } from './deliveries.js';
import { attemptsInFull } from './attempt.js';
import { html, type Html } from '../../../shared/console/html.js';

function when(iso: string | null): string {
  return iso ? iso.replace('T', ' ').replace(/Z$/, 'Z') : '';
}

function attemptRow(a: Attempt): Html {
  return html`<tr class="attempt ${a.status}">
    <td>${a.attempt}</td>
    <td><span class="state ${a.status}">${a.status}</span></td>
    <td>${when(a.firedAt)}</td>
    <td>${a.httpStatus ?? ''}</td>
    <td>${a.responseTimeMs === null ? '' : `${a.responseTimeMs} ms`}</td>
    <td class="err">${a.error ?? ''}</td>
    <td class="snippet">
      ${a.responseSnippet === null ? '' : html`<code>${a.responseSnippet}</code>`}
    </td>
    <td><code>${a.keyId ?? ''}</code></td>
    <td>${a.requestedBy ?? ''}</td>
  </tr>`;
}

/** Why the delivery is where it is, in one sentence. */
function verdict(d: DeliveryDetail): string {
  switch (d.state) {
    case 'delivered':
      return `Delivered (HTTP ${d.lastStatus ?? '2xx'}) at ${when(d.completedAt)}.`;
    case 'stopped':
      return `Stopped at ${when(d.completedAt)}: ${d.lastError ?? 'no reason recorded'}${d.lastStatus ? ` (HTTP ${d.lastStatus})` : ''}. The receiver's answer means retrying cannot help; redeliver once it is fixed.`;
    case 'expired':
      return `Expired at ${when(d.completedAt)}: the retry horizon (${d.horizonSeconds} s from the first attempt) passed; last answer ${d.lastError ?? 'none'}${d.lastStatus ? ` (HTTP ${d.lastStatus})` : ''}.`;
    default:
      return d.attempts === 0
        ? `Waiting for its first attempt (due ${when(d.nextAttemptAt)}).`
        : `Retrying: attempt ${d.attempts + 1} is due ${when(d.nextAttemptAt)}; last answer ${d.lastError ?? 'none'}${d.lastStatus ? ` (HTTP ${d.lastStatus})` : ''}.`;
  }
}

/** Redeliver, offered once the delivery is no longer pending. */
function redeliverAction(d: DeliveryDetail, csrf: string): Html {
  return d.state !== 'pending'
    ? html`<form
        method="post"
        action="/deliveries/${d.id}/redeliver"
        class="action"
        data-confirm="Send delivery ${d.id} again to ${d.url}? Same key and body, fresh signature."
      >
        <input type="hidden" name="_csrf" value="${csrf}" />
        <button type="submit">Redeliver</button>
      </form>`
    : html`<p class="hint">
        Pending deliveries are already on their way; redelivery is offered once it is delivered,
        stopped or expired.
      </p>`;
}

/**
 * After a Redeliver (`?redelivered=N`): what became of attempt N, from its record, so the
 * banner follows the attempt (on its way, delivered, failed) instead of staying green.
 */
function redeliveryBanner(d: DeliveryDetail, n: number | null): Html | string {
  if (n === null) return '';
  const a = d.attemptList.find((x) => x.attempt === n);
  if (!a || a.status === 'pending') {
    return html`<p class="flash ok" role="status">
      Redelivery requested: attempt ${n} is on its way.
    </p>`;
  }
  if (a.status === 'success') {
    return html`<p class="flash ok" role="status">
      Redelivery: attempt ${n} delivered${a.httpStatus ? ` (HTTP ${a.httpStatus})` : ''}.
    </p>`;
  }
  return html`<p class="flash error" role="status">
    Redelivery: attempt ${n} failed
    (${a.status}${a.httpStatus ? `, HTTP ${a.httpStatus}` : ''}${a.error ? `: ${a.error}` : ''}).
  </p>`;
}

/**
 * The part that live updates replace: everything that changes with an attempt (state,
 * verdict, next attempt, attempts, the redelivery's banner, and whether redelivery is
 * offered).
 */
export function deliveryLive(
  d: DeliveryDetail,
  csrf: string,
  redelivered: number | null = null,
): Html {
  // The next attempt changes with every attempt: it lives here, replaced with the rest.
  return html`${redeliveryBanner(d, redelivered)}
    <p class="verdict">${stateBadge(d)} ${verdict(d)}</p>
    <dl class="meta">
      <dt>Next attempt</dt>
      <dd class="next-attempt">${when(d.nextAttemptAt) || '-'}</dd>
      <dt>Attempts</dt>
      <dd>${d.attempts}</dd>
    </dl>
    <table class="list attempts">
      <thead>
        <tr>
          <th>Attempt</th>
          <th>Result</th>
          <th>Time</th>
          <th>HTTP</th>
          <th>Response time</th>
          <th>Error</th>
          <th>Response</th>
          <th>Key id</th>
          <th>Requested by</th>
        </tr>
      </thead>
      <tbody>
        ${
          d.attemptList.length
            ? d.attemptList.map(attemptRow)
            : html`<tr>
                <td colspan="9" class="empty">No attempt yet.</td>
              </tr>`
        }
      </tbody>
    </table>
    ${redeliverAction(d, csrf)} ${attemptsInFull(d.attemptList)}`;
}

export function deliveryBody(
  d: DeliveryDetail,
  csrf: string,
  redelivered: number | null = null,
): Html {
  return html`<h1>Delivery ${d.id}</h1>
    <dl class="meta">
      <dt>Idempotency key</dt>
      <dd><code>${d.idempotencyKey}</code></dd>
      <dt>Event type</dt>
      <dd>
        ${d.eventType}${d.eventType !== d.notificationType ? ` (${d.notificationType})` : ''}
        (${d.channel} channel)
      </dd>
      <dt>Destination</dt>
      <dd class="url">${d.url}</dd>
      <dt>Authentication</dt>
      <dd>${d.authMode}</dd>
      <dt>Media buy</dt>
      <dd>${d.mediaBuyId ?? '-'}</dd>
      <dt>Principal</dt>
      <dd>${d.principalId ?? '-'}</dd>
      <dt>Task</dt>
      <dd>${d.taskId ?? '-'}</dd>
      <dt>Created</dt>
      <dd>${when(d.createdAt)}</dd>
      <dt>First attempt</dt>
      <dd>${when(d.firstAttemptAt) || '-'}</dd>
      <dt>Body size</dt>
      <dd>${d.payloadSizeBytes} bytes</dd>
    </dl>
    <section
      id="live"
      data-delivery="${d.id}"
      data-redelivered="${redelivered === null ? '' : String(redelivered)}"
    >
      ${deliveryLive(d, csrf, redelivered)}
    </section>
    <h2>Body as sent</h2>
    <pre class="body">${d.bodyPretty}</pre>`;
}
