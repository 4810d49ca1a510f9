// Browser latency of WebSocket push on loopback (docs/results/wspush-latency.md): starts
// `streambed serve` with a live channel in one-frame chunks, plays it with the player
// page's WebSocket push player in headless Chromium for SECONDS, RUNS times, and writes
// every sample and a summary per run as JSON.
//
//   node web/scripts/wspush-latency.mjs [OUT.json] [SECONDS] [RUNS]
//   make web-latency    (OUT docs/results/wspush-latency/browser-DATE.json, 30 s, 2 runs)
//
// Environment as the browser tests: STREAMBED_BIN, STREAMBED_TEST_ASSETS (the asset
// "demo" looped as channel "ll", chunk 40 ms), CHROMIUM_PATH. Latency is measured two
// ways at every sample: the page's (origin clock from GET /time minus the wall time
// of currentTime) and here, from the server's ready message (Date.now() −
// (availabilityStart + currentTime)). The machine's load during each run is recorded
// beside it (testkit/browser.mjs playAndSample).

import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { launchBrowser, median, playAndSample, CHROMIUM_PATH } from '../testkit/browser.mjs';
import { loadEvidence, percentile, watchPush } from '../testkit/checks.mjs';
import { REPO_ROOT, startStreambed } from '../testkit/server.mjs';

const stamp = new Date().toISOString().slice(0, 16).replace(':', '') + 'Z';
const [out = resolve(REPO_ROOT, `docs/results/wspush-latency/browser-${stamp}.json`), secondsArg = '30', runsArg = '2'] = process.argv.slice(2);
const seconds = Number(secondsArg);
const runs = Number(runsArg);
const channel = 'll=demo,dvr=60s,chunk=40ms';

const git = (...a) => { try { return execFileSync('git', ['-C', REPO_ROOT, ...a], { encoding: 'utf8' }).trim(); } catch { return null; } };
const server = await startStreambed({ channels: [channel] });
const browser = await launchBrowser();
const doc = {
  command: `node web/scripts/wspush-latency.mjs ${process.argv.slice(2).join(' ')}`.trim(),
  server: server.command,
  commit: git('rev-parse', '--short', 'HEAD'),
  dirty: git('status', '--porcelain', '--untracked-files=no') !== '',
  chromium: (() => { try { return execFileSync(CHROMIUM_PATH, ['--version'], { encoding: 'utf8' }).trim(); } catch { return CHROMIUM_PATH; } })(),
  url: `${server.baseURL}/?stream=ll&live=1&player=wspush`,
  seconds,
  runs: [],
};
try {
  for (let i = 1; i <= runs; i++) {
    const { page, log } = await browser.newPage();
    const wire = watchPush(page);
    try {
      const r = await playAndSample(page, doc.url, { seconds });
      const ast = wire.ready?.availabilityStart ? Date.parse(wire.ready.availabilityStart) / 1000 : null;
      const samples = r.samples.map((s) => ({
        wallMs: s.wallMs, currentTime: s.currentTime, latencyS: s.latencyS, targetLatencyS: s.targetLatencyS,
        latencyFromReadyS: ast == null ? null : s.wallMs / 1000 - (ast + s.currentTime),
        bufferS: s.bufferS, stalls: s.stalls, stallMs: s.stallMs, serverTrack: s.serverTrack, lagMs: s.lagMs,
      }));
      // The first quarter is start-up and the steering settling, as in the first run of this page.
      const steady = samples.slice(Math.floor(samples.length / 4));
      const lat = steady.map((s) => s.latencyFromReadyS);
      const run = {
        run: i,
        startupMs: r.startup.startupMs,
        error: r.last.error,
        stalls: r.last.stalls,
        stallMs: r.last.stallMs,
        latencyS: { mean: lat.reduce((a, b) => a + b, 0) / lat.length, median: median(lat), p90: percentile(lat, 0.9), max: Math.max(...lat) },
        pageLatencyS: { median: median(steady.map((s) => s.latencyS)) },
        targetLatencyS: r.last.targetLatencyS,
        serverTrack: r.last.serverTrack,
        serverReason: r.last.serverReason,
        push: r.last.push,
        machine: r.machine,
        load: loadEvidence(r.machine).why,
        browserLog: log.slice(-20),
        samples,
      };
      doc.runs.push(run);
      console.log(`run ${i}: start-up ${Math.round(run.startupMs)} ms, stalls ${run.stalls}, latency mean ${run.latencyS.mean.toFixed(2)} s, max ${run.latencyS.max.toFixed(2)} s, track ${run.serverTrack} (${run.load})`);
    } finally {
      await page.close().catch(() => {});
    }
  }
} finally {
  await browser.close();
  await server.stop();
}
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(doc, null, 1)}\n`);
console.log(`wrote ${out}`);
