/**
 * A headless Debian chromium driven by playwright-core (no downloaded browser), with a
 * fresh profile, and a folder for the screenshots the browser tests keep as artefacts
 * (`.tap/screenshots/`, gitignored).
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const SCREENSHOTS = fileURLToPath(new URL('../../.tap/screenshots/', import.meta.url));

export function haveChromium(): boolean {
  return existsSync(CHROMIUM);
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

export async function launchBrowser(t: Teardown): Promise<BrowserContext> {
  const profile = await mkdtemp(join(tmpdir(), 'svc-chromium-'));
  await mkdir(SCREENSHOTS, { recursive: true });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  t.teardown(async () => {
    await context.close().catch(() => {});
    await rm(profile, { recursive: true, force: true });
  });
  return context;
}
