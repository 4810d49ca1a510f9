// The playback checks shared by the real-server test and the stub dev test.

import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median, playAndSample } from './browser.mjs';

/** The q-quantile (0..1) of the finite numbers, nearest rank; null when there are none. */
export function percentile(values, q) {
  const v = values.filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  return v[Math.min(v.length - 1, Math.max(0, Math.ceil(q * v.length) - 1))];
}

/**
 * Watches a page's wire, independently of the page's own counters: the WebSocket
 * frames the browser received (through the DevTools protocol) and every HTTP request
 * for stream resources (/live/..., /vod/...), less those the page's response named in
 * Link: rel=preload headers (the origin's Early Hints for a deep link, which the page
 * does not ask for).
 */
export function watchPush(page) {
  const w = { sockets: [], text: 0, binary: 0, binaryBytes: 0, ready: null, closed: [], hinted: new Set(), streamRequests: [] };
  page.on('websocket', (ws) => {
    w.sockets.push(ws.url());
    ws.on('framereceived', ({ payload }) => {
      if (typeof payload !== 'string') {
        w.binary++;
        w.binaryBytes += payload.length;
        return;
      }
      w.text++;
      try {
        const m = JSON.parse(payload);
        if (m.type === 'ready' && !w.ready) w.ready = m;
      } catch {
        /* counted; the page reports malformed messages itself */
      }
    });
    ws.on('close', () => w.closed.push(ws.url()));
  });
  page.on('response', async (res) => {
    if (res.request().resourceType() !== 'document') return;
    const link = (await res.allHeaders().catch(() => ({}))).link ?? '';
    for (const m of link.matchAll(/<([^>]+)>/g)) w.hinted.add(new URL(m[1], res.url()).pathname);
  });
  page.on('request', (req) => {
    const p = new URL(req.url()).pathname;
    if (/^\/(live|vod)\//.test(p)) w.streamRequests.push(p);
  });
  return w;
}

/**
 * Asserts the media of a 'wspush' playback came by WebSocket push: one socket to
 * /ws/..., binary frames arriving throughout the sampled time (counted by the page and,
 * independently, by the browser's DevTools protocol), no HTTP request for stream
 * resources, and the server-chosen track shown. For live, the latency the page reports
 * must agree with one computed here from the server's own ready message:
 * Date.now() − (availabilityStart + currentTime) at each sample. Returns a summary.
 */
export function checkPush(w, { first, last, samples }, { live, segmentMs, maxLatencyS, context }) {
  assert.ok(w.sockets.length >= 1 && w.sockets.every((u) => /^wss?:\/\/[^/]+\/ws\//.test(u)), `WebSocket push sockets: ${JSON.stringify(w.sockets)}${context()}`);
  assert.ok(w.ready, `no ready message from the server${context()}`);
  assert.ok(last.push, `the page reports no push counters${context()}`);
  assert.match(last.push.url, /^wss?:\/\/[^/]+\/ws\//, `push url${context()}`);
  const pulled = w.streamRequests.filter((p) => !w.hinted.has(p));
  assert.deepEqual(pulled, [], `the page pulled stream resources over HTTP instead of taking pushes${context()}`);
  // The page cannot count messages the browser did not receive.
  assert.ok(w.binary >= last.push.inits + last.push.chunks,
    `page counted ${last.push.inits} inits + ${last.push.chunks} chunks, the browser received ${w.binary} binary frames${context()}`);
  assert.ok(last.push.inits >= 1 && last.requests >= 1, `no init segment or complete segment pushed${context()}`);
  const wallS = (last.wallMs - first.wallMs) / 1000;
  if (live) {
    // Pushes keep coming while it plays: at least one chunk per track per segment
    // duration (one-chunk segments), less one for the boundaries.
    const want = 2 * Math.floor((wallS * 1000) / segmentMs) - 2;
    const got = last.push.chunks - first.push.chunks;
    assert.ok(got >= want, `${got} chunks pushed in ${wallS.toFixed(1)} s of playback, want ≥ ${want}${context()}`);
  }
  assert.ok(last.serverTrack != null && last.serverReason, `no server-chosen track shown: ${last.serverTrack} / ${last.serverReason}${context()}`);
  let line = ` | push: ${last.push.chunks} chunks, ${last.push.inits} inits, ${(last.push.bytes / 1e6).toFixed(1)} MB in ${last.push.messages} messages` +
    ` (browser saw ${w.binary} binary frames), policy ${last.push.policy}, ${last.push.switches} switches, ${last.push.skips} skips,` +
    ` server chose ${last.serverTrack || '(held)'}: ${last.serverReason}`;
  if (live) {
    assert.ok(w.ready.availabilityStart, `ready has no availabilityStart${context()}`);
    const ast = Date.parse(w.ready.availabilityStart) / 1000;
    const own = samples.filter((s) => s.latencyS != null).map((s) => ({ page: s.latencyS, here: s.wallMs / 1000 - (ast + s.currentTime) }));
    const worst = Math.max(...own.map((x) => Math.abs(x.page - x.here)));
    assert.ok(own.length > 0 && worst <= 0.25, `page latency and availabilityStart + currentTime disagree by up to ${worst.toFixed(3)} s${context()}`);
    const here = own.map((x) => x.here);
    if (maxLatencyS != null) {
      const med = median(here);
      assert.ok(med <= maxLatencyS, `latency from availabilityStart + currentTime: median ${med.toFixed(3)} s > ${maxLatencyS} s${context()}`);
    }
    line += `; latency from ready.availabilityStart + currentTime: median ${median(here).toFixed(3)} s, max ${Math.max(...here).toFixed(3)} s`;
  }
  return line;
}

/**
 * Plays `stream` (live or VOD) with `player` for `seconds` and asserts: playback
 * starts, currentTime advances, no player error, no stall after start-up, and for
 * live a latency below 3 segment durations. Returns a one-line summary.
 *
 * Options: `minPlayedS` — currentTime must advance at least this much while sampled;
 * `maxLatencyS` — live: median, 90th percentile and final latency at most this.
 * With player 'wspush' it also checks that the media came by push (checkPush).
 */
export async function checkPlayback(browser, baseURL, { name, live, player, segmentMs, seconds = 10, minPlayedS = 0, maxLatencyS = null }) {
  const url = `${baseURL}/?stream=${encodeURIComponent(name)}&live=${live ? 1 : 0}&player=${player}`;
  const { page, log } = await browser.newPage();
  const wire = player === 'wspush' ? watchPush(page) : null;
  try {
    const r = await playAndSample(page, url, { seconds });
    const { first, last, samples } = r;
    const context = () => `\nurl: ${url}\nlast stats: ${JSON.stringify(last)}\nbrowser log:\n  ${log.slice(-30).join('\n  ')}`;

    assert.equal(r.startup.error, null, `player error at start-up: ${r.startup.error}${context()}`);
    const errored = samples.find((s) => s.error != null);
    assert.equal(errored?.error ?? null, null, `player error: ${errored?.error}${context()}`);

    const wallS = (last.wallMs - first.wallMs) / 1000;
    const advanced = last.currentTime - first.currentTime;
    assert.ok(wallS >= seconds * 0.95, `sampled only ${wallS.toFixed(1)} s${context()}`);
    assert.ok(advanced >= wallS * 0.8, `currentTime advanced ${advanced.toFixed(2)} s in ${wallS.toFixed(1)} s of wall time${context()}`);
    assert.ok(advanced >= minPlayedS, `played ${advanced.toFixed(2)} s, want at least ${minPlayedS} s${context()}`);
    assert.equal(last.playing, true, `not playing at the end${context()}`);
    assert.equal(last.stalls, 0, `${last.stalls} stall(s), ${Math.round(last.stallMs)} ms after start-up: ${JSON.stringify(last.waits)}${context()}`);

    let latency = '';
    if (live) {
      const limit = (3 * segmentMs) / 1000;
      const lat = samples.map((s) => s.latencyS);
      const med = median(lat);
      assert.ok(med != null, `no live latency reported${context()}`);
      assert.ok(med < limit, `median live latency ${med.toFixed(2)} s ≥ 3 segments (${limit} s)${context()}`);
      assert.ok(last.latencyS != null && last.latencyS < limit, `final live latency ${last.latencyS} s ≥ ${limit} s${context()}`);
      latency = ` latency median ${med.toFixed(2)} s (max ${Math.max(...lat.filter(Number.isFinite)).toFixed(2)} s)`;
      if (maxLatencyS != null) {
        const p90 = percentile(lat, 0.9);
        assert.ok(med <= maxLatencyS && p90 <= maxLatencyS && last.latencyS <= maxLatencyS,
          `live latency median ${med.toFixed(3)} s, p90 ${p90.toFixed(3)} s, final ${last.latencyS.toFixed(3)} s; want ≤ ${maxLatencyS} s${context()}`);
        latency += ` p90 ${p90.toFixed(2)} s (limit ${maxLatencyS} s)`;
      }
    }
    if (wire) latency += checkPush(wire, r, { live, segmentMs, maxLatencyS, context });
    return (
      `${live ? 'live' : 'vod '} ${name} ${player}: start-up ${Math.round(last.startupMs)} ms,` +
      ` played ${advanced.toFixed(1)} s in ${wallS.toFixed(1)} s, buffer ${last.bufferS.toFixed(1)} s,` +
      ` ${last.width}x${last.height} @ ${Math.round((last.bitrateBps ?? 0) / 1000)} kb/s,` +
      ` ${last.requests} segments ${(last.bytes / 1e6).toFixed(1)} MB, dropped ${last.droppedFrames}/${last.totalFrames},` +
      ` stalls ${last.stalls}, short waits ${last.shortWaits}` +
      (last.waits?.length ? ` [${last.waits.map((w) => `${w.ms} ms at ${w.at.toFixed(2)} s`).join(', ')}]` : '') +
      latency
    );
  } catch (err) {
    const dir = await mkdtemp(join(tmpdir(), 'streambed-web-fail-'));
    const shot = join(dir, `${live ? 'live' : 'vod'}-${name}-${player}.png`);
    await page.screenshot({ path: shot }).catch(() => {});
    err.message += `\nscreenshot: ${shot}`;
    throw err;
  } finally {
    await page.close().catch(() => {});
  }
}
