// The playback checks of the browser tests.
//
// What a playback check may blame on the machine, and what it may not. The tests run
// on shared 2-core machines (CI runs them after the Go tests, other jobs may run
// beside), where a starved browser or origin waits for the CPU; so each figure is one
// of two kinds:
//
// - Defects fail the test whatever the load: a player error; playback that does not
//   start; media time that stops without the page reporting a stall (a freeze the
//   stats hide); a stall longer than longStallMs (no starvation in these tests lasts
//   that long); for WebSocket push, media that did not come by push, or a latency the
//   page reports that disagrees with the server's own clock.
// - Bars that load can move: no stall at all, currentTime keeping pace with the wall
//   clock, the live latency limits, chunks arriving all along. A bar missed on an
//   unloaded machine is a defect too and fails. A bar missed while the machine was
//   loaded — the page's timers ran late, the samples came late, the CPUs were
//   saturated (loadEvidence) — is recorded, not failed: in the check's summary line,
//   and in $STREAMBED_WEB_TEST_RECORD (JSON lines, one per playback; `make web-test`
//   prints their tally), so a bar that keeps slipping shows.

import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { median, playAndSample } from './browser.mjs';

/** The q-quantile (0..1) of the finite numbers, nearest rank; null when there are none. */
export function percentile(values, q) {
  const v = values.filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  return v[Math.min(v.length - 1, Math.max(0, Math.ceil(q * v.length) - 1))];
}

/**
 * Whether the machine was loaded while a playback was sampled (playAndSample's
 * machine): the page's 50 ms timer ran over 300 ms late after start-up (a player's
 * own work blocks the main thread for up to about 150 ms on an idle machine), a
 * sample came over a second late, or the CPUs were ≥ 90 % busy (niced processes not
 * counted: they yield). The load average is recorded, not used: it counts niced
 * processes too. Returns { loaded, why, figures }.
 */
export function loadEvidence(m) {
  const why = [];
  if (m.pageLagMs > 300) why.push(`page timer ${Math.round(m.pageLagMs)} ms late`);
  if (m.sampleGapMs > 1000) why.push(`a sample ${Math.round(m.sampleGapMs)} ms late`);
  if (m.cpuBusy != null && m.cpuBusy >= 0.9) why.push(`CPUs ${Math.round(100 * m.cpuBusy)}% busy`);
  const figures = `timer lag ≤ ${Math.round(m.pageLagMs)} ms, sample gap ≤ ${Math.round(m.sampleGapMs)} ms, CPUs ${m.cpuBusy == null ? '?' : Math.round(100 * m.cpuBusy)}% busy, load ${m.loadPerCore.toFixed(2)}/core`;
  return { loaded: why.length > 0, why: why.length ? why.join(', ') : `not loaded (${figures})`, figures };
}

