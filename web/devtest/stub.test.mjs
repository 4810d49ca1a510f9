// Dev test: the player page against the FFmpeg stub origin (no Go server needed).
// `make web-test-stub` or `node --test web/devtest/`.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '../testkit/browser.mjs';
import { checkPlayback } from '../testkit/checks.mjs';
import { startStub } from './stub.mjs';

describe('player page against the stub origin', { timeout: 240_000 }, () => {
  let stub;
  let browser;
  before(async () => {
    stub = await startStub();
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await stub?.stop();
  });

  for (const live of [false, true]) {
    for (const player of ['dashjs', 'hlsjs']) {
      test(`${live ? 'live' : 'vod'} demo with ${player}`, { timeout: 60_000 }, async (t) => {
        const line = await checkPlayback(browser, stub.baseURL, { name: 'demo', live, player, segmentMs: 2000 });
        t.diagnostic(line);
      });
    }
  }

  for (const player of ['dashjs', 'hlsjs']) {
    test(`a missing manifest is a visible player error with ${player}`, { timeout: 60_000 }, async () => {
      const { page } = await browser.newPage();
      try {
        await page.goto(`${stub.baseURL}/?stream=broken&live=0&player=${player}`);
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

  test('choosing a stream and switching players', { timeout: 60_000 }, async () => {
    const { page, log } = await browser.newPage();
    const playing = (player) =>
      page.waitForFunction((p) => {
        const s = window.streambed.stats();
        return window.streambed.player === p && s.playing && s.currentTime > 1;
      }, player, { timeout: 20_000 });
    try {
      await page.goto(`${stub.baseURL}/`);
      await page.locator('li[data-key="vod/demo"] button.stream').click();
      await playing('dashjs');
      assert.match(page.url(), /stream=demo&live=0&player=dashjs/);
      await page.locator('label:has(input[value="hlsjs"])').click();
      await playing('hlsjs');
      assert.match(page.url(), /player=hlsjs/);
      assert.equal(await page.locator('#now-url').textContent(), '/vod/demo/master.m3u8');
      assert.equal((await page.evaluate(() => window.streambed.stats())).error, null, log.join('\n'));
      // WebSocket push is a player like the others; the stub serves no /ws/, so
      // choosing it must end in a visible error naming the socket, not a silent stall.
      const ws = page.locator('input[value="wspush"]');
      assert.equal(await ws.isDisabled(), false);
      await page.locator('label:has(input[value="wspush"])').click();
      assert.match(page.url(), /player=wspush/);
      const box = page.locator('#error');
      await box.waitFor({ state: 'visible', timeout: 20_000 });
      assert.match(await box.textContent(), /WebSocket push: could not connect to ws:\/\/127\.0\.0\.1:\d+\/ws\/vod\/demo/);
      assert.equal(await page.locator('#now-url').textContent(), `${stub.baseURL.replace(/^http/, 'ws')}/ws/vod/demo`);
    } finally {
      await page.close();
    }
  });
});
