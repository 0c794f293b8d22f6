/**
 * OAuth clients: every dynamically registered client with the principal it acts as, and the
 * operator's bind and unbind (issue 21: a registered client has no rights until bound). The
 * same action as `svc oauth clients bind|unbind` and `POST /api/oauth-clients/bind|unbind`;
 * each change is audited by the bindings themselves.
 */
import { html, type Html } from '../../../shared/console/html.js';

/** A client as `OAuthClientAdmin.list()` gives it (agents/oauth/bindings.ts ClientRow). */
export interface ClientView {
  agent: string;
  client_id: string;
  client_name: string | null;
  grant_types: string[];
  registered_at: string | null;
  expires_at: string | null;
  principal_id: string | null;
  bound_by: string | null;
  bound_at: string | null;
}

function actions(c: ClientView, csrf: string): Html {
  const hidden = html`<input type="hidden" name="_csrf" value="${csrf}" />
    <input type="hidden" name="agent" value="${c.agent}" />
    <input type="hidden" name="client_id" value="${c.client_id}" />`;
  if (c.principal_id) {
    return html`<form
      method="post"
      action="/oauth-clients/unbind"
      class="action"
      data-confirm="Unbind ${c.client_id}? Its tokens stop acting as ${c.principal_id} at once."
    >
      ${hidden}<button type="submit">Unbind</button>
    </form>`;
  }
  return html`<form method="post" action="/oauth-clients/bind" class="action">
    ${hidden}<label>principal <input name="principal_id" size="18" required /></label>
    <button type="submit">Bind</button>
  </form>`;
}

export function oauthClientsBody(list: ClientView[], csrf: string): Html {
  return html`<h1>OAuth clients</h1>
    <p>
      A client registered through <code>/oauth/register</code> acts as nobody until it is bound to a
      principal of its agent; its scopes never exceed that principal's permissions. Unbound clients
      are forgotten a day after registration.
    </p>
    <table class="list">
      <thead>
        <tr>
          <th>Agent</th>
          <th>Client</th>
          <th>Name</th>
          <th>Grants</th>
          <th>Registered</th>
          <th>Acts as</th>
          <th>Bound by</th>
          <th></th>
        </tr>
      </thead>
      <tbody>
        ${
          list.length
            ? list.map(
                (c) =>
                  html`<tr>
                    <td>${c.agent}</td>
                    <td><code>${c.client_id}</code></td>
                    <td>${c.client_name ?? ''}</td>
                    <td>${c.grant_types.join(', ')}</td>
                    <td>${c.registered_at ?? ''}</td>
                    <td>
                      ${c.principal_id ?? html`<span class="empty">nobody (expires ${c.expires_at ?? ''})</span>`}
                    </td>
                    <td>${c.bound_by ? `${c.bound_by} at ${c.bound_at ?? ''}` : ''}</td>
                    <td>${actions(c, csrf)}</td>
                  </tr>`,
              )
            : html`<tr>
                <td colspan="8" class="empty">No client registered.</td>
              </tr>`
        }
      </tbody>
    </table>`;
}
