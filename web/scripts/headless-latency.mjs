// The headless player against the browser (docs/results/latency.md): starts
// `streambed serve` with a live channel in one-frame chunks and plays it at the same
// time with the player page in headless Chromium and with `streambed play --json`, on
// each low-latency path both have — WebSocket push, LL-DASH (dash.js) and LL-HLS
// (hls.js) — for SECONDS
// each, RUNS rounds, and writes every sample and a summary per run as JSON.
//
//   node web/scripts/headless-latency.mjs [OUT.json] [SECONDS] [RUNS]
//   (OUT default docs/results/latency/headless-DATE.json, 30 s, 3 runs)
//
// Environment as the browser tests: STREAMBED_BIN, STREAMBED_TEST_ASSETS (the asset
// "demo" looped as channel "ll", chunk 40 ms), CHROMIUM_PATH. Latency on one
// definition for both: the origin's clock (GET /time, the UTCTiming source) minus the
// wall time of the playhead. The first quarter of each run is left out of the summary.

import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { launchBrowser, median, playAndSample, CHROMIUM_PATH } from '../testkit/browser.mjs';
import { loadEvidence, percentile } from '../testkit/checks.mjs';
import { headlessLatencies, headlessPlay, lowLatencyPaths, steady } from '../testkit/headless.mjs';
import { REPO_ROOT, startStreambed } from '../testkit/server.mjs';

const stamp = new Date().toISOString().slice(0, 16).replace(':', '') + 'Z';
const [out = resolve(REPO_ROOT, `docs/results/latency/headless-${stamp}.json`), secondsArg = '30', runsArg = '3'] = process.argv.slice(2);
const seconds = Number(secondsArg);
const runs = Number(runsArg);
const channel = 'll';

const git = (...a) => { try { return execFileSync('git', ['-C', REPO_ROOT, ...a], { encoding: 'utf8' }).trim(); } catch { return null; } };
const summary = (lat) => (lat.length ? { median: median(lat), p90: percentile(lat, 0.9), min: Math.min(...lat), max: Math.max(...lat) } : null);
const server = await startStreambed({ channels: [`${channel}=demo,dvr=60s,chunk=40ms`] });
const browser = await launchBrowser();
const doc = {
  command: `node web/scripts/headless-latency.mjs ${process.argv.slice(2).join(' ')}`.trim(),
  server: server.command,
  commit: git('rev-parse', '--short', 'HEAD'),
  dirty: git('status', '--porcelain', '--untracked-files=no') !== '',
  chromium: (() => { try { return execFileSync(CHROMIUM_PATH, ['--version'], { encoding: 'utf8' }).trim(); } catch { return CHROMIUM_PATH; } })(),
  note: 'browser and headless player run at the same time against one origin on loopback; the machine (2 cores) was shared with other work',
  seconds,
  runs: [],
};
try {
  for (let i = 1; i <= runs; i++) {
    for (const path of lowLatencyPaths(server.baseURL, channel)) {
      const pageURL = `${server.baseURL}/?stream=${channel}&live=1&player=${path.player}`;
      const { page, log } = await browser.newPage();
      try {
        const [r, h] = await Promise.all([playAndSample(page, pageURL, { seconds }), headlessPlay(path.url, { seconds })]);
        const b = summary(steady(r.samples.map((s) => s.latencyS)));
        const hl = summary(steady(headlessLatencies(h.rep)));
        const run = {
          run: i, path: path.name, pageURL, headless: h.command,
          browser: { latencyS: b, targetLatencyS: r.last.targetLatencyS, stalls: r.last.stalls, stallMs: r.last.stallMs, startupMs: r.startup.startupMs, error: r.last.error },
          headlessReport: { latencyS: hl, targetLatencyS: h.rep.target_latency_ms / 1000, targetSource: h.rep.target_source, stalls: h.rep.stall_count, stallMs: h.rep.stall_ms,
            chunkAppends: h.rep.chunk_appends, playbackRate: [h.rep.playback_rate_min ?? 1, h.rep.playback_rate_max ?? 1], startupMs: h.rep.startup_delay_ms, exit: h.code, error: h.rep.error ?? null },
          diffS: b && hl ? hl.median - b.median : null,
          machine: r.machine, load: loadEvidence(r.machine).why,
          browserLog: log.slice(-10),
          browserSamples: r.samples.map((s) => ({ wallMs: s.wallMs, latencyS: s.latencyS, bufferS: s.bufferS })),
          headlessSamples: h.rep.samples,
        };
        doc.runs.push(run);
        console.log(`run ${i} ${path.name}: browser median ${b?.median.toFixed(3)} s, headless ${hl?.median.toFixed(3)} s ` +
          `(diff ${run.diffS?.toFixed(3)} s; targets ${run.browser.targetLatencyS} / ${run.headlessReport.targetLatencyS} s; stalls ${run.browser.stalls} / ${run.headlessReport.stalls}) (${run.load})`);
      } finally {
        await page.close().catch(() => {});
      }
    }
  }
} finally {
  await browser.close();
  await server.stop();
}
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify(doc, null, 2) + '\n');
console.log(`wrote ${out}`);
