// The headless player against the browser: the same one-frame-chunk live channel is
// played at the same time by the player page in headless Chromium and by
// `streambed play --json`, on each low-latency path — WebSocket push (the page's push
// player; `play ws://…/ws/CHANNEL`), LL-DASH (dash.js; `play …/manifest.mpd` over
// HTTP/1.1 with chunked responses) and LL-HLS (hls.js; `play …/master.m3u8`, which
// plays parts as hls.js does: the parts listed, blocking playlist reloads, hls.js's
// start and catch-up). Both report latency on one definition: the origin's clock minus
// the wall time of the playhead (the page reads the clock from GET /time; the headless
// player from the MPD's UTCTiming, and for HLS, which has none, its own clock — the
// same machine here). Bars: both medians below 3 s, and within 0.5 s of each other on
// every path.
//
// The bars are wall-clock bars, generous so they do not flake: a miss on an unloaded
// machine fails (a real failure); a miss under load (testkit/checks.mjs loadEvidence)
// is measured once more, and after two loaded attempts the test passes on its defect
// checks and says the bars were not verified. Every attempt goes to the record.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { launchBrowser, median, playAndSample } from '../testkit/browser.mjs';
import { loadEvidence, record } from '../testkit/checks.mjs';
import { headlessLatencies, headlessPlay, lowLatencyPaths, steady } from '../testkit/headless.mjs';
import { startStreambed } from '../testkit/server.mjs';

const CHANNEL = 'll';
const SECONDS = 15;
const MAX_LATENCY_S = 3;
const MAX_DIFF_S = 0.5;

describe('headless player against the browser on a one-frame-chunk channel', { timeout: 600_000 }, () => {
  let server;
  let browser;

  before(async () => {
    server = await startStreambed({ channels: [`${CHANNEL}=demo,dvr=60s,chunk=40ms`] });
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  for (const { name, player, notAgreed } of lowLatencyPaths('http://x', CHANNEL)) {
    test(`${name}: browser and streambed play --json below ${MAX_LATENCY_S} s${notAgreed ? '' : ` and within ${MAX_DIFF_S} s`}`, { timeout: 180_000 }, async (t) => {
      const path = lowLatencyPaths(server.baseURL, CHANNEL).find((p) => p.player === player);
      for (let attempt = 1; attempt <= 2; attempt++) {
        const pageURL = `${server.baseURL}/?stream=${CHANNEL}&live=1&player=${path.player}`;
        const { page, log } = await browser.newPage();
        let r;
        let h;
        try {
          // At the same time: the same origin, clock and moment for both.
          [r, h] = await Promise.all([playAndSample(page, pageURL, { seconds: SECONDS }), headlessPlay(path.url, { seconds: SECONDS })]);
        } finally {
          await page.close().catch(() => {});
        }
        const load = loadEvidence(r.machine);
        const context = `\npage: ${pageURL}\nheadless: ${h.command}\nmachine: ${load.why}\nbrowser log:\n  ${log.slice(-20).join('\n  ')}\nplay stderr:\n${h.stderr.slice(-2000)}`;
        // Defects, whatever the load.
        assert.equal(r.startup.error, null, `page error: ${r.startup.error}${context}`);
        assert.equal(h.code, 0, `streambed play exited ${h.code}: ${h.rep.error}${context}`);
        assert.equal(h.rep.live, true, `streambed play did not see a live stream${context}`);
        assert.ok(h.rep.chunk_appends > 0, `streambed play appended no chunk: it played whole segments${context}`);
        assert.equal(h.rep.target_source, path.source, `streambed play's target latency came from ${h.rep.target_source}, not the ${path.source}${context}`);
        const browserS = median(steady(r.samples.map((s) => s.latencyS)));
        const headlessS = median(steady(headlessLatencies(h.rep)));
        assert.ok(browserS != null && headlessS != null, `no latency: browser ${browserS}, headless ${headlessS}${context}`);

        const misses = [];
        if (!(browserS < MAX_LATENCY_S)) misses.push(`browser median latency ${browserS.toFixed(3)} s ≥ ${MAX_LATENCY_S} s`);
        if (!(headlessS < MAX_LATENCY_S)) misses.push(`headless median latency ${headlessS.toFixed(3)} s ≥ ${MAX_LATENCY_S} s`);
        if (path.notAgreed) t.diagnostic(`difference ${(headlessS - browserS).toFixed(3)} s not held to ${MAX_DIFF_S} s: ${path.notAgreed}`);
        else if (!(Math.abs(browserS - headlessS) <= MAX_DIFF_S)) misses.push(`browser ${browserS.toFixed(3)} s and headless ${headlessS.toFixed(3)} s differ by more than ${MAX_DIFF_S} s`);
        const summary = `browser ${browserS.toFixed(3)} s (target ${r.last.targetLatencyS ?? '–'} s, ${r.last.stalls} stalls), ` +
          `headless ${headlessS.toFixed(3)} s (target ${(h.rep.target_latency_ms / 1000).toFixed(3)} s, ${h.rep.stall_count} stalls, ${h.rep.chunk_appends} chunks)`;
        // The record's outcomes are checks.mjs's, which testkit/tally.mjs counts.
        const entry = { label: `${t.name} (attempt ${attempt})`, url: pageURL, browserS, headlessS, loaded: load.loaded, machine: r.machine, misses };
        t.diagnostic(`attempt ${attempt}: ${summary}; ${load.why}`);
        if (misses.length > 0 && !load.loaded) {
          record({ ...entry, outcome: 'failed', error: misses.join('; ') });
          assert.fail(`${misses.join('; ')} on a machine that was not loaded${context}`);
        }
        record({ ...entry, outcome: misses.length ? 'missed under load (recorded)' : 'passed' });
        if (misses.length === 0) return;
        t.diagnostic(`attempt ${attempt} missed under load: ${misses.join('; ')}${attempt === 1 ? ' — measuring once more' : ''}`);
      }
      t.diagnostic('LATENCY BARS NOT VERIFIED: both attempts ran on a loaded machine');
    });
  }
});
