/**
 * The sidecar console's pages: overview (refusals by code and sender), events, senders;
 * the published events and the audit are in pages-published.ts.
 */
import { html, type Html, type Renderable } from '../../shared/console/html.js';
import type { AnswersByCode, EventFilter, EventRow, RejectionGroup } from './store.js';

export interface SenderView {
  sender: string;
  kids: string[];
  jwksUri: string | null;
  lastFetch: string | null;
  failure: string | null;
  revocation: RevocationView[];
}

/** A polled revocation list as the console shows it (no secret in it: URLs and times). */
export interface RevocationView {
  url: string;
  /** The sender it belongs to; null for a list governing every sender. */
  sender: string | null;
  lastFetch: string | null;
  nextUpdate: string | null;
  staleAt: string | null;
  stale: boolean;
}

function revocationCell(list: RevocationView[]): Html {
  if (list.length === 0) return html`<span class="empty">no list</span>`;
  return html`${list.map(
    (l) =>
      html`<div class="revocation">
        <span class="state ${l.stale ? 'stopped' : 'delivered'}"
          >${l.stale ? 'stale' : 'fresh'}</span
        >
        <span class="url">${l.url}</span>${l.sender === null ? ' (all senders)' : ''}<br />
        last fetch ${l.lastFetch ?? 'never'}; next_update ${l.nextUpdate ?? '-'};
        ${l.stale ? (l.staleAt ? `stale since ${l.staleAt}` : 'never loaded') : `stale after ${l.staleAt}`}
      </div>`,
  )}`;
}

export interface Totals {
  byStatus: Array<{ status: string; count: number }>;
  queueBacklog: number | null;
  target: string;
}

export function layout(
  title: string,
  nav: string,
  operator: string,
  csrf: string,
  body: Renderable,
): Html {
  const link = (href: string, label: string) =>
    html`<a href="${href}" ${nav === href ? html`aria-current="page"` : ''}>${label}</a>`;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <title>${title} · receiver console</title>
        <link rel="stylesheet" href="/static/console.css" />
        <link rel="stylesheet" href="/static/uplot.css" />
        <script src="/static/uplot.js" defer></script>
        <script src="/static/charts.js" defer></script>
      </head>
      <body>
        <header>
          <span class="brand">receiver sidecar</span>
          <nav>
            ${link('/', 'Overview')} ${link('/events', 'Events')} ${link('/published', 'Published')}
            ${link('/senders', 'Senders')} ${link('/audit', 'Audit')}
          </nav>
          <form method="post" action="/logout" class="signout">
            <span class="who">${operator}</span>
            <input type="hidden" name="_csrf" value="${csrf}" />
            <button type="submit">Sign out</button>
          </form>
        </header>
        <main>${body}</main>
      </body>
    </html>`;
}

export function loginPage(error: string | null): Html {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <title>Sign in · receiver console</title>
        <link rel="stylesheet" href="/static/console.css" />
      </head>
      <body class="login">
        <main>
          <h1>Receiver sidecar console</h1>
          <form method="post" action="/login">
            <p>
              Sign in with the console token (<code>receiver_console.token</code> in the credentials
              file, or <code>--console-token</code>).
            </p>
            ${error ? html`<p class="flash error" role="alert">${error}</p>` : ''}
            <label
              >Token <input type="password" name="token" autocomplete="current-password" required
            /></label>
            <button type="submit">Sign in</button>
          </form>
        </main>
      </body>
    </html>`;
}

