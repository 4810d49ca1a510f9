// Browser tests of the player page against the real origin: `streambed serve` with the
// packaged test assets, headless Chromium, dash.js, hls.js and WebSocket push, live and
// on demand, plus low-latency live over WebSocket push.
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

// The server's live channels: `demo` exactly as `serve` makes it by default (one chunk
// per 2 s segment), and `demo-ll` looping the same asset with one-frame chunks
// (`--channel NAME=ASSET,chunk=40ms`: the test asset is 25 fps; ChannelConfig
// ChunkDuration in internal/server/config.go, `chunk_duration` in YAML). With one chunk
// per segment a chunk is out only when its segment is complete, so no player can be
// less than a segment behind the edge; one-frame chunks are pushed as each frame is due.
const LOW_LATENCY = 'demo-ll';
const CHANNELS = ['demo=demo,dvr=60s', `${LOW_LATENCY}=demo,dvr=60s,chunk=40ms`];

describe('player page on streambed serve', { timeout: 600_000 }, () => {
  let server;
  let browser;

  before(async () => {
    server = await startStreambed({ channels: CHANNELS });
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    if (server) {
      await server.stop();
      if (process.env.STREAMBED_WEB_TEST_VERBOSE) console.log(server.output());
    }
  });

  const find = (live, name = 'demo') => {
    const s = server.streams.find((x) => x.name === name && x.live === live);
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
    for (const player of ['dashjs', 'hlsjs', 'wspush']) {
      test(`${live ? 'live channel' : 'VOD asset'} demo plays with ${player}`, { timeout: 90_000 }, async (t) => {
        const s = find(live);
        const segmentMs = s.segment_duration_ms;
        assert.ok(segmentMs > 0, `demo (${live ? 'live' : 'vod'}) has no segment_duration_ms`);
        await waitFor200(`${server.baseURL}${player === 'hlsjs' ? s.hls : s.dash}`, 30_000);
        // wspush: checkPlayback also checks that the media came by push, not pull.
        try {
          const r = await checkPlayback(browser, server.baseURL, { name: 'demo', live, player, segmentMs, label: t.name });
          t.diagnostic(r.summary);
        } catch (err) {
          err.message += `\nserver output (tail):\n${server.output().slice(-4000)}`;
          throw err;
        }
      });
    }
  }

  // Issue #4: live over WebSocket push with one-frame chunks plays at least 15 s with
  // no stall after start-up, at most 1.5 s behind the live edge (median, 90th
  // percentile and final sample), and the media provably came by push.
  //
  // Latency is measured as the page's stats measure it (wspush.ts latency()): the
  // origin's clock (GET /time; the same machine here) minus the wall-clock time of the
  // playhead, availabilityStart + video.currentTime, since the live timeline's media
  // time 0 is the channel's availability start. checkPush recomputes it from the
  // server's own ready message and the browser's Date.now() at every sample, and the
  // two must agree within 0.25 s (and that median must meet the limit too), so a wrong
  // adapter number cannot pass.
  //
  // The 1.5 s limit is a wall-clock bar, measured once more under load
  // (lowLatencyPlayback).
  test(`live channel ${LOW_LATENCY} (one-frame chunks) over WebSocket push: ≥ 15 s, latency ≤ 1.5 s, no stall`, { timeout: 150_000 }, async (t) => {
    const s = find(true, LOW_LATENCY);
    assert.ok(s.ws, `/api/streams lists no ws URL for ${LOW_LATENCY}: ${JSON.stringify(s)}`);
    await lowLatencyPlayback(t, s, { player: 'wspush', maxLatencyS: 1.5 });
  });

  // Low-latency DASH on the pull path: dash.js plays demo-ll's $Number$ MPD, which is
  // LL-DASH (availabilityTimeOffset = segment − chunk, availabilityTimeComplete=false,
  // a ServiceDescription with the target latency and 0.96–1.04 playback rates), and
  // the origin answers a segment in progress chunk by chunk as the frames are made.
  // dash.js must be in its low-latency mode steered by the MPD — its target latency
  // is the ServiceDescription's (about 1.1 s), not the 4 s suggestedPresentationDelay
  // (a defect if not) — and play ≥ 15 s with no stall below 3 s of latency (bars, as
  // for push: a miss under load is measured once more, then recorded).
  test(`live channel ${LOW_LATENCY} (one-frame chunks) over LL-DASH with dash.js: ≥ 15 s, latency < 3 s, no stall`, { timeout: 150_000 }, async (t) => {
    const s = find(true, LOW_LATENCY);
    assert.ok(s.chunk_duration_ms > 0 && s.chunk_duration_ms < s.segment_duration_ms,
      `/api/streams does not announce ${LOW_LATENCY} as made in chunks shorter than its segments: ${JSON.stringify(s)}`);
    const mpd = await (await fetch(`${server.baseURL}${s.dash}`)).text();
    const target = Number(mpd.match(/<Latency [^>]*target="(\d+)"/)?.[1]) / 1000;
    assert.ok(target > 0 && /availabilityTimeComplete="false"/.test(mpd), `${s.dash} is not low-latency DASH:\n${mpd}`);
    await lowLatencyPlayback(t, s, {
      player: 'dashjs', maxLatencyS: 2.999,
      check: (r) => {
        const got = r.last.targetLatencyS;
        assert.ok(got != null && Math.abs(got - target) < 0.25,
          `dash.js steers to ${got} s, not the MPD's ServiceDescription target ${target} s: not in low-latency mode`);
      },
    });
  });

  // LL-HLS on the pull path: hls.js in its low-latency mode plays demo-ll's media
  // playlists, which list 200 ms parts (five one-frame chunks) with a preload hint, and
  // reloads them with blocking requests (_HLS_msn/_HLS_part). hls.js must steer to the
  // playlist's PART-HOLD-BACK (0.6 s), not the 4 s of two target durations it uses for
  // a plain playlist (a defect if not), must fetch parts (the origin's part counter
  // grows), and play ≥ 15 s with no stall below 3 s of latency (bars, as above).
  test(`live channel ${LOW_LATENCY} (one-frame chunks) over LL-HLS with hls.js: ≥ 15 s, latency < 3 s, no stall`, { timeout: 150_000 }, async (t) => {
    const s = find(true, LOW_LATENCY);
    assert.ok(s.hls && s.chunk_duration_ms > 0, `/api/streams does not announce ${LOW_LATENCY} as low latency with HLS: ${JSON.stringify(s)}`);
    const master = await (await fetch(`${server.baseURL}${s.hls}`)).text();
    const first = master.split('\n').find((l) => l && !l.startsWith('#'));
    const media = await (await fetch(new URL(first, `${server.baseURL}${s.hls}`))).text();
    const hold = Number(media.match(/PART-HOLD-BACK=([0-9.]+)/)?.[1]);
    assert.ok(hold > 0 && /#EXT-X-PART-INF:PART-TARGET=/.test(media) && /#EXT-X-PRELOAD-HINT:TYPE=PART,/.test(media),
      `${first} of ${s.hls} is not LL-HLS:\n${media}`);
    const parts = async () => {
      const m = (await (await fetch(`${server.baseURL}/metrics`)).text()).match(/^streambed_http_requests_total\{kind="part",status="200"\} (\d+)/m);
      return m ? Number(m[1]) : 0;
    };
    const before = await parts();
    await lowLatencyPlayback(t, s, {
      player: 'hlsjs', maxLatencyS: 2.999,
      check: (r) => {
        const got = r.last.targetLatencyS;
        assert.ok(got != null && Math.abs(got - hold) < 0.25,
          `hls.js steers to ${got} s, not the playlist's PART-HOLD-BACK ${hold} s: not in low-latency mode`);
      },
    });
    const fetched = (await parts()) - before;
    t.diagnostic(`parts fetched: ${fetched}`);
    assert.ok(fetched >= 15 * 5, `hls.js fetched ${fetched} parts in ≥ 15 s of playback (5 a second expected): it did not play the parts`);
  });

  // Plays a low-latency channel at most maxLatencyS behind the live edge (median, 90th
  // percentile and final sample) for ≥ 15 s with no stall after start-up, then runs
  // check on the result (defects). The limit is a wall-clock bar: a starved browser
  // sees media arrive late and raises its target latency (by design: slow delivery
  // raises the target instead of stalling). checkPlayback fails a miss on a machine
  // that was not loaded — a real failure, never retried — and returns a miss under
  // load; only then is the session measured once more, and every attempt is logged
  // here and in the record. After two loaded attempts the test passes on its defect
  // checks alone and says that the latency bar was not verified.
  async function lowLatencyPlayback(t, s, { player, maxLatencyS, check = () => {} }) {
    await waitFor200(`${server.baseURL}${s.dash}`, 30_000);
    for (let attempt = 1; attempt <= 2; attempt++) {
      let r;
      try {
        r = await checkPlayback(browser, server.baseURL, {
          name: s.name, live: true, player, segmentMs: s.segment_duration_ms,
          seconds: 17, minPlayedS: 15, maxLatencyS, label: `${t.name} (attempt ${attempt})`,
        });
        check(r);
      } catch (err) {
        err.message = `attempt ${attempt} failed (not retried: a defect, or a miss on an unloaded machine): ${err.message}\nserver output (tail):\n${server.output().slice(-4000)}`;
        throw err;
      }
      t.diagnostic(`attempt ${attempt}: ${r.summary}`);
      if (r.misses.length === 0) return;
      t.diagnostic(`attempt ${attempt} missed under load (${r.load.why}): ${r.misses.join('; ')}${attempt === 1 ? ' — measuring once more' : ''}`);
    }
    t.diagnostic(`LATENCY BAR NOT VERIFIED: both attempts ran on a loaded machine (recorded in ${process.env.STREAMBED_WEB_TEST_RECORD || 'the log above'})`);
  }

  // Switching between pull and push on one page: each player starts cleanly after the
  // other (the socket of the push session is closed, no error carries over), and the
  // stats panel shows the server's choice and the push counters only for push.
  test('switches between dash.js and WebSocket push on one page', { timeout: 90_000 }, async () => {
    const { page, log } = await browser.newPage();
    const context = async () => `\nstats: ${JSON.stringify(await page.evaluate(() => window.streambed.stats()).catch(() => null))}\nbrowser log:\n  ${log.slice(-30).join('\n  ')}`;
    const playing = (player) => page.waitForFunction((p) => {
      const s = window.streambed.stats();
      return (window.streambed.player === p && s.playing && s.requests > 0) || s.error != null;
    }, player, { timeout: 30_000, polling: 100 });
    const sockets = [];
    page.on('websocket', (ws) => {
      const entry = { url: ws.url(), closed: false };
      sockets.push(entry);
      ws.on('close', () => { entry.closed = true; });
    });
    try {
      await page.goto(`${server.baseURL}/?stream=demo&live=1&player=dashjs`);
      await playing('dashjs');
      const serverRow = page.locator('dd[data-stat="server"]');
      await serverRow.waitFor({ state: 'hidden', timeout: 5_000 }).catch(() => {});
      assert.equal(await serverRow.isVisible(), false, `"Server chose" shown for dash.js${await context()}`);

      await page.locator('label:has(input[value="wspush"])').click();
      await playing('wspush');
      let s = await page.evaluate(() => window.streambed.stats());
      assert.equal(s.error, null, `error after switching to push${await context()}`);
      assert.match(page.url(), /player=wspush/);
      assert.match(await page.locator('#now-url').textContent(), /^ws:\/\/127\.0\.0\.1:\d+\/ws\/demo$/);
      await page.waitForFunction(() => window.streambed.stats().serverReason != null, null, { timeout: 10_000 });
      assert.equal(await serverRow.isVisible(), true, `"Server chose" hidden for WebSocket push${await context()}`);
      assert.match(await serverRow.textContent(), /^v\d+ \(.+\)$|^held back \(.+\)$/);
      assert.match(await page.locator('dd[data-stat="push"]').textContent(), /^\d+ chunks · /);
      // The live latency over the video, large, names the player and agrees with the
      // stats (the badge re-renders on the page's tick: compare within a tick's drift).
      const badge = page.locator('#latency-badge');
      await badge.waitFor({ state: 'visible', timeout: 10_000 });
      assert.match(await badge.textContent(), /^\d+\.\d\ds ?behind live · WebSocket push$/);
      const shown = Number((await badge.locator('.value').textContent()).trim());
      s = await page.evaluate(() => window.streambed.stats());
      assert.ok(Math.abs(shown - s.latencyS) < 0.5, `the badge shows ${shown} s, the stats ${s.latencyS} s${await context()}`);

      await page.locator('label:has(input[value="dashjs"])').click();
      await playing('dashjs');
      s = await page.evaluate(() => window.streambed.stats());
      assert.equal(s.error, null, `error after switching back to dash.js${await context()}`);
      assert.equal(s.push, null);
      // The panel re-renders on its own tick, which may come just after the player's
      // stats say dash.js plays: wait for it rather than race it.
      await serverRow.waitFor({ state: 'hidden', timeout: 5_000 }).catch(() => {});
      assert.equal(await serverRow.isVisible(), false, `"Server chose" still shown after switching back to dash.js${await context()}`);
      for (let i = 0; i < 50 && !sockets.every((x) => x.closed); i++) await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(sockets.map((x) => [x.url.replace(/:\d+/, ':PORT'), x.closed]), [['ws://127.0.0.1:PORT/ws/demo', true]],
        `the push session's socket is not closed after switching away${await context()}`);
    } finally {
      await page.close();
    }
  });

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

  // A player library's own failure reaches the page's error box: the manifest of a
  // listed stream answers 404 (routed in the browser), and dash.js and hls.js each end
  // in a visible error that the stats report too.
  for (const player of ['dashjs', 'hlsjs']) {
    test(`a missing manifest is a visible player error with ${player}`, { timeout: 60_000 }, async () => {
      const { page } = await browser.newPage();
      try {
        await page.route(/\/vod\/demo\/(manifest\.mpd|master\.m3u8)$/, (route) => route.fulfill({ status: 404, body: 'gone' }));
        await page.goto(`${server.baseURL}/?stream=demo&live=0&player=${player}`);
        const box = page.locator('#error');
        await box.waitFor({ state: 'visible', timeout: 45_000 });
        const text = await box.textContent();
        const stats = await page.evaluate(() => window.streambed.stats());
        assert.equal(stats.error, text);
        assert.equal(stats.playing, false);
        assert.equal(await box.evaluate((el) => getComputedStyle(el).backgroundColor), 'rgb(255, 235, 233)');
      } finally {
        await page.close();
      }
    });
  }

  // The stream list and the player buttons: choosing the VOD asset plays it with
  // dash.js and names it in the URL; choosing hls.js plays its HLS playlist.
  test('choosing a stream from the list and switching to hls.js', { timeout: 60_000 }, async () => {
    const { page, log } = await browser.newPage();
    const playing = (player) =>
      page.waitForFunction((p) => {
        const s = window.streambed.stats();
        return (window.streambed.player === p && s.playing && s.currentTime > 1) || s.error != null;
      }, player, { timeout: 30_000, polling: 100 });
    try {
      await page.goto(`${server.baseURL}/`);
      await page.locator('li[data-key="vod/demo"] button.stream').click();
      await playing('dashjs');
      assert.match(page.url(), /stream=demo&live=0&player=dashjs/);
      await page.locator('label:has(input[value="hlsjs"])').click();
      await playing('hlsjs');
      assert.match(page.url(), /player=hlsjs/);
      assert.equal(await page.locator('#now-url').textContent(), '/vod/demo/master.m3u8');
      assert.equal((await page.evaluate(() => window.streambed.stats())).error, null, log.join('\n'));
    } finally {
      await page.close();
    }
  });

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
