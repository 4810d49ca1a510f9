// Browser latency of every low-latency path on loopback (docs/results/latency.md):
// starts `streambed serve` with a live channel in one-frame chunks and plays it in
// headless Chromium with the player page — WebSocket push, dash.js on its LL-DASH MPD,
// hls.js on its LL-HLS playlists — for SECONDS each, RUNS rounds (players alternated
// within a round), and writes every sample and a summary per run as JSON.
//
//   node web/scripts/latency.mjs [OUT.json] [SECONDS] [RUNS]
//   make web-latency-all    (OUT docs/results/latency/browser-DATE.json, 60 s, 2 runs)
//
// PLAYERS=wspush,dashjs,hlsjs picks the players. Environment as the browser tests: STREAMBED_BIN, STREAMBED_TEST_ASSETS (the asset
// "demo" looped as channel "ll", chunk 40 ms), CHROMIUM_PATH. Latency is the page's:
// the origin's clock (GET /time, the UTCTiming source) minus the wall time of the
// playhead, the same definition for every player. The first quarter of each run is
// start-up and steering and is left out of the summary. The machine's load during each
// run is recorded beside it (testkit/browser.mjs playAndSample).

import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { launchBrowser, median, playAndSample, CHROMIUM_PATH } from '../testkit/browser.mjs';
import { loadEvidence, percentile } from '../testkit/checks.mjs';
import { REPO_ROOT, startStreambed } from '../testkit/server.mjs';

const stamp = new Date().toISOString().slice(0, 16).replace(':', '') + 'Z';
const [out = resolve(REPO_ROOT, `docs/results/latency/browser-${stamp}.json`), secondsArg = '60', runsArg = '2'] = process.argv.slice(2);
const seconds = Number(secondsArg);
const runs = Number(runsArg);
const players = (process.env.PLAYERS || 'wspush,dashjs,hlsjs').split(',');
const channel = 'll=demo,dvr=60s,chunk=40ms';

const git = (...a) => { try { return execFileSync('git', ['-C', REPO_ROOT, ...a], { encoding: 'utf8' }).trim(); } catch { return null; } };
// SERVE_ARGS: more `streambed serve` flags, e.g. "--tcp-pacing-guard=false".
const serveArgs = (process.env.SERVE_ARGS || '').split(/\s+/).filter(Boolean);
const server = await startStreambed({ channels: [channel], args: serveArgs });
const browser = await launchBrowser();
const doc = {
  command: `node web/scripts/latency.mjs ${process.argv.slice(2).join(' ')}`.trim(),
  server: server.command,
  commit: git('rev-parse', '--short', 'HEAD'),
  dirty: git('status', '--porcelain', '--untracked-files=no') !== '',
  chromium: (() => { try { return execFileSync(CHROMIUM_PATH, ['--version'], { encoding: 'utf8' }).trim(); } catch { return CHROMIUM_PATH; } })(),
  seconds,
  runs: [],
};
try {
  for (let i = 1; i <= runs; i++) {
    for (const player of players) {
      const url = `${server.baseURL}/?stream=ll&live=1&player=${player}`;
      const { page, log } = await browser.newPage();
      try {
        const r = await playAndSample(page, url, { seconds });
        const samples = r.samples.map((s) => ({
          wallMs: s.wallMs, currentTime: s.currentTime, latencyS: s.latencyS, targetLatencyS: s.targetLatencyS,
          bufferS: s.bufferS, stalls: s.stalls, stallMs: s.stallMs, lagMs: s.lagMs,
        }));
        const steady = samples.slice(Math.floor(samples.length / 4)).filter((s) => s.latencyS != null);
        const lat = steady.map((s) => s.latencyS);
        const run = {
          run: i, player, url,
          startupMs: r.startup.startupMs,
          error: r.last.error,
          stalls: r.last.stalls,
          stallMs: r.last.stallMs,
          latencyS: lat.length ? { median: median(lat), p90: percentile(lat, 0.9), min: Math.min(...lat), max: Math.max(...lat) } : null,
          targetLatencyS: r.last.targetLatencyS,
          machine: r.machine,
          load: loadEvidence(r.machine).why,
          browserLog: log.slice(-20),
          samples,
        };
        doc.runs.push(run);
        const l = run.latencyS;
        console.log(`run ${i} ${player}: start-up ${Math.round(run.startupMs)} ms, stalls ${run.stalls} (${run.stallMs} ms), ` +
          `latency median ${l ? l.median.toFixed(2) : '–'} s, p90 ${l ? l.p90.toFixed(2) : '–'} s, target ${run.targetLatencyS ?? '–'} s (${run.load})`);
      } finally {
        await page.close().catch(() => {});
      }
    }
  }
  // The origin's pacing guard's counters (restarts of collapsed connections' congestion control).
  const metrics = await (await fetch(`${server.baseURL}/metrics`)).text();
  doc.origin_pacing_guard = metrics.split('\n').filter((l) => l.startsWith('streambed_tcp_pacing_'));
} finally {
  await browser.close();
  await server.stop();
}
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(doc, null, 1)}\n`);
console.log(`wrote ${out}`);