/** Appends one JSON line to $STREAMBED_WEB_TEST_RECORD, when set. */
export function record(entry) {
  const file = process.env.STREAMBED_WEB_TEST_RECORD;
  if (!file) return;
  mkdirSync(dirname(file), { recursive: true });
  appendFileSync(file, `${JSON.stringify({ at: new Date().toISOString(), ...entry })}\n`);
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
 * Checks that the media of a 'wspush' playback came by WebSocket push: one socket to
 * /ws/..., binary frames arriving (counted by the page and, independently, by the
 * browser's DevTools protocol), no HTTP request for stream resources, and the
 * server-chosen track shown — defects. For live, the latency the page reports must
 * agree within 0.25 s with one computed here from the server's own ready message,
 * Date.now() − (availabilityStart + currentTime) at each sample — a defect (the page's
 * clock offset comes from the best of three /time round trips). Chunks arriving all
 * along and the latency limit are bars (`bar(ok, message)`). Returns a summary.
 */
export function checkPush(w, { first, last, samples }, { live, segmentMs, maxLatencyS, context, bar }) {
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
    bar(got >= want, `${got} chunks pushed in ${wallS.toFixed(1)} s of playback, want ≥ ${want}`);
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
    const med = median(here);
    if (maxLatencyS != null) bar(med <= maxLatencyS, `latency from availabilityStart + currentTime: median ${med.toFixed(3)} s > ${maxLatencyS} s`);
    line += `; latency from ready.availabilityStart + currentTime: median ${med.toFixed(3)} s, max ${Math.max(...here).toFixed(3)} s`;
  }
  return line;
}

/**
 * Plays `stream` (live or VOD) with `player` for `seconds` and checks it (see the top
 * of this file for which checks are defects and which are bars). Throws on a defect,
 * or on a bar missed on an unloaded machine. Returns { summary, misses, load, last }:
 * misses lists the bars missed under load (recorded, not failed), last the page's
 * final stats sample.
 *
 * Options: `minPlayedS` — currentTime must advance at least this much (sampling goes
 * on up to 10 s longer while it has not); `maxLatencyS` — live: median, 90th
 * percentile and final latency at most this; `longStallMs` — the longest stall that
 * is not a defect (default 2 segment durations, at least 4 s); `label` — names the
 * playback in the record. With player 'wspush' it also checks that the media came by
 * push (checkPush).
 */
export async function checkPlayback(browser, baseURL, { name, live, player, segmentMs, seconds = 10, minPlayedS = 0, maxLatencyS = null, longStallMs = Math.max(4000, 2 * segmentMs), label = '', query = '' }) {
  // query: more page parameters, e.g. 'mpd=timeline' (dash.js plays the SegmentTimeline MPD).
  const url = `${baseURL}/?stream=${encodeURIComponent(name)}&live=${live ? 1 : 0}&player=${player}${query ? `&${query}` : ''}`;
  const { page, log } = await browser.newPage();
  const wire = player === 'wspush' ? watchPush(page) : null;
  const entry = { label, url, player, live, stream: name, seconds, minPlayedS, maxLatencyS };
  const misses = [];
  const bar = (ok, message) => {
    if (!ok) misses.push(message);
  };
  try {
    const r = await playAndSample(page, url, { seconds, untilPlayedS: minPlayedS, maxSeconds: seconds + 10 });
    const { first, last, samples } = r;
    const load = loadEvidence(r.machine);
    entry.machine = r.machine;
    entry.loaded = load.loaded;
    const context = () => `\nurl: ${url}\nmachine: ${load.loaded ? 'loaded: ' : ''}${load.why}\nlast stats: ${JSON.stringify(last)}\nbrowser log:\n  ${log.slice(-30).join('\n  ')}`;

    // Defects.
    assert.equal(r.startup.error, null, `player error at start-up: ${r.startup.error}${context()}`);
    const errored = samples.find((s) => s.error != null);
    assert.equal(errored?.error ?? null, null, `player error: ${errored?.error}${context()}`);
    const wallS = (last.wallMs - first.wallMs) / 1000;
    const advanced = last.currentTime - first.currentTime;
    const stalledS = (last.stallMs - first.stallMs) / 1000;
    const shortWaits = last.shortWaits - first.shortWaits;
    assert.ok(wallS >= seconds * 0.95, `sampled only ${wallS.toFixed(1)} s${context()}`);
    // Media time either moves (at 0.9× or more: the players steer latency by up to
    // 10 %) or the page says why not: a stall or a short wait (< 100 ms each).
    // A browser starved of CPU slows its media clock without a waiting event (seen
    // with hls.js at 0.77× beside two test suites and stress-ng): there, media time
    // must still clearly move (half of wall time), and the full account is a bar.
    const accounted = advanced / 0.9 + stalledS + 0.1 * shortWaits;
    const unnoticed = `currentTime advanced ${advanced.toFixed(2)} s in ${wallS.toFixed(1)} s with only ${stalledS.toFixed(2)} s of stalls and ${shortWaits} short waits reported: playback stopped without the page noticing`;
    if (load.loaded) {
      assert.ok(advanced + stalledS + 0.1 * shortWaits >= wallS * 0.5, `${unnoticed}${context()}`);
      bar(accounted >= wallS * 0.95 - 0.5, unnoticed);
    } else {
      assert.ok(accounted >= wallS * 0.95 - 0.5, `${unnoticed}${context()}`);
    }
    let longest = Math.max(0, ...(last.waits ?? []).map((x) => x.ms));
    let stuckSince = null; // wall time since which playback has not been playing, if it is not now
    for (const s of samples) stuckSince = s.playing ? null : (stuckSince ?? s.wallMs);
    if (stuckSince != null) longest = Math.max(longest, last.wallMs - stuckSince);
    assert.ok(longest <= longStallMs, `a stall (or a stop) of ${Math.round(longest)} ms, longer than ${longStallMs} ms: not a starved machine's hiccup${context()}`);

    // Bars.
    bar(advanced >= wallS * 0.8, `currentTime advanced ${advanced.toFixed(2)} s in ${wallS.toFixed(1)} s of wall time (want ≥ 0.8×)`);
    bar(advanced >= minPlayedS, `played ${advanced.toFixed(2)} s, want at least ${minPlayedS} s`);
    bar(last.playing === true, `not playing at the end (for ${stuckSince == null ? 0 : Math.round(last.wallMs - stuckSince)} ms)`);
    bar(last.stalls === 0, `${last.stalls} stall(s), ${Math.round(last.stallMs)} ms after start-up: ${JSON.stringify(last.waits)}`);

    let latency = '';
    if (live) {
      const limit = (3 * segmentMs) / 1000;
      const lat = samples.map((s) => s.latencyS);
      const med = median(lat);
      assert.ok(med != null, `no live latency reported${context()}`);
      bar(med < limit, `median live latency ${med.toFixed(2)} s ≥ 3 segments (${limit} s)`);
      bar(last.latencyS != null && last.latencyS < limit, `final live latency ${last.latencyS} s ≥ ${limit} s`);
      latency = ` latency median ${med.toFixed(2)} s (max ${Math.max(...lat.filter(Number.isFinite)).toFixed(2)} s)`;
      entry.latency = { medianS: med, p90S: percentile(lat, 0.9), finalS: last.latencyS };
      if (maxLatencyS != null) {
        const p90 = percentile(lat, 0.9);
        bar(med <= maxLatencyS && p90 <= maxLatencyS && last.latencyS != null && last.latencyS <= maxLatencyS,
          `live latency median ${med.toFixed(3)} s, p90 ${p90.toFixed(3)} s, final ${last.latencyS?.toFixed(3)} s; want ≤ ${maxLatencyS} s`);
        latency += ` p90 ${p90.toFixed(2)} s (limit ${maxLatencyS} s)`;
      }
    }
    if (wire) latency += checkPush(wire, r, { live, segmentMs, maxLatencyS, context, bar });
    const summary =
      `${live ? 'live' : 'vod '} ${name} ${player}: start-up ${Math.round(last.startupMs)} ms,` +
      ` played ${advanced.toFixed(1)} s in ${wallS.toFixed(1)} s, buffer ${last.bufferS.toFixed(1)} s,` +
      ` ${last.width}x${last.height} @ ${Math.round((last.bitrateBps ?? 0) / 1000)} kb/s,` +
      ` ${last.requests} segments ${(last.bytes / 1e6).toFixed(1)} MB, dropped ${last.droppedFrames}/${last.totalFrames},` +
      ` stalls ${last.stalls}, short waits ${last.shortWaits}` +
      (last.waits?.length ? ` [${last.waits.map((w) => `${w.ms} ms at ${w.at.toFixed(2)} s`).join(', ')}]` : '') +
      latency + ` | machine: ${load.loaded ? `LOADED (${load.why})` : load.figures}`;
    Object.assign(entry, {
      startupMs: last.startupMs, playedS: advanced, wallS, stalls: last.stalls, stallMs: last.stallMs, shortWaits: last.shortWaits,
      misses, summary,
    });
    if (misses.length > 0 && !load.loaded) {
      assert.fail(`missed on a machine that was not loaded (${load.figures}), so not load: ${misses.join('; ')}${context()}`);
    }
    entry.outcome = misses.length ? 'missed under load (recorded)' : 'passed';
    record(entry);
    return { summary: misses.length ? `${summary} | MISSED UNDER LOAD (recorded, not failed): ${misses.join('; ')}` : summary, misses, load, last };
  } catch (err) {
    entry.outcome = 'failed';
    entry.error = err.message.split('\n')[0];
    entry.misses = misses;
    record(entry);
    const dir = await mkdtemp(join(tmpdir(), 'streambed-web-fail-'));
    const shot = join(dir, `${live ? 'live' : 'vod'}-${name}-${player}.png`);
    await page.screenshot({ path: shot }).catch(() => {});
    err.message += `\nscreenshot: ${shot}`;
    throw err;
  } finally {
    await page.close().catch(() => {});
  }
}
