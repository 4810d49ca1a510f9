// The playback checks shared by the real-server test and the stub dev test.

import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median, playAndSample } from './browser.mjs';

/**
 * Plays `stream` (live or VOD) with `player` for `seconds` and asserts: playback
 * starts, currentTime advances, no player error, no stall after start-up, and for
 * live a latency below 3 segment durations. Returns a one-line summary.
 */
export async function checkPlayback(browser, baseURL, { name, live, player, segmentMs, seconds = 10 }) {
  const url = `${baseURL}/?stream=${encodeURIComponent(name)}&live=${live ? 1 : 0}&player=${player}`;
  const { page, log } = await browser.newPage();
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
    }
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
