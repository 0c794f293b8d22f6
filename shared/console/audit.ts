/**
 * The Audit page of both consoles (the seller's and the sidecar's): every operator action,
 * newest first, with who did it, through what (console, API, CLI), on what and with what.
 */
import { html, type Html } from './html.js';

/** One audited operator action as either console's store reads it. */
export interface AuditEntry {
  at: string;
  operator: string;
  via: string;
  action: string;
  target: string;
  detail: Record<string, unknown>;
}

export function auditBody(list: AuditEntry[]): Html {
  return html`<h1>Audit</h1>
    <table class="list" id="audit">
      <thead>
        <tr>
          <th>Time</th>
          <th>Operator</th>
          <th>Via</th>
          <th>Action</th>
          <th>Target</th>
          <th>Detail</th>
        </tr>
      </thead>
      <tbody>
        ${
          list.length
            ? list.map(
                (a) =>
                  html`<tr>
                    <td>${a.at}</td>
                    <td>${a.operator}</td>
                    <td>${a.via}</td>
                    <td>${a.action}</td>
                    <td class="url"><code>${a.target}</code></td>
                    <td><code>${JSON.stringify(a.detail)}</code></td>
                  </tr>`,
              )
            : html`<tr>
                <td colspan="6" class="empty">No action yet.</td>
              </tr>`
        }
      </tbody>
    </table>`;
}
