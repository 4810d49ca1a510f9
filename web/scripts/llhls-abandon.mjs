// Tabulates lab runs of hls.js with and without the page's part-abandon guard
// (experiments/latency-browser-hls-abandon-*.yaml) as Markdown: one row per run in
// run order, then per arm (transport × page_query) the median and range of latency,
// for docs/results/latency.md.
//
//   node web/scripts/llhls-abandon.mjs RESULTS.json [RESULTS.json ...]

import { readFileSync } from 'node:fs';

import { median, s2 } from './tabulate.mjs';

/** The arm's name: protocol and guard. */
function arm(cell) {
  const proto = cell.transport === 'hls-h2' ? 'HTTP/2' : 'HTTP/1.1';
  const q = new URLSearchParams(cell.page_query ?? '');
  const guard = q.get('hlsabandon') === 'hlsjs' ? "hls.js's rule" : 'guard';
  const link = cell.rtt === '0ms' && cell.loss === '0%' ? 'clean' : `${cell.rtt} ${cell.loss}`;
  return `${link}, ${proto}, ${guard}`;
}

const rows = [];
for (const file of process.argv.slice(2)) {
  const doc = JSON.parse(readFileSync(file, 'utf8'));
  for (const r of doc.runs) {
    const m = r.metrics ?? {};
    const rt = m.request_timing ?? {};
    const a = m.hls_abandon ?? {};
    const aborted = Object.values(rt.aborted ?? {}).reduce((x, y) => x + y, 0);
    const goal = m.latency_ms != null && m.latency_ms <= 1330 && (m.stall_count ?? 1) === 0;
    rows.push({
      arm: arm(r.cell), rep: r.rep, error: r.error ?? m.error ?? null,
      latency: m.latency_ms, target: m.target_latency_ms,
      stalls: `${m.stall_count ?? '–'} (${s2(m.stall_ms)} s)`, stallCount: m.stall_count,
      switches: m.switches, aborted, connections: rt.connections,
      abandon: a.mode ? `${a.mode}${a.installed ? '' : ' (not installed)'}: held ${a.held}, judged ${a.judged}, aborts ${a.emergencyAborts} (early ${a.earlyAborts})` : '–',
      goal, load: m.machine?.load_per_core, busy: m.machine?.cpu_busy,
      rto: m.server_tcp?.TCPTimeouts ?? '–',
    });
  }
}

console.log('| arm | round | latency (s) | hls.js target (s) | page stalls | switches | aborted requests | connections | abandon rule | origin RTOs | ≤ 1.33 s, no stall | load/core (CPU busy) |');
console.log('|---|---:|---:|---:|---|---:|---:|---:|---|---:|---|---:|');
for (const r of rows) {
  console.log(`| ${r.arm} | ${r.rep} | ${r.error ? `failed: ${r.error}` : s2(r.latency)} | ${s2(r.target)} | ${r.stalls} | ${r.switches ?? '–'} | ${r.aborted} | ${r.connections ?? '–'} | ${r.abandon} | ${r.rto} | ${r.goal ? 'yes' : 'no'} | ${r.load ?? '–'} (${r.busy == null ? '–' : Math.round(r.busy * 100) + ' %'}) |`);
}
console.log('');
console.log('| arm | runs | latency median (min–max) | runs meeting the goal | stalls (runs with any) | switches median |');
console.log('|---|---:|---|---:|---:|---:|');
const arms = [...new Set(rows.map((r) => r.arm))];
for (const name of arms) {
  const rs = rows.filter((r) => r.arm === name && !r.error);
  const lat = rs.map((r) => r.latency).filter(Number.isFinite);
  console.log(`| ${name} | ${rs.length} | ${s2(median(lat))} (${s2(Math.min(...lat))}–${s2(Math.max(...lat))}) | ${rs.filter((r) => r.goal).length} of ${rs.length} | ${rs.filter((r) => r.stallCount > 0).length} | ${median(rs.map((r) => r.switches)) ?? '–'} |`);
}
