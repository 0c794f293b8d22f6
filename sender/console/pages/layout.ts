/** The frame every page shares: head (stylesheet, script), navigation, flash message. */
import { html, type Html, type Renderable } from '../../../shared/console/html.js';

export interface PageContext {
  title: string;
  operator: string;
  csrf: string;
  /** Which navigation entry is current. */
  nav: 'deliveries' | 'destinations' | 'trends' | 'audit' | 'oauth-clients' | null;
  /** The page draws charts: the charting library's script and stylesheet come too. */
  charts?: boolean;
  /** The OAuth clients page exists (a console of `svc start`, whose agents register clients). */
  oauthClients?: boolean;
  /** `data-live` of the body: what the script subscribes to. */
  live?: string;
  flash?: { kind: 'ok' | 'error'; text: string } | null;
  brand: string;
  /** Reload the page every this many seconds (a build in progress: no script needed). */
  refreshSeconds?: number;
}

const NAV: Array<[PageContext['nav'], string, string]> = [
  ['deliveries', '/deliveries', 'Deliveries'],
  ['destinations', '/destinations', 'Destinations'],
  ['trends', '/trends', 'Trends'],
  ['audit', '/audit', 'Audit'],
  ['oauth-clients', '/oauth-clients', 'OAuth clients'],
];

export function layout(p: PageContext, body: Renderable): Html {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="csrf-token" content="${p.csrf}" />
        ${p.refreshSeconds ? html`<meta http-equiv="refresh" content="${String(p.refreshSeconds)}" />` : ''}
        <title>${p.title} · ${p.brand} webhooks console</title>
        <link rel="stylesheet" href="/static/console.css" />
        ${
          p.charts
            ? html`<link rel="stylesheet" href="/static/uplot.css" />
                <script src="/static/uplot.js" defer></script>
                <script src="/static/charts.js" defer></script>`
            : ''
        }
        <script src="/static/console.js" defer></script>
      </head>
      <body data-live="${p.live ?? ''}">
        <header>
          <span class="brand">${p.brand} webhooks</span>
          <nav>
            ${NAV.filter(([k]) => k !== 'oauth-clients' || p.oauthClients).map(
              ([k, href, label]) =>
                html`<a href="${href}" ${k === p.nav ? html` aria-current="page"` : ''}
                  >${label}</a
                >`,
            )}
          </nav>
          <form method="post" action="/logout" class="signout">
            <span class="who">${p.operator}</span>
            <input type="hidden" name="_csrf" value="${p.csrf}" />
            <button type="submit">Sign out</button>
          </form>
        </header>
        <main>
          ${p.flash ? html`<p class="flash ${p.flash.kind}" role="status">${p.flash.text}</p>` : ''}
          ${body}
        </main>
      </body>
    </html>`;
}

/**
 * The sign-in pages' frame: no session yet, so no navigation, no script and no CSRF token
 * (the token form posts without one; the sign-in itself is rate-limited).
 */
function loginShell(brand: string, body: Html): Html {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <title>Sign in · ${brand} webhooks console</title>
        <link rel="stylesheet" href="/static/console.css" />
      </head>
      <body class="login">
        <main>
          <h1>${brand} webhooks console</h1>
          ${body}
        </main>
      </body>
    </html>`;
}

/**
 * The sign-in page: the token form, or (`oidc`, the provider's issuer) one link to the
 * provider's sign-in. `error` is shown escaped, as every value.
 */
export function loginPage(
  brand: string,
  error: string | null,
  next: string,
  oidc: string | null = null,
): Html {
  const flash = error ? html`<p class="flash error" role="alert">${error}</p>` : '';
  if (oidc) {
    return loginShell(
      brand,
      html`<p>Operators sign in through the OpenID provider <code>${oidc}</code>.</p>
        ${flash}
        <p>
          <a class="button" id="oidc-sign-in" href="/login/oidc?next=${encodeURIComponent(next)}"
            >Sign in with the provider</a
          >
        </p>`,
    );
  }
  return loginShell(
    brand,
    html`<form method="post" action="/login">
      <p>
        Sign in with the console token (<code>console.token</code> in the demo-credentials file, or
        the one given to <code>svc console</code>).
      </p>
      ${flash}
      <label
        >Token
        <input type="password" name="token" autocomplete="current-password" required autofocus
      /></label>
      <input type="hidden" name="next" value="${next}" />
      <button type="submit">Sign in</button>
    </form>`,
  );
}

export function errorPage(p: PageContext, status: number, message: string): Html {
  return layout(
    p,
    html`<h1>${status === 404 ? 'Not found' : 'Cannot do that'}</h1>
      <p class="flash error">${message}</p>`,
  );
}
