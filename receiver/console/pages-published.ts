/**
 * The sidecar console's Published page (issue 26): each accepted event's publish outcome
 * (published, or failed and why), newest first, with a Re-publish form per event whose
 * body is kept (CSRF token in the form; published-log.ts does it and audits it), and the
 * Audit page of those actions. Every value escaped by the html template.
 */
import { html, type Html } from '../../shared/console/html.js';
import type { PublishedFilter, PublishedRow } from './published-log.js';

export { auditBody } from '../../shared/console/audit.js';

/** The banner after a Re-publish (its outcome in the query). */
function flash(q: Record<string, unknown>): Html | string {
  const id = typeof q.republished === 'string' ? q.republished : null;
  if (!id) return '';
  return q.outcome === 'published'
    ? html`<p class="flash ok" role="status">Event ${id} re-published to the app.</p>`
    : html`<p class="flash error" role="status">
        Event ${id}: the re-publish failed
        (${typeof q.error === 'string' ? q.error : 'see the row'}).
      </p>`;
}

function republishForm(r: PublishedRow, csrf: string): Html | string {
  if (!r.bodyKept) return html`<span class="hint">body not kept</span>`;
  return html`<form method="post" action="/published/${r.id}/republish" class="action">
    <input type="hidden" name="_csrf" value="${csrf}" />
    <button type="submit">Re-publish</button>
  </form>`;
}

function row(r: PublishedRow, csrf: string): Html {
  return html`<tr id="published-${r.id}">
    <td>${r.lastAt}</td>
    <td>${r.sender}</td>
    <td><code>${r.idempotencyKey}</code></td>
    <td>${r.taskId ?? ''}</td>
    <td>${r.status ?? ''}</td>
    <td>
      <span class="state ${r.outcome === 'published' ? 'success' : 'failed'}">${r.outcome}</span>
      ${r.error ? html`<span class="err">${r.error}</span>` : ''}
    </td>
    <td>${r.publishes}</td>
    <td>${r.republishedBy ?? ''}</td>
    <td>${republishForm(r, csrf)}</td>
  </tr>`;
}

export function publishedBody(
  f: PublishedFilter,
  rows: PublishedRow[],
  csrf: string,
  q: Record<string, unknown>,
): Html {
  const next = new URLSearchParams();
  if (f.sender) next.set('sender', f.sender);
  if (f.key) next.set('key', f.key);
  if (f.outcome) next.set('outcome', f.outcome);
  const last = rows.at(-1);
  if (last) next.set('before', last.id);
  return html`${flash(q)}
    <h1>Published to the app</h1>
    <p class="hint">
      Each accepted event and how its hand-over to the app went. Re-publish sends it again with the
      same idempotency key, flagged as a redelivery.
    </p>
    <form method="get" action="/published" class="filters">
      <label>Sender <input name="sender" value="${f.sender ?? ''}" /></label>
      <label>Idempotency key <input name="key" value="${f.key ?? ''}" /></label>
      <label
        >Outcome
        <select name="outcome">
          <option value="">any</option>
          <option value="published" ${f.outcome === 'published' ? html`selected` : ''}>
            published
          </option>
          <option value="failed" ${f.outcome === 'failed' ? html`selected` : ''}>failed</option>
        </select></label
      >
      <button type="submit">Filter</button> <a href="/published">clear</a>
    </form>
    <table class="list" id="published">
      <thead>
        <tr>
          <th>Last publish</th>
          <th>Sender</th>
          <th>Idempotency key</th>
          <th>Task</th>
          <th>Status</th>
          <th>Outcome</th>
          <th>Publishes</th>
          <th>Re-published by</th>
          <th></th>
        </tr>
      </thead>
      <tbody>
        ${
          rows.length
            ? rows.map((r) => row(r, csrf))
            : html`<tr>
                <td colspan="9" class="empty">No published event matches.</td>
              </tr>`
        }
      </tbody>
    </table>
    ${
      rows.length === 100
        ? html`<p><a rel="next" href="/published?${next.toString()}">Older events</a></p>`
        : ''
    }`;
}