/** Answers per hour and code over the last day: the chart, and its table beneath. */
function answersSection(a: AnswersByCode): Html {
  return html`<h2>Answers by code, last 24 hours</h2>
    <div
      class="chart"
      data-chart="answers"
      data-src="/api/answers"
      data-series="${a.codes.join(',')}"
    ></div>
    <table class="list" id="answers">
      <thead>
        <tr>
          <th>Hour</th>
          ${a.codes.map((c) => html`<th>${c}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${
          a.points.length
            ? a.points.map(
                (p) =>
                  html`<tr data-at="${p.at}">
                    <td>${p.at.replace('T', ' ').replace(/:00:00\.000Z$/, ':00Z')}</td>
                    ${a.codes.map((c) => html`<td>${String(p[c] ?? 0)}</td>`)}
                  </tr>`,
              )
            : html`<tr>
                <td class="empty">No answer in the last day.</td>
              </tr>`
        }
      </tbody>
    </table>`;
}

export function overviewBody(
  groups: RejectionGroup[],
  totals: Totals,
  answers: AnswersByCode = { codes: [], points: [] },
): Html {
  return html`<h1>Overview</h1>
    <p class="hint">
      Events are ${totals.target}.
      ${totals.queueBacklog === null ? '' : html`Queue backlog: <strong id="backlog">${totals.queueBacklog}</strong> events not yet acknowledged by the app.`}
    </p>
    <h2>Answers since this process started</h2>
    <p>
      ${totals.byStatus.map((s) => html`<span class="state">HTTP ${s.status}: ${s.count}</span> `)}
    </p>
    ${answersSection(answers)}
    <h2>Refusals, duplicates and conflicts by code and sender</h2>
    <table class="list" id="rejections">
      <thead>
        <tr>
          <th>Code</th>
          <th>Sender</th>
          <th>HTTP</th>
          <th>Last hour</th>
          <th>Last day</th>
          <th>Last seen</th>
        </tr>
      </thead>
      <tbody>
        ${
          groups.length
            ? groups.map(
                (g) =>
                  html`<tr>
                    <td><a href="/events?code=${encodeURIComponent(g.code)}">${g.code}</a></td>
                    <td>${g.sender}</td>
                    <td>${g.httpStatus}</td>
                    <td>${g.lastHour}</td>
                    <td>${g.lastDay}</td>
                    <td>${g.lastAt}</td>
                  </tr>`,
              )
            : html`<tr>
                <td colspan="6" class="empty">Nothing refused in the last day.</td>
              </tr>`
        }
      </tbody>
    </table>`;
}

export function eventsBody(f: EventFilter, rows: EventRow[]): Html {
  const last = rows.at(-1);
  const q = new URLSearchParams();
  if (f.code) q.set('code', f.code);
  if (f.sender) q.set('sender', f.sender);
  if (f.key) q.set('key', f.key);
  if (last) q.set('before', last.id);
  return html`<h1>Events</h1>
    <form method="get" action="/events" class="filters">
      <label
        >Code
        <input
          name="code"
          value="${f.code ?? ''}"
          placeholder="published, webhook_signature_key_unknown..."
      /></label>
      <label>Sender <input name="sender" value="${f.sender ?? ''}" /></label>
      <label>Idempotency key <input name="key" value="${f.key ?? ''}" /></label>
      <button type="submit">Filter</button> <a href="/events">clear</a>
    </form>
    <table class="list" id="events">
      <thead>
        <tr>
          <th>Time</th>
          <th>HTTP</th>
          <th>Code</th>
          <th>Sender</th>
          <th>Key id</th>
          <th>Task</th>
          <th>Status</th>
          <th>Idempotency key</th>
        </tr>
      </thead>
      <tbody>
        ${
          rows.length
            ? rows.map(
                (e) =>
                  html`<tr>
                    <td>${e.at}</td>
                    <td>${e.httpStatus}</td>
                    <td>
                      <span class="state ${e.httpStatus === 200 ? 'success' : 'failed'}"
                        >${e.code}</span
                      >
                    </td>
                    <td>${e.sender ?? ''}</td>
                    <td>${e.keyid ?? ''}</td>
                    <td>${e.taskId ?? ''}</td>
                    <td>${e.eventStatus ?? ''}</td>
                    <td><code>${e.idempotencyKey ?? ''}</code></td>
                  </tr>`,
              )
            : html`<tr>
                <td colspan="8" class="empty">No event matches.</td>
              </tr>`
        }
      </tbody>
    </table>
    ${rows.length === 100 ? html`<p><a rel="next" href="/events?${q.toString()}">Older events</a></p>` : ''}`;
}

export function sendersBody(list: SenderView[]): Html {
  return html`<h1>Senders</h1>
    <p class="hint">Keys as this process holds them (public key ids only; no secret is shown).</p>
    <table class="list" id="senders">
      <thead>
        <tr>
          <th>Sender</th>
          <th>Key ids</th>
          <th>Keys from</th>
          <th>Last fetch</th>
          <th>Discovery error</th>
          <th>Revocation list</th>
        </tr>
      </thead>
      <tbody>
        ${list.map(
          (s) =>
            html`<tr>
              <td>${s.sender}</td>
              <td>
                ${s.kids.length ? s.kids.map((k) => html`<code>${k}</code> `) : html`<span class="empty">none yet</span>`}
              </td>
              <td class="url">${s.jwksUri ?? 'inline (trust file)'}</td>
              <td>${s.lastFetch ?? '-'}</td>
              <td class="err">${s.failure ?? ''}</td>
              <td>${revocationCell(s.revocation)}</td>
            </tr>`,
        )}
      </tbody>
    </table>`;
}
