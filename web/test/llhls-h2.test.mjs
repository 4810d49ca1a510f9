// LL-HLS over HTTP/2 from a page loaded over plain HTTP (web/src/h2.ts): the origin
// serves TLS too, /api/streams lists its port, and the page plays LL-HLS from it when
// the browser can reach it — it cannot while the self-signed certificate is not
// trusted, and then the page stays on HTTP/1.1 and warns. ?hlsproto=http1 keeps it on
// HTTP/1.1 (the lab's HTTP/1.1 row). The protocol of every playlist and part request
// is Chromium's own (DevTools Network.responseReceived), not the page's claim.
//
//   STREAMBED_BIN, STREAMBED_TEST_ASSETS, CHROMIUM_PATH as in player.test.mjs.

import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '../testkit/browser.mjs';
import { startStreambed } from '../testkit/server.mjs';

const CHANNEL = 'demo-ll';

describe('LL-HLS over HTTP/2 from an http: page', { timeout: 600_000 }, () => {
  let server;
  let dataDir;

  before(async () => {
    // The self-signed certificate is made in the data folder: a fresh one per run.
    dataDir = await mkdtemp(join(tmpdir(), 'streambed-llhls-h2-'));
    server = await startStreambed({ channels: [`${CHANNEL}=demo,dvr=60s,chunk=40ms`], https: true, args: ['--data-dir', dataDir] });
  });

  after(async () => {
    await server?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  test('/api/streams lists the TLS port', async () => {
    const doc = await (await fetch(`${server.baseURL}/api/streams`)).json();
    assert.equal(doc.https_port, Number(new URL(server.httpsURL).port), JSON.stringify(doc));
  });

  test('with the certificate accepted, hls.js loads LL-HLS over HTTP/2 from the TLS port and plays', { timeout: 180_000 }, async () => {
    const browser = await launchBrowser({ args: ['--ignore-certificate-errors'] });
    try {
      const r = await play(browser, '');
      assert.equal(new URL(r.url).origin, server.httpsURL, `the page plays ${r.url}, not from ${server.httpsURL}`);
      assert.deepEqual(r.protocols, ['h2'], `playlists and parts went over ${r.protocols.join(', ')}, want h2 only`);
      assert.ok(r.parts >= 10, `only ${r.parts} parts were loaded over h2`);
      assert.equal(r.note, null, 'a note about HTTP/1.1 while playing over HTTP/2');
    } finally {
      await browser.close();
    }
  });

  test('?hlsproto=http1 keeps LL-HLS on the page origin (HTTP/1.1)', { timeout: 180_000 }, async () => {
    const browser = await launchBrowser({ args: ['--ignore-certificate-errors'] });
    try {
      const r = await play(browser, '&hlsproto=http1');
      assert.equal(new URL(r.url).origin, server.baseURL, r.url);
      assert.deepEqual(r.protocols, ['http/1.1'], `playlists and parts went over ${r.protocols.join(', ')}`);
    } finally {
      await browser.close();
    }
  });

  test('an untrusted certificate leaves LL-HLS on HTTP/1.1, with a warning that says how to get HTTP/2', { timeout: 180_000 }, async () => {
    const browser = await launchBrowser();
    try {
      const r = await play(browser, '');
      assert.equal(new URL(r.url).origin, server.baseURL, r.url);
      assert.deepEqual(r.protocols, ['http/1.1'], `playlists and parts went over ${r.protocols.join(', ')}`);
      assert.ok(r.log.some((l) => l.includes('LL-HLS over HTTP/1.1') && l.includes(server.httpsURL)),
        `no warning naming ${server.httpsURL}:\n${r.log.join('\n')}`);
      // And on the page, for a person: a note linking the HTTPS page of this stream.
      assert.ok(r.note && new URL(r.note.link).origin === server.httpsURL && /stream=demo-ll/.test(r.note.link),
        `no visible note linking ${server.httpsURL}: ${JSON.stringify(r.note)}`);
    } finally {
      await browser.close();
    }
  });

  /** Opens the page on plain HTTP with hls.js on the low-latency channel, waits for
   * 3 s of playback (generous deadline: a loaded machine starts slowly), and returns
   * the URL the page played, the protocols of its playlist and part responses, the
   * part count and the page's warnings. */
  async function play(browser, query) {
    const { page, log } = await browser.newPage();
    const cdp = await page.context().newCDPSession(page);
    const protocols = new Set();
    let parts = 0;
    cdp.on('Network.responseReceived', (e) => {
      // hls.js's own requests (XHR); Chromium also fetches the page's link to the
      // playlist by itself (type Other), which is not the player's.
      if (e.type !== 'XHR' && e.type !== 'Fetch') return;
      const path = new URL(e.response.url).pathname;
      if (!/\.m3u8$|\/\d+\.\d+\.m4s$/.test(path)) return;
      protocols.add(e.response.protocol);
      if (/\.m4s$/.test(path)) parts++;
    });
    await cdp.send('Network.enable');
    try {
      await page.goto(`${server.baseURL}/?stream=${CHANNEL}&live=1&player=hlsjs${query}`);
      // Live media time starts far from 0: wait for 3 s of it to play from the first
      // moment the page says it plays.
      await page.waitForFunction(() => {
        const s = window.streambed?.stats?.();
        if (!s) return false;
        if (s.error) return true;
        if (!s.playing) return false;
        window.__from ??= s.currentTime;
        return s.currentTime >= window.__from + 3;
      }, null, { timeout: 120_000, polling: 250 });
      const s = await page.evaluate(() => window.streambed.stats());
      assert.equal(s.error, null, `player error: ${s.error}\n${log.join('\n')}`);
      const url = await page.locator('#now-url').evaluate((a) => a.href);
      const note = await page.locator('#now-note').evaluate((p) => (p.hidden ? null : { text: p.textContent, link: p.querySelector('a')?.href ?? null }));
      return { url, note, protocols: [...protocols].sort(), parts, log };
    } finally {
      await cdp.detach().catch(() => {});
      await page.close();
    }
  }
});
