// Browser tests of the player page against the real origin: `streambed serve` with the
// packaged test assets, headless Chromium, dash.js and hls.js, live and on demand.
//
//   STREAMBED_BIN          the binary (default bin/streambed in the repo)
//   STREAMBED_TEST_ASSETS  folder of packaged assets for --assets (omitted if unset)
//   CHROMIUM_PATH          default /usr/bin/chromium
//   STREAMBED_TEST_READY_TIMEOUT_MS  how long to wait for /api/streams (default 180000)
//
// Run with `make web-test`, or `node --test web/test/` after building.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '../testkit/browser.mjs';
import { checkPlayback } from '../testkit/checks.mjs';
import { startStreambed } from '../testkit/server.mjs';

describe('player page on streambed serve', { timeout: 480_000 }, () => {
  let server;
  let browser;

  before(async () => {
    server = await startStreambed();
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    if (server) {
      await server.stop();
      if (process.env.STREAMBED_WEB_TEST_VERBOSE) console.log(server.output());
    }
  });

  const find = (live) => {
    const s = server.streams.find((x) => x.name === 'demo' && x.live === live);
    assert.ok(s, `/api/streams has no ${live ? 'live channel' : 'VOD asset'} "demo": ${JSON.stringify(server.streams)}\nserver output:\n${server.output()}`);
    return s;
  };

  test('serves the page and its assets', async () => {
    for (const path of ['/', '/app.js', '/app.css']) {
      const res = await fetch(`${server.baseURL}${path}`);
      assert.equal(res.status, 200, `GET ${path}`);
      const body = await res.text();
      if (path === '/') assert.match(body, /<video id="video"/, 'GET / is the built player page (run make web before building the binary)');
    }
  });

  // On-demand first: a live channel that starts with the server has a longer window by
  // the time its tests run.
  for (const live of [false, true]) {
    for (const player of ['dashjs', 'hlsjs']) {
      test(`${live ? 'live channel' : 'VOD asset'} demo plays with ${player}`, { timeout: 90_000 }, async (t) => {
        const s = find(live);
        const segmentMs = s.segment_duration_ms;
        assert.ok(segmentMs > 0, `demo (${live ? 'live' : 'vod'}) has no segment_duration_ms`);
        await waitFor200(`${server.baseURL}${player === 'hlsjs' ? s.hls : s.dash}`, 30_000);
        try {
          t.diagnostic(await checkPlayback(browser, server.baseURL, { name: 'demo', live, player, segmentMs }));
        } catch (err) {
          err.message += `\nserver output (tail):\n${server.output().slice(-4000)}`;
          throw err;
        }
      });
    }
  }

  async function waitFor200(url, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < deadline) {
      const res = await fetch(url).catch((err) => ({ status: err.message }));
      if (res.status === 200) return;
      last = res.status;
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.fail(`${url} not 200 after ${timeoutMs} ms (last: ${last})`);
  }

  test('shows an unknown stream as a visible error', async () => {
    const { page } = await browser.newPage();
    try {
      await page.goto(`${server.baseURL}/?stream=no-such-stream&live=0&player=dashjs`);
      const box = page.locator('#error');
      await box.waitFor({ state: 'visible', timeout: 10_000 });
      assert.match(await box.textContent(), /no-such-stream/);
    } finally {
      await page.close();
    }
  });
});
