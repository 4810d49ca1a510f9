// Tabulates lab runs of hls.js against the origin's PART-HOLD-BACK
// (experiments/latency-browser-hls-hold-*.yaml, experiments/latency-hold.sh) as
// Markdown: one row per run in the order given, then per arm (PART-HOLD-BACK × link ×
// protocol) the median and range of latency, and the lossy goal against the same
// PART-HOLD-BACK's clean-link median: within +0.5 s, no stall.
//
//   node web/scripts/llhls-hold.mjs RESULTS.json [RESULTS.json ...]

import { readFileSync } from 'node:fs';

import { median, s2 } from './tabulate.mjs';

/** The origin's --ll-hls-part-hold-back of a results file ("default" when unset). */
function holdOf(doc) {
  const args = doc.scenario?.Origin?.Args ?? [];
  const i = args.indexOf('--ll-hls-part-hold-back');
  return i >= 0 ? args[i + 1] : 'default';
}

const linkOf = (cell) => (cell.rtt === '0ms' && cell.loss === '0%' ? 'clean' : `${cell.rtt} ${cell.loss}`);
const protoOf = (cell) => (cell.transport === 'hls-h2' ? 'HTTP/2' : 'HTTP/1.1');

const rows = [];
for (const file of process.argv.slice(2)) {
  const doc = JSON.parse(readFileSync(file, 'utf8'));
  for (const r of doc.runs) {
    const m = r.metrics ?? {};
    // When the page first saw a stall, in seconds into the session.
    const stallAt = (m.page_events ?? []).filter(([, e]) => e.includes('bufferStalledError')).map(([t]) => (t / 1000).toFixed(0));
    rows.push({
      hold: holdOf(doc), link: linkOf(r.cell), proto: protoOf(r.cell), set: file.split('/').slice(-2, -1)[0], rep: r.rep,
      error: r.error || null, latency: m.latency_ms, target: m.target_latency_ms,
      stallCount: m.stall_count, stallMS: m.stall_ms, stallAt: [...new Set(stallAt)].join(', '),
      switches: m.switches, rto: m.server_tcp?.TCPTimeouts ?? 0,
      load: m.machine?.load_per_core, busy: m.machine?.cpu_busy,
    });
  }
}

const arm = (r) => `${r.hold}, ${r.link}, ${r.proto}`;
const ok = (r) => !r.error && Number.isFinite(r.latency);
const cleanMedian = (r) => median(rows.filter((c) => ok(c) && c.link === 'clean' && c.hold === r.hold && c.proto === r.proto).map((c) => c.latency));

console.log('| PART-HOLD-BACK | link | protocol | set | round | latency (s) | hls.js target (s) | page stalls (s into the run) | switches | origin RTOs | goal | load/core (CPU busy) |');
console.log('|---|---|---|---|---:|---:|---:|---|---:|---:|---|---:|');
for (const r of rows) {
  const ref = cleanMedian(r);
  let goal = '–';
  if (ok(r) && r.link === 'clean') goal = r.latency <= 1500 && r.stallCount === 0 ? 'met (≤ 1.5 s)' : 'no';
  else if (ok(r) && ref != null) goal = r.latency <= ref + 500 && r.stallCount === 0 ? 'met' : r.latency <= ref + 500 ? 'latency only' : 'no';
  const stalls = r.stallCount ? `${r.stallCount} (${s2(r.stallMS)} s; at ${r.stallAt || '?'})` : '0';
  console.log(`| ${r.hold} | ${r.link} | ${r.proto} | ${r.set} | ${r.rep} | ${r.error ? `failed: ${r.error}` : s2(r.latency)} | ${s2(r.target)} | ${stalls} | ${r.switches ?? '–'} | ${r.rto} | ${goal} | ${r.load ?? '–'} (${r.busy == null ? '–' : Math.round(r.busy * 100) + ' %'}) |`);
}
console.log('');
console.log('| arm | runs | latency median (min–max) | clean-link median, same PART-HOLD-BACK | runs within +0.5 s of it, no stall | runs with a stall | origin RTOs median | switches median |');
console.log('|---|---:|---|---:|---:|---:|---:|---:|');
for (const name of [...new Set(rows.map(arm))]) {
  const rs = rows.filter((r) => arm(r) === name && ok(r));
  const lat = rs.map((r) => r.latency);
  const ref = rs.length ? cleanMedian(rs[0]) : null;
  const met = ref == null ? '–' : `${rs.filter((r) => r.latency <= ref + 500 && r.stallCount === 0).length} of ${rs.length}`;
  console.log(`| ${name} | ${rs.length} | ${s2(median(lat))} (${s2(Math.min(...lat))}–${s2(Math.max(...lat))}) | ${s2(ref)} | ${met} | ${rs.filter((r) => r.stallCount > 0).length} | ${median(rs.map((r) => r.rto)) ?? '–'} | ${median(rs.map((r) => r.switches)) ?? '–'} |`);
}
