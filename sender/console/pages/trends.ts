/**
 * Trends: the charts (drawn by uPlot, served from the package, from `/api/trends`) over
 * tables of the same figures, readable without JavaScript.
 */
import { TREND_RANGES, type Trends } from '../trends.js';
import { html, type Html } from '../../../shared/console/html.js';

const when = (iso: string) => iso.replace('T', ' ').replace(/:00\.000Z$/, 'Z');
const ms = (v: number | null) => (v === null ? '-' : String(v));

export function trendsBody(t: Trends): Html {
  const src = `/api/trends?range=${t.range}`;
  return html`<h1>Trends</h1>
    <p class="ranges">
      ${TREND_RANGES.map((r) =>
        r === t.range
          ? html`<strong>last ${r}</strong> `
          : html`<a href="/trends?range=${r}">last ${r}</a> `,
      )}
      <span class="hint"
        >per ${t.step}${t.step === 'hour' ? '; latency from 25 %-wide histogram buckets' : ''}</span
      >
    </p>
    <h2>Attempts by outcome</h2>
    <div class="chart" data-chart="outcomes" data-src="${src}" data-series="succeeded,failed"></div>
    <h2>Attempt latency, p50 and p99 (ms)</h2>
    <div
      class="chart"
      data-chart="latency"
      data-src="${src}"
      data-series="p50Ms,p99Ms"
      data-labels="p50 ms,p99 ms"
    ></div>
    <details open>
      <summary>The figures</summary>
      <table class="list" id="trend-table">
        <thead>
          <tr>
            <th>From</th>
            <th>Succeeded</th>
            <th>Failed</th>
            <th>p50 ms</th>
            <th>p99 ms</th>
          </tr>
        </thead>
        <tbody>
          ${
            t.points.length
              ? t.points.map(
                  (p) =>
                    html`<tr data-at="${p.at}">
                      <td>${when(p.at)}</td>
                      <td>${p.succeeded}</td>
                      <td>${p.failed}</td>
                      <td>${ms(p.p50Ms)}</td>
                      <td>${ms(p.p99Ms)}</td>
                    </tr>`,
                )
              : html`<tr>
                  <td colspan="5" class="empty">No attempt in this range.</td>
                </tr>`
          }
        </tbody>
      </table>
    </details>
    <h2>Failing destinations</h2>
    <table class="list" id="failing">
      <thead>
        <tr>
          <th>Origin</th>
          <th>Failed attempts</th>
          <th>Attempts</th>
          <th>Failure rate</th>
        </tr>
      </thead>
      <tbody>
        ${
          t.failing.length
            ? t.failing.map(
                (d) =>
                  html`<tr>
                    <td class="url">
                      <a href="/deliveries?origin=${encodeURIComponent(d.origin)}">${d.origin}</a>
                    </td>
                    <td>${d.failed}</td>
                    <td>${d.attempts}</td>
                    <td>${(d.failureRate * 100).toFixed(1)} %</td>
                  </tr>`,
              )
            : html`<tr>
                <td colspan="4" class="empty">No failed attempt in this range.</td>
              </tr>`
        }
      </tbody>
    </table>`;
}
