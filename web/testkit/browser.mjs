// Headless Chromium for the browser tests, through playwright-core. Playwright cannot
// download browsers here, so it drives the system Chromium (Debian's /usr/bin/chromium
// unless CHROMIUM_PATH says otherwise) with a fresh profile per launch.

import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
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
export async function launchBrowser({ viewport = { width: 1280, height: 900 }, args = [] } = {}) {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`Chromium not found at ${CHROMIUM_PATH} (apt-get install chromium, or set CHROMIUM_PATH)`);
  }
  const profile = await mkdtemp(join(tmpdir(), 'streambed-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [...FLAGS, ...args],
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
 * Installs, before the page's own scripts, a timer that measures how late the page's
 * main thread runs: a 50 ms interval whose worst lateness since the last read is
 * window.__streambedLag.maxMs. A starved browser shows here.
 */
async function installLagProbe(page) {
  await page.addInitScript(() => {
    const lag = { maxMs: 0, ticks: 0 };
    let last = performance.now();
    setInterval(() => {
      const now = performance.now();
      lag.maxMs = Math.max(lag.maxMs, now - last - 50);
      lag.ticks++;
      last = now;
    }, 50);
    window.__streambedLag = lag;
  });
}

/**
 * CPU times summed over all cores: { busy, total } in ms. Time of niced processes
 * (nice > 0) is not busy: they yield to the browser and the origin.
 */
function cpuTimes() {
  let busy = 0;
  let total = 0;
  for (const c of cpus()) {
    const t = c.times;
    busy += t.user + t.sys + t.irq;
    total += t.user + t.nice + t.sys + t.irq + t.idle;
  }
  return { busy, total };
}

/**
 * Opens a deep link, waits for playback to start, then samples window.streambed.stats()
 * every `everyMs` for `seconds` of wall time — longer, up to `maxSeconds`, while less
 * than `untilPlayedS` of media has played. Returns { startup, samples, first, last,
 * machine } where samples are stats snapshots (with wallMs, the page's Date.now(), and
 * lagMs, the page timer's worst lateness since the previous sample) and machine is
 * what the host did meanwhile: the CPUs' busy share, the load average per core, the
 * worst gap between two samples.
 */
export async function playAndSample(page, url, { seconds = 10, everyMs = 500, startTimeoutMs = 30_000, untilPlayedS = 0, maxSeconds = seconds } = {}) {
  await installLagProbe(page);
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
  const sample = () =>
    page.evaluate(() => {
      const lag = window.__streambedLag;
      const lagMs = lag ? lag.maxMs : null;
      if (lag) lag.maxMs = 0;
      return { ...window.streambed.stats(), wallMs: Date.now(), lagMs };
    });
  const samples = [];
  const cpu0 = cpuTimes();
  const load0 = loadavg()[0];
  const t0 = Date.now();
  const more = () => {
    const el = Date.now() - t0;
    if (el < seconds * 1000) return true;
    const played = samples.length > 1 ? samples.at(-1).currentTime - samples[0].currentTime : 0;
    return played < untilPlayedS && el < maxSeconds * 1000;
  };
  while (more() && startup.error == null) {
    samples.push(await sample());
    if (samples.at(-1).error != null) break;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  samples.push(await sample());
  const cpu1 = cpuTimes();
  let gapMs = 0;
  for (let i = 1; i < samples.length; i++) gapMs = Math.max(gapMs, samples[i].wallMs - samples[i - 1].wallMs - everyMs);
  const machine = {
    cores: cpus().length,
    cpuBusy: cpu1.total > cpu0.total ? (cpu1.busy - cpu0.busy) / (cpu1.total - cpu0.total) : null,
    loadPerCore: Math.max(load0, loadavg()[0]) / cpus().length,
    // The first sample's lag covers the page's load and the player's start: not load.
    pageLagMs: Math.max(0, ...samples.slice(1).map((x) => x.lagMs ?? 0)),
    sampleGapMs: gapMs,
  };
  return { startup, samples, first: samples[0], last: samples.at(-1), machine };
}

/** Median of finite numbers, or null. */
export function median(values) {
  const v = values.filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}
