/**
 * Destinations: per origin health over the last hour and day, backlog, back-off, pause and
 * resume, a test event, and "recover" (a preview with the count, then the confirmation).
 */
import type { RecoverPreview } from '../actions.js';
import type { Destination, WindowStats } from '../store.js';
import { attemptsChart } from './chart.js';
import { html, query, type Html } from '../../../shared/console/html.js';

function pct(s: WindowStats): string {
  return s.successRate === null ? '-' : `${(s.successRate * 100).toFixed(1)} %`;
}

function ms(v: number | null): string {
  return v === null ? '-' : `${v} ms`;
}

function postButton(
  action: string,
  origin: string,
  csrf: string,
  label: string,
  ask: string,
): Html {
  return html`<form method="post" action="${action}" class="action" data-confirm="${ask}">
    <input type="hidden" name="_csrf" value="${csrf}" />
    <input type="hidden" name="origin" value="${origin}" />
    <button type="submit">${label}</button>
  </form>`;
}

function row(d: Destination, csrf: string, since: string): Html {
  return html`<tr>
    <td class="url"><a href="/deliveries${query({ origin: d.origin })}">${d.origin}</a></td>
    <td>${pct(d.hour)} <small>of ${d.hour.attempts}</small></td>
    <td>${ms(d.hour.p50Ms)} / ${ms(d.hour.p99Ms)}</td>
    <td>${pct(d.day)} <small>of ${d.day.attempts}</small></td>
    <td>${ms(d.day.p50Ms)} / ${ms(d.day.p99Ms)}</td>
    <td><a href="/deliveries${query({ origin: d.origin, status: 'pending' })}">${d.backlog}</a></td>
    <td>${d.pausedUntil ?? ''}</td>
    <td class="err">
      ${d.lastError ? html`${d.lastError.at}: ${d.lastError.status ?? ''} ${d.lastError.message ?? ''}` : ''}
    </td>
    <td>${attemptsChart(d.series)}</td>
    <td>
      ${
        d.paused
          ? html`<span class="state retrying">paused</span>
              <small>since ${d.paused.at} by ${d.paused.operator}</small>`
          : ''
      }
      ${postButton(d.paused ? '/destinations/resume' : '/destinations/pause', d.origin, csrf, d.paused ? 'Resume' : 'Pause', d.paused ? `Resume deliveries to ${d.origin}?` : `Pause deliveries to ${d.origin}? They wait (nothing is dropped) until you resume.`)}
      ${postButton('/destinations/test', d.origin, csrf, 'Send test event', `Send a test event to ${d.origin}?`)}
      <form method="get" action="/destinations/recover" class="action">
        <input type="hidden" name="origin" value="${d.origin}" />
        <label>since <input name="since" value="${since}" size="22" /></label>
        <button type="submit">Recover…</button>
      </form>
    </td>
  </tr>`;
}

export function destinationsBody(list: Destination[], csrf: string, now = new Date()): Html {
  const since = new Date(now.getTime() - 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');
  return html`<h1>Destinations</h1>
    <p class="hint">
      Attempts of the last hour and day per receiver origin. "Pause" holds a destination's
      deliveries (they wait; nothing is dropped) until "Resume". "Recover…" counts every stopped or
      expired delivery to that origin created since the time given, then, once confirmed, sends them
      again (same keys and bodies, fresh signatures).
    </p>
    <table class="list">
      <thead>
        <tr>
          <th>Origin</th>
          <th>Success, 1 h</th>
          <th>p50 / p99, 1 h</th>
          <th>Success, 24 h</th>
          <th>p50 / p99, 24 h</th>
          <th>Backlog</th>
          <th>Paused by 429 until</th>
          <th>Last error</th>
          <th>Attempts per hour, 24 h</th>
          <th></th>
        </tr>
      </thead>
      <tbody>
        ${
          list.length
            ? list.map((d) => row(d, csrf, since))
            : html`<tr>
                <td colspan="10" class="empty">No attempt in the last day.</td>
              </tr>`
        }
      </tbody>
    </table>`;
}

/** The bulk redeliver's confirmation: how many, to where, since when, and the button. */
export function recoverPreviewBody(p: RecoverPreview, csrf: string): Html {
  const runs = Math.ceil(p.count / p.perCall);
  return html`<h1>Recover ${p.origin}</h1>
    <p id="recover-preview">
      <strong>${p.count}</strong> stopped or expired deliveries to <code>${p.origin}</code>
      created since ${p.since} would be sent again (same keys and bodies, fresh signatures).
    </p>
    ${
      p.count === 0
        ? html`<p class="hint">Nothing to recover.</p>`
        : html`${
              runs > 1
                ? html`<p class="hint">
                    One run takes at most ${p.perCall}: this needs ${runs} runs (the page offers the
                    next one; a run cut short is picked up where it stopped).
                  </p>`
                : ''
            }
            <form method="post" action="/destinations/recover" class="action">
              <input type="hidden" name="_csrf" value="${csrf}" />
              <input type="hidden" name="origin" value="${p.origin}" />
              <input type="hidden" name="since" value="${p.since}" />
              <button type="submit">Send ${Math.min(p.count, p.perCall)} again</button>
            </form>`
    }
    <p><a href="/destinations">Back to destinations</a></p>`;
}
