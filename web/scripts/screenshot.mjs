// Screenshot of the player page playing a stream, for docs and for eyeballing changes.
//   node web/scripts/screenshot.mjs BASE_URL OUT.png [QUERY] [SECONDS] [WIDTHxHEIGHT]
// e.g. node web/scripts/screenshot.mjs http://127.0.0.1:8080 docs/screenshots/player.png \
//        'stream=demo&live=1&player=dashjs' 20 1280x1040
// BASE_URL may be "serve" to start `streambed serve` as the browser tests do
// (testkit/server.mjs: $STREAMBED_BIN, $STREAMBED_TEST_ASSETS).

import { launchBrowser } from '../testkit/browser.mjs';
import { startStreambed } from '../testkit/server.mjs';

const [base = 'serve', out = 'player.png', query = 'stream=demo&live=1&player=dashjs', seconds = '20', size = '1280x1040'] =
  process.argv.slice(2);
const [width, height] = size.split('x').map(Number);

let server = null;
let baseURL = base;
if (base === 'serve') {
  server = await startStreambed();
  baseURL = server.baseURL;
}
const browser = await launchBrowser({ viewport: { width, height } });
try {
  const { page, log } = await browser.newPage();
  await page.goto(`${baseURL}/?${query}`);
  await page.waitForTimeout(Number(seconds) * 1000);
  const stats = await page.evaluate(() => window.streambed.stats());
  await page.screenshot({ path: out });
  console.log(JSON.stringify(stats));
  if (log.length) console.log(log.join('\n'));
  console.log(`wrote ${out}`);
} finally {
  await browser.close();
  await server?.stop();
}
