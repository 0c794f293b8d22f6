/** Audit: every operator action, newest first. */
import type { AuditEntry } from '../store.js';
import { html, type Html } from '../../../shared/console/html.js';

export function auditBody(list: AuditEntry[]): Html {
  return html`<h1>Audit</h1>
    <table class="list">
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
                    <td class="url">${a.target}</td>
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
