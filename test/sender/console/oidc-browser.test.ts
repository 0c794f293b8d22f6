/**
 * OIDC sign-in in a real browser (Debian chromium through playwright-core): the console's
 * sign-in page sends the operator to the built-in provider, its login (with the one-time code
 * the development sign-in printed) and consent pages are filled in, and the browser comes back signed in as the ID token's subject; someone
 * the provider signs in who is not an operator comes back refused. Screenshots of each
 * step go to .tap/screenshots/.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import t from 'tap';
import { startConsole } from '../../../sender/console/index.js';
import { haveChromium, launchBrowser, SCREENSHOTS } from '../../helpers/browser.js';
import { senderHarness } from '../harness.js';
import { devCodes, startBuiltInProvider } from './helpers.js';

t.test(
  'OIDC sign-in in chromium',
  { skip: !haveChromium() && 'no /usr/bin/chromium (apt-get install chromium)' },
  async (t) => {
    const issuer = await startBuiltInProvider(t);
    const h = await senderHarness(t);
    const c = await startConsole({
      pool: h.pool,
      queue: h.queue,
      schema: h.schema,
      dataDir: await mkdtemp(join(tmpdir(), 'coidb-')),
      token: 'oidc-browser-console-token-0123456789',
      oidc: { issuer, operators: ['carol'] },
    });
    t.teardown(() => c.close());
    const context = await launchBrowser(t);
    const shot = (page: Page, name: string) =>
      page.screenshot({ path: `${SCREENSHOTS}console-oidc-${name}.png`, fullPage: true });

    /** From the console's sign-in page through the provider's login and consent as `who`. */
    const signIn = async (page: Page, who: string) => {
      await page.goto(`${c.url}/audit`);
      t.match(page.url(), /\/login\?next=%2Faudit/, 'no anonymous access');
      await page.click('#oidc-sign-in');
      await page.waitForURL((u) => u.toString().startsWith(issuer));
      await page.fill('input[name=login]', who);
      // The development sign-in never takes a bare name: the one-time code it printed.
      await page.fill('input[name=secret]', devCodes.get(new URL(issuer).origin) ?? '');
      await shot(page, `provider-login-${who}`);
      await page.click('button[type=submit]');
      // The consent page, then back to the console.
      await page.waitForSelector('input[name=prompt][value=consent]', { state: 'attached' });
      await page.click('button[type=submit]');
      await page.waitForURL((u) => u.toString().startsWith(c.url));
    };

    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(`${c.url}/login`);
    await shot(page, 'login');
    await signIn(page, 'carol');
    t.equal(new URL(page.url()).pathname, '/audit', 'back where the sign-in started');
    t.equal(await page.textContent('header .who'), 'carol', 'signed in as the subject');
    await shot(page, 'signed-in');
    t.same(problems, [], 'no script error on the console pages');

    // A fresh browser (no console or provider session): someone who is not an operator.
    await context.clearCookies();
    const stranger = await context.newPage();
    await signIn(stranger, 'mallory');
    t.match(await stranger.textContent('.flash.error'), /mallory is not a console operator/);
    t.equal(await stranger.locator('header .who').count(), 0, 'no session');
    await shot(stranger, 'not-an-operator');
  },
);
