// Browser tests of a channel that an encoder feeds: `streambed serve` with a publishing
// point (--ingest), `streambed encode live` (FFmpeg, the small ladder) posting to it,
// and the page playing it with dash.js ($Number$ and SegmentTimeline), hls.js and
// WebSocket push: the ingested channel plays as a looped one does.
//
// Run with `make web-test`, or `node --test web/test/ingest.test.mjs` after building.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '../testkit/browser.mjs';
import { checkPlayback } from '../testkit/checks.mjs';
import { startStreambed, streambedBin } from '../testkit/server.mjs';

const CHANNEL = 'studio';
const TOKEN = 'browser-test-token';

describe('an ingested channel in the player page', { timeout: 600_000 }, () => {
  let server;
  let browser;
  let encoder;
  let encoderOut = '';

  before(async () => {
    server = await startStreambed({ channels: [''], args: ['--ingest', `${CHANNEL},token=${TOKEN},segment=2s`] });
    // FFmpeg encodes the small ladder in real time (ultrafast: beside Chromium on two
    // cores) for as long as the tests run; `after` stops it.
    encoder = spawn(streambedBin(), ['encode', 'live', '--to', `${server.baseURL}/ingest/${CHANNEL}`, '--token', TOKEN,
      '--preset', 'ultrafast', '--duration', '400'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (b) => { encoderOut = (encoderOut + b.toString()).slice(-4000); };
    encoder.stdout.on('data', keep);
    encoder.stderr.on('data', keep);
    process.once('exit', () => encoder.kill('SIGKILL'));
    browser = await launchBrowser();
    // Three complete segments in every track before a player starts.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const mpd = await (await fetch(`${server.baseURL}/live/${CHANNEL}/manifest-timeline.mpd`)).text();
      // Segments per SegmentTimeline (one per adaptation set: video, audio).
      const counts = [...mpd.matchAll(/<SegmentTimeline>([\s\S]*?)<\/SegmentTimeline>/g)].map((tl) =>
        [...tl[1].matchAll(/<S [^>]*?(?:r="(\d+)")?\s*\/>/g)].reduce((n, m) => n + 1 + Number(m[1] ?? 0), 0));
      if (counts.length >= 2 && Math.min(...counts) >= 3) break;
      assert.ok(Date.now() < deadline, `no three segments ingested after 60 s\nencoder:\n${encoderOut}\nserver:\n${server.output().slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  });

  after(async () => {
    encoder?.kill('SIGTERM');
    await browser?.close();
    await server?.stop();
  });

  test('the publishing point is listed as live with its ws URL', async () => {
    const res = await fetch(`${server.baseURL}/api/streams`);
    const { streams } = await res.json();
    const s = streams.find((x) => x.name === CHANNEL);
    assert.ok(s && s.live && s.state === 'live' && s.ws, `/api/streams: ${JSON.stringify(s)}`);
    assert.ok(s.tracks.some((t) => t.kind === 'video') && s.tracks.some((t) => t.kind === 'audio'), JSON.stringify(s.tracks));
  });

  // dash.js plays both addressing forms: $Number$ (manifest.mpd) and SegmentTimeline
  // with $Time$ (manifest-timeline.mpd, the load tests' form).
  for (const [player, query, what] of [['dashjs', '', 'dash.js ($Number$)'], ['dashjs', 'mpd=timeline', 'dash.js (SegmentTimeline)'],
    ['hlsjs', '', 'hls.js'], ['wspush', '', 'WebSocket push']]) {
    test(`the ingested channel plays with ${what}`, { timeout: 90_000 }, async (t) => {
      try {
        const r = await checkPlayback(browser, server.baseURL, { name: CHANNEL, live: true, player, query, segmentMs: 2000, seconds: 12, label: t.name });
        t.diagnostic(r.summary);
      } catch (err) {
        err.message += `\nencoder (tail):\n${encoderOut}\nserver output (tail):\n${server.output().slice(-3000)}`;
        throw err;
      }
    });
  }
});
