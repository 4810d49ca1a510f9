// Headless Chromium for the browser tests, through playwright-core. Playwright cannot
// download browsers here, so it drives the system Chromium (Debian's /usr/bin/chromium
// unless CHROMIUM_PATH says otherwise) with a fresh profile per launch.

import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--autoplay-policy=no-user-gesture-required',
  // A background tab throttles timers and media; tests keep one page in front.
  '--disable-background-timer-throttling',
  '--disable-renderer-backgrounding',
];

/** Launches Chromium with a fresh profile; close() also removes the profile. */
export async function launchBrowser({ viewport = { width: 1280, height: 900 } } = {}) {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`Chromium not found at ${CHROMIUM_PATH} (apt-get install chromium, or set CHROMIUM_PATH)`);
  }
  const profile = await mkdtemp(join(tmpdir(), 'streambed-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: FLAGS,
    viewport,
  });
  return {
    context,
    async newPage() {
      const page = await context.newPage();
      const log = [];
      page.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') log.push(`${m.type()}: ${m.text()}`);
      });
      page.on('pageerror', (e) => log.push(`pageerror: ${e.message}`));
      page.on('requestfailed', (r) => log.push(`requestfailed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
      page.on('response', (r) => {
        if (r.status() >= 400) log.push(`HTTP ${r.status()}: ${r.url()}`);
      });
      return { page, log };
    },
    async close() {
      await context.close().catch(() => {});
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Opens a deep link, waits for playback to start, then samples window.streambed.stats()
 * for `seconds` of wall time. Returns { startup, samples, first, last } where samples are
 * stats snapshots taken every `everyMs` after start-up.
 */
export async function playAndSample(page, url, { seconds = 10, everyMs = 500, startTimeoutMs = 30_000 } = {}) {
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForFunction(() => typeof window.streambed?.stats === 'function', null, { timeout: 10_000 });
  const startup = await page
    .waitForFunction(
      () => {
        const s = window.streambed.stats();
        return s.error != null || s.startupMs != null ? s : null;
      },
      null,
      { timeout: startTimeoutMs, polling: 100 },
    )
    .then((h) => h.jsonValue())
    .catch(async (err) => {
      const s = await page.evaluate(() => window.streambed.stats()).catch(() => null);
      throw new Error(`playback did not start within ${startTimeoutMs} ms: ${err.message}\nstats: ${JSON.stringify(s)}`);
    });
  const samples = [];
  const t0 = Date.now();
  while (Date.now() - t0 < seconds * 1000 && startup.error == null) {
    samples.push(await page.evaluate(() => ({ ...window.streambed.stats(), wallMs: Date.now() })));
    if (samples.at(-1).error != null) break;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  samples.push(await page.evaluate(() => ({ ...window.streambed.stats(), wallMs: Date.now() })));
  return { startup, samples, first: samples[0], last: samples.at(-1) };
}

/** Median of finite numbers, or null. */
export function median(values) {
  const v = values.filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}
