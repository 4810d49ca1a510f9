// A real browser as a lab client: opens the player page in headless Chromium with one
// player (dash.js, hls.js or WebSocket push) on one stream, plays for a while (or an
// on-demand stream to its end) and prints one JSON object with the keys of
// `streambed play --json` where the browser can tell them. The lab runner starts it
// inside the client host's network namespace (internal/lab/experiment/browser.go), so
// Chromium's own network stack crosses the emulated link.
//
//   node web/scripts/labclient.mjs --page URL [--seconds N] [--max-seconds N]
//        [--link-rate BITS_PER_S] [--transport NAME] [--start-timeout S]
//
// --page is the page's deep link (http(s)://ORIGIN/?stream=NAME&live=1|0&player=P).
// --seconds is the session from the player's start (0: play an on-demand stream until
// it ends, at most --max-seconds). --link-rate (bit/s) gives link_utilisation: media
// bits per second of session over it, as the headless player defines it. Certificate
// errors are ignored (the lab origin's certificate is self-signed).
//
// Where the figures come from: start-up, stalls, latency, buffer, the rendition's
// declared bitrate from the page's own QoE recorder
// (window.streambed.stats(), web/src/stats.ts); requests, protocol and media bytes
// from Chromium's DevTools protocol (Network domain); switches and the
// time-weighted bitrate from a 100 ms probe in the page. Latency is the page's (the
// same figure as docs/results/latency.md), its median after the first quarter of the
// session (start-up and steering). Exit status 1 when playback failed; the JSON still
// says what happened.

import { execFileSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { launchBrowser, median, CHROMIUM_PATH } from '../testkit/browser.mjs';
import { percentile } from '../testkit/checks.mjs';
import { watchTimings } from './reqtiming.mjs';

const USAGE = 'usage: node web/scripts/labclient.mjs --page URL [--seconds N] [--max-seconds N] [--link-rate BPS] [--transport NAME] [--start-timeout S]';

function parseArgs(argv) {
  const o = { page: '', seconds: 30, maxSeconds: 600, linkRate: 0, transport: '', startTimeout: 30 };
  const num = (k, v) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new Error(`${k} ${JSON.stringify(v)}: want a number ≥ 0\n${USAGE}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = argv[i + 1];
    if (v === undefined) throw new Error(`${k} needs a value\n${USAGE}`);
    i++;
    if (k === '--page') o.page = v;
    else if (k === '--seconds') o.seconds = num(k, v);
    else if (k === '--max-seconds') o.maxSeconds = num(k, v);
    else if (k === '--link-rate') o.linkRate = num(k, v);
    else if (k === '--transport') o.transport = v;
    else if (k === '--start-timeout') o.startTimeout = num(k, v);
    else throw new Error(`unknown flag ${k}\n${USAGE}`);
  }
  if (!o.page) throw new Error(`--page is required\n${USAGE}`);
  const u = new URL(o.page); // throws on a bad URL
  if (!['dashjs', 'hlsjs', 'wspush'].includes(u.searchParams.get('player') ?? '')) {
    throw new Error(`--page ${o.page}: want player=dashjs, hlsjs or wspush in the query`);
  }
  return o;
}

/** Installs, before the page's scripts, a 100 ms probe of the played rendition: switches
 * (changes of the video rendition's declared bitrate while playing) and bit-seconds for
 * the time-weighted average bitrate. */
async function installRenditionProbe(page) {
  await page.addInitScript(() => {
    const probe = { switches: 0, bitS: 0, playS: 0, last: null, perBitrateS: {} };
    let t = performance.now();
    setInterval(() => {
      const now = performance.now();
      const dt = (now - t) / 1000;
      t = now;
      const s = window.streambed?.stats?.();
      if (!s || !s.playing || s.bitrateBps == null) return;
      if (probe.last != null && s.bitrateBps !== probe.last) probe.switches++;
      probe.last = s.bitrateBps;
      probe.bitS += s.bitrateBps * dt;
      probe.playS += dt;
      probe.perBitrateS[s.bitrateBps] = (probe.perBitrateS[s.bitrateBps] ?? 0) + dt;
    }, 100);
    window.__labProbe = probe;
  });
}

/** With the page's ?hlsdebug=abr (a diagnostic run), records what each part's
 * XMLHttpRequest reported to the player as it loaded: the time of every progress event
 * after send() and the bytes it gave (hls.js's loader judges a part's progress from
 * these). */
async function installXhrProbe(page) {
  await page.addInitScript(() => {
    if (new URLSearchParams(window.location.search).get('hlsdebug') !== 'abr') return;
    const parts = [];
    window.__xhrParts = parts;
    const open = XMLHttpRequest.prototype.open;
    const send = XMLHttpRequest.prototype.send;
    XMLHttpRequest.prototype.open = function (method, url, ...rest) {
      this.__probeUrl = String(url);
      return open.call(this, method, url, ...rest);
    };
    XMLHttpRequest.prototype.send = function (...args) {
      const url = this.__probeUrl ?? '';
      if (/\/\d+\.\d+\.m4s$/.test(url) && parts.length < 5000) {
        const rec = { path: url.split('/').slice(-2).join('/'), progress: [], end: null, total: 0 };
        const t0 = performance.now();
        parts.push(rec);
        this.addEventListener('progress', (e) => {
          if (rec.progress.length < 8) rec.progress.push([Math.round(performance.now() - t0), e.loaded]);
          rec.total = e.total || rec.total;
        });
        this.addEventListener('loadend', () => {
          rec.end = Math.round(performance.now() - t0);
        });
      }
      return send.apply(this, args);
    };
  });
}

/** Counts what Chromium's network stack did for the stream through the DevTools
 * protocol: requests by XHR/fetch other than the page's own API (manifests,
 * playlists, the clock, segments, parts), the bodies of those that are media (not a
 * manifest, playlist or clock), the protocols, and WebSocket frames (binary frames
 * are media). The players' own byte counters differ by player (hls.js counts a part's
 * fragment more than once), so media bytes come from here, the same for every player. */
async function watchNetwork(page) {
  const cdp = await page.context().newCDPSession(page);
  const net = { requests: 0, failed: 0, payloadBytes: 0, mediaRequests: 0, mediaBytes: 0, protocols: new Set(), wsFrames: 0, wsBytes: 0 };
  const stream = new Map(); // requestId → { media, bytes } (decoded body bytes so far)
  const kind = (url, type) => {
    if (type !== 'XHR' && type !== 'Fetch') return null;
    let path;
    try {
      path = new URL(url).pathname;
    } catch {
      return null;
    }
    if (path.startsWith('/api/')) return null;
    return { media: !/\.(mpd|m3u8)$/.test(path) && path !== '/time', bytes: 0 };
  };
  cdp.on('Network.requestWillBeSent', (e) => {
    const k = kind(e.request.url, e.type);
    if (k) stream.set(e.requestId, k);
  });
  cdp.on('Network.responseReceived', (e) => {
    if (stream.has(e.requestId) && e.response.protocol) net.protocols.add(e.response.protocol);
  });
  cdp.on('Network.dataReceived', (e) => {
    const r = stream.get(e.requestId);
    if (r) r.bytes += e.dataLength;
  });
  cdp.on('Network.loadingFinished', (e) => {
    const r = stream.get(e.requestId);
    if (!r) return;
    net.requests++;
    net.payloadBytes += r.bytes;
    if (r.media) {
      net.mediaRequests++;
      net.mediaBytes += r.bytes;
    }
    stream.delete(e.requestId);
  });
  cdp.on('Network.loadingFailed', (e) => {
    if (!stream.has(e.requestId)) return;
    if (!e.canceled) net.failed++;
    stream.delete(e.requestId);
  });
  cdp.on('Network.webSocketCreated', () => net.protocols.add('websocket'));
  cdp.on('Network.webSocketFrameReceived', (e) => {
    net.wsFrames++;
    const d = e.response.payloadData ?? '';
    if (e.response.opcode !== 2) {
      net.wsBytes += d.length; // text: control messages
      return;
    }
    // Binary frames (media) come base64-encoded.
    const n = Math.floor((d.length * 3) / 4) - (d.endsWith('==') ? 2 : d.endsWith('=') ? 1 : 0);
    net.wsBytes += n;
    net.mediaBytes += n;
  });
  net.timings = watchTimings(cdp);
  await cdp.send('Network.enable');
  return net;
}

const protoName = (p) => ({ 'http/1.1': 'HTTP/1.1', h2: 'HTTP/2.0', h3: 'HTTP/3.0', websocket: 'WebSocket' })[p] ?? p;
const round3 = (x) => (x == null || !Number.isFinite(x) ? null : Math.round(x * 1000) / 1000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function cpuTimes() {
  let busy = 0;
  let total = 0;
  for (const c of cpus()) {
    busy += c.times.user + c.times.sys + c.times.irq;
    total += c.times.user + c.times.nice + c.times.sys + c.times.irq + c.times.idle;
  }
  return { busy, total };
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const url = new URL(o.page);
  const player = url.searchParams.get('player');
  const live = url.searchParams.get('live') === '1';
  const browser = await launchBrowser({ args: ['--ignore-certificate-errors'] });
  const report = {
    client: 'browser',
    player,
    url: o.page,
    transport: o.transport,
    live,
    browser: (() => {
      try {
        return execFileSync(CHROMIUM_PATH, ['--version'], { encoding: 'utf8' }).trim();
      } catch {
        return CHROMIUM_PATH;
      }
    })(),
  };
  let failed = false;
  try {
    const { page, log } = await browser.newPage();
    // The page's warnings and errors with their time, to read beside the request log
    // (a player's stall or error next to the requests around it).
    const events = [];
    page.on('console', (m) => {
      const text = m.text();
      // hls.js's rendition decisions when the page has ?hlsdebug=abr (web/src/players/hls.ts).
      if (m.type() === 'error' || m.type() === 'warning' || text.startsWith('hlsabr: ')) events.push([Date.now(), text.slice(0, 240)]);
    });
    await installRenditionProbe(page);
    await installXhrProbe(page);
    const net = await watchNetwork(page);
    const cpu0 = cpuTimes();
    await page.goto(o.page, { waitUntil: 'load', timeout: o.startTimeout * 1000 });
    // An on-demand stream has ended when the playhead is at the media's end: dash.js
    // over HTTP/2 sometimes leaves the element waiting there without an 'ended' event
    // (seen in 3 of 8 runs of experiments/h2-pull-dashjs.yaml), which would otherwise
    // count minutes of nothing as session time.
    const stats = () =>
      page.evaluate((live) => {
        const v = document.querySelector('video');
        const atEnd = !live && v != null && Number.isFinite(v.duration) && v.duration > 0 && v.currentTime >= v.duration - 0.1;
        return { ...window.streambed.stats(), ended: v?.ended ?? false, atEnd, endedEvent: v?.ended ?? false };
      }, live);
    // The session starts when the page creates its player (after its stream list), as
    // the headless player's starts before its manifest request: page load is not in it.
    await page.waitForFunction(() => window.streambed?.stats?.().player != null, null, { timeout: o.startTimeout * 1000, polling: 20 });
    const t0 = Date.now();
    report.player_version = await page.evaluate(() => document.getElementById('now-title')?.textContent ?? null).catch(() => null);

    const samples = [];
    let s = await stats();
    let endReason = 'duration';
    for (;;) {
      const el = (Date.now() - t0) / 1000;
      samples.push({
        t: round3(el),
        buffer_s: round3(s.bufferS),
        bitrate_kbps: s.bitrateBps == null ? 0 : s.bitrateBps / 1000,
        state: s.error ? 'error' : s.ended ? 'ended' : s.startupMs == null ? 'startup' : s.playing ? 'playing' : 'stalled',
        latency_ms: s.latencyS == null ? undefined : round3(s.latencyS * 1000),
        current_time: round3(s.currentTime),
      });
      if (s.error) {
        endReason = 'error';
        break;
      }
      if (s.ended || s.atEnd) {
        endReason = 'ended';
        report.ended_event = s.endedEvent;
        break;
      }
      if (s.startupMs == null && el > o.startTimeout) {
        report.error = `playback did not start within ${o.startTimeout} s`;
        endReason = 'error';
        break;
      }
      if (o.seconds > 0 ? el >= o.seconds : el >= o.maxSeconds) break;
      await sleep(500);
      s = await stats();
    }
    const sessionS = (Date.now() - t0) / 1000;
    const probe = await page.evaluate(() => window.__labProbe);
    const cpu1 = cpuTimes();

    report.end_reason = endReason;
    if (s.error) report.error = s.error;
    report.session_s = round3(sessionS);
    report.played_s = round3(s.currentTime - (samples.find((x) => x.state === 'playing')?.current_time ?? s.currentTime));
    report.startup_delay_ms = round3(s.startupMs);
    report.stall_count = s.stalls;
    report.stall_ms = round3(s.stallMs);
    report.short_waits = s.shortWaits;
    report.waits = s.waits; // the page's last 20 waits: media time and length (stalls are those of 100 ms or more)
    report.switches = probe.switches;
    report.avg_bitrate_kbps = probe.playS > 0 ? round3(probe.bitS / probe.playS / 1000) : null;
    report.per_bitrate_s = Object.fromEntries(Object.entries(probe.perBitrateS).map(([k, v]) => [`${Number(k) / 1000}k`, round3(v)]));
    // Requests are what the page asked for the stream, counted by Chromium (WebSocket
    // push: the socket's frames are counted apart). Media bytes are init and media
    // bodies (binary frames over push). Protocol overhead (headers, framing) is not
    // visible from the page.
    report.requests = net.requests;
    report.media_requests = net.mediaRequests;
    report.failed_requests = net.failed;
    report.payload_bytes = net.payloadBytes + net.wsBytes;
    report.media_bytes = net.mediaBytes;
    report.page_segments = s.requests;
    report.page_segment_bytes = s.bytes;
    report.overhead_bytes = null;
    report.overhead_source = 'not observable from the page';
    report.ws_frames = net.wsFrames;
    report.protocol = [...net.protocols].map(protoName).join(',');
    // Where each request's time went (web/scripts/reqtiming.mjs): by kind, and the
    // slowest few.
    report.request_timing = net.timings.result();
    report.request_log = net.timings.log(t0);
    report.t0_ms = t0; // epoch ms of the session's start: puts metrics.client_tcp's events beside the log
    report.page_events = events.map(([t, text]) => [t - t0, text]);
    const xhrParts = await page.evaluate(() => window.__xhrParts ?? null).catch(() => null);
    if (xhrParts) report.xhr_parts = xhrParts;
    report.dropped_frames = s.droppedFrames;
    report.total_frames = s.totalFrames;
    report.throughput_kbps = null; // the page does not time its downloads
    if (o.linkRate > 0) {
      report.link_rate_kbps = o.linkRate / 1000;
      report.link_utilisation = sessionS > 0 ? round3((net.mediaBytes * 8) / sessionS / o.linkRate) : null;
    } else {
      report.link_rate_kbps = null;
      report.link_utilisation = null;
    }
    if (live) {
      const playing = samples.filter((x) => x.latency_ms != null && x.state === 'playing');
      const steady = playing.slice(Math.floor(playing.length / 4)).map((x) => x.latency_ms);
      report.latency_ms = round3(median(steady));
      report.latency_p90_ms = steady.length ? round3(percentile(steady, 0.9)) : null;
      report.latency_min_ms = steady.length ? Math.min(...steady) : null;
      report.latency_max_ms = steady.length ? Math.max(...steady) : null;
      report.latency_end_ms = s.latencyS == null ? null : round3(s.latencyS * 1000);
      report.target_latency_ms = s.targetLatencyS == null ? null : round3(s.targetLatencyS * 1000);
      report.latency_note = 'the page\'s latency, median after the first quarter of the session';
    } else {
      report.latency_ms = null;
    }
    if (s.push) report.push = s.push;
    // hls.js on LL-HLS: its part-abandon rule and the page's guard (hls-abandon.ts).
    if (s.hlsAbandon) report.hls_abandon = s.hlsAbandon;
    if (s.serverTrack != null) report.server_track = s.serverTrack;
    report.machine = {
      cores: cpus().length,
      cpu_busy: cpu1.total > cpu0.total ? round3((cpu1.busy - cpu0.busy) / (cpu1.total - cpu0.total)) : null,
      load_per_core: round3(loadavg()[0] / cpus().length),
    };
    report.browser_log = log.slice(-20);
    report.samples = samples;
    failed = endReason === 'error';
    await page.close().catch(() => {});
  } catch (err) {
    report.end_reason = 'error';
    report.error = err.message;
    failed = true;
  } finally {
    await browser.close();
  }
  process.stdout.write(`${JSON.stringify(report)}\n`);
  if (failed) {
    process.stderr.write(`labclient: ${report.error ?? 'playback failed'}\n`);
    process.exitCode = 1;
  }
}

main().catch((err) => {
  process.stderr.write(`labclient: ${err.message}\n`);
  process.exitCode = 2;
});
