// Prints the tally of a browser-test record ($STREAMBED_WEB_TEST_RECORD, JSON lines
// written by checks.mjs): playbacks passed, missed a bar under load (recorded, not
// failed) and failed, with every miss and failure, so a bar that slips under load
// shows in `make web-test`'s output even when the tests pass.
//   node web/testkit/tally.mjs FILE

import { existsSync, readFileSync } from 'node:fs';

const file = process.argv[2];
if (!file || !existsSync(file)) {
  console.log(`web-test record: none (${file ?? 'no file given'})`);
  process.exit(0);
}
const entries = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
const by = {};
for (const e of entries) by[e.outcome] = (by[e.outcome] ?? 0) + 1;
console.log(`web-test record (${file}): ${entries.length} playbacks — ${Object.entries(by).map(([k, v]) => `${v} ${k}`).join(', ')}`);
for (const e of entries) {
  if (e.outcome === 'passed') continue;
  const why = e.outcome === 'failed' ? e.error : e.misses.join('; ');
  const machine = e.machine ? ` [page timer lag ${Math.round(e.machine.pageLagMs)} ms, CPUs ${Math.round(100 * (e.machine.cpuBusy ?? 0))}% busy, load ${e.machine.loadPerCore.toFixed(2)}/core]` : '';
  console.log(`  ${e.outcome.toUpperCase()}: ${e.label || e.url}: ${why}${machine}`);
}
