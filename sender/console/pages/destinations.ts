/** Destinations: per origin health over the last hour and day, backlog, and "recover". */
import type { Destination, WindowStats } from '../store.js';
import { attemptsChart } from './chart.js';
import { html, query, type Html } from '../../../shared/console/html.js';

function pct(s: WindowStats): string {
  return s.successRate === null ? '-' : `${(s.successRate * 100).toFixed(1)} %`;
}

function ms(v: number | null): string {
  return v === null ? '-' : `${v} ms`;
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
      <form
        method="post"
        action="/destinations/recover"
        class="action"
        data-confirm="Send again every stopped or expired delivery to ${d.origin} created since the time given?"
      >
        <input type="hidden" name="_csrf" value="${csrf}" />
        <input type="hidden" name="origin" value="${d.origin}" />
        <label>since <input name="since" value="${since}" size="22" /></label>
        <button type="submit">Recover</button>
      </form>
    </td>
  </tr>`;
}

export function destinationsBody(list: Destination[], csrf: string, now = new Date()): Html {
  const since = new Date(now.getTime() - 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');
  return html`<h1>Destinations</h1>
    <p class="hint">
      Attempts of the last hour and day per receiver origin. "Recover" sends every stopped or
      expired delivery to that origin created since the time given again (same keys and bodies,
      fresh signatures).
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
