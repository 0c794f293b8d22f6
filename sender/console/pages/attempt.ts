/**
 * An attempt in full (issue 26), under the delivery's attempts table: the request's
 * headers as sent (signature headers included), the response's status, headers and first
 * bytes, and where the time went. What the worker stored (sender/delivery/exchange.ts:
 * bounded, credentials masked); every value escaped like any other. No JavaScript needed:
 * a `<details>` per attempt.
 */
import type { AttemptTiming } from '../../delivery/timing.js';
import type { Attempt } from '../store.js';
import { html, type Html } from '../../../shared/console/html.js';

/** "DNS 1.2 ms · connect 3.4 ms · first byte 20 ms · total 21 ms" (the parts known). */
export function timingText(t: AttemptTiming): string {
  const parts: string[] = [];
  if (t.reused) parts.push('kept-alive connection');
  if (t.dnsMs !== undefined) parts.push(`DNS ${t.dnsMs} ms`);
  if (t.connectMs !== undefined) parts.push(`connect ${t.connectMs} ms`);
  if (t.ttfbMs !== undefined) parts.push(`first byte ${t.ttfbMs} ms`);
  if (t.totalMs !== undefined) parts.push(`total ${t.totalMs} ms`);
  return parts.join(' · ') || 'no timing recorded';
}

function headerTable(caption: string, headers: Record<string, string>, note = ''): Html {
  const rows = Object.entries(headers);
  return html`<table class="list headers">
    <caption>
      ${caption}${note}
    </caption>
    <tbody>
      ${
        rows.length
          ? rows.map(
              ([k, v]) =>
                html`<tr>
                  <th scope="row"><code>${k}</code></th>
                  <td class="snippet"><code>${v}</code></td>
                </tr>`,
            )
          : html`<tr>
              <td colspan="2" class="empty">none</td>
            </tr>`
      }
    </tbody>
  </table>`;
}

function attemptInFull(a: Attempt): Html {
  const x = a.exchange!;
  const answer = a.httpStatus !== null ? `HTTP ${a.httpStatus}` : (a.error ?? a.status);
  return html`<details class="exchange" id="attempt-${a.attempt}">
    <summary>Attempt ${a.attempt}: ${answer} · ${timingText(x.timing)}</summary>
    ${headerTable('Request headers', x.request.headers)}
    ${
      x.response
        ? html`${headerTable(
              `Response headers (HTTP ${a.httpStatus ?? '?'})`,
              x.response.headers,
              x.response.truncated ? ' (first 40 kept)' : '',
            )}
            <p>Response body, first bytes:</p>
            <pre class="response">${a.responseSnippet ?? '(empty)'}</pre>`
        : html`<p class="hint">No response: ${a.error ?? a.status}.</p>`
    }
  </details>`;
}

/** Every attempt that has its exchange recorded, newest first; nothing when none has. */
export function attemptsInFull(attempts: Attempt[]): Html | string {
  const full = attempts.filter((a) => a.exchange).reverse();
  if (full.length === 0) return '';
  return html`<h2>Attempts in full</h2>
    ${full.map(attemptInFull)}`;
}
