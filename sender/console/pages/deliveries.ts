/** Deliveries: the filter form, one page of rows (newest first) and the link to older ones. */
import { DELIVERY_STATES, filterParams, type DeliveryFilter } from '../filters.js';
import type { DeliveryPage, DeliverySummary } from '../store.js';
import { html, query, type Html } from '../../../shared/console/html.js';

function when(iso: string | null): string {
  return iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '';
}

/**
 * The state badge: a pending delivery that has failed attempts is `retrying` (orange, with
 * its count), not the yellow `pending` of one never tried.
 */
export function stateBadge(d: Pick<DeliverySummary, 'state' | 'attempts'>): Html {
  if (d.state === 'pending' && d.attempts > 0) {
    return html`<span class="state retrying" title="pending after ${d.attempts} failed attempts"
      >retrying (${d.attempts} failed)</span
    >`;
  }
  return html`<span class="state ${d.state}">${d.state}</span>`;
}

export function deliveryRow(d: DeliverySummary): Html {
  return html`<tr id="d-${d.id}" data-delivery="${d.id}">
    <td><a href="/deliveries/${d.id}">${d.id}</a></td>
    <td>${stateBadge(d)}</td>
    <td>
      ${d.eventType}${d.eventType !== d.notificationType ? html` <span class="hint">${d.notificationType}</span>` : ''}
    </td>
    <td class="url">${d.url}</td>
    <td>${d.mediaBuyId ?? ''}</td>
    <td>${d.principalId ?? ''}</td>
    <td>${d.attempts}</td>
    <td>
      ${d.lastStatus ?? ''}${d.lastError ? html` <span class="err">${d.lastError}</span>` : ''}
    </td>
    <td>${when(d.createdAt)}</td>
    <td>${when(d.nextAttemptAt)}</td>
  </tr>`;
}

function field(name: string, label: string, value: string | undefined, placeholder = ''): Html {
  return html`<label
    >${label}<input name="${name}" value="${value ?? ''}" placeholder="${placeholder}"
  /></label>`;
}

export function deliveriesBody(f: DeliveryFilter, page: DeliveryPage): Html {
  const p = filterParams(f);
  return html`<h1>Deliveries</h1>
    <form method="get" action="/deliveries" class="filters">
      <label
        >Status<select name="status">
          <option value="">any</option>
          ${DELIVERY_STATES.map(
            (s) =>
              html`<option value="${s}" ${f.status === s ? html` selected` : ''}>${s}</option>`,
          )}
        </select></label
      >
      ${field('origin', 'Destination', p.origin, 'https://buyer.example, host:port, *buyer*')}
      ${field('media_buy', 'Media buy', p.media_buy, 'mb_1, mb_*, *x*')}
      ${field('principal', 'Principal', p.principal, 'exact, demo*, *demo*')}
      ${field('task', 'Task', p.task, 'exact, task_*, *x*')}
      ${field('type', 'Event type', p.type, 'create_media_buy, scheduled...')}
      ${field('key', 'Idempotency key', p.key)}
      ${field('payload', 'In the payload', p.payload, 'result.media_buy_id=mb_1')}
      ${field('from', 'From', p.from, '2026-11-23T00:00:00Z')}
      ${field('to', 'To', p.to, '2026-11-24T00:00:00Z')}
      <button type="submit">Filter</button> <a href="/deliveries">clear</a>
    </form>
    <p class="hint">
      Contains (*value*) and payload searches read an index once an operator builds it:
      <a href="/search-indexes">search indexes</a>.
    </p>
    <table class="list">
      <thead>
        <tr>
          <th>#</th>
          <th>Status</th>
          <th>Event</th>
          <th>Destination</th>
          <th>Media buy</th>
          <th>Principal</th>
          <th>Attempts</th>
          <th>Last answer</th>
          <th>Created</th>
          <th>Next attempt</th>
        </tr>
      </thead>
      <tbody>
        ${
          page.items.length
            ? page.items.map(deliveryRow)
            : html`<tr>
                <td colspan="10" class="empty">No delivery matches.</td>
              </tr>`
        }
      </tbody>
    </table>
    ${page.next ? html`<p><a rel="next" href="/deliveries${query({ ...p, cursor: page.next })}">Older deliveries</a></p>` : ''}`;
}
