// Tabulates the LL-HLS lab runs' request timings (labclient.mjs's request_timing,
// request_log and page_events, the runner's server_tcp) as Markdown: one row per run,
// for docs/results/latency.md.
//
//   node web/scripts/llhls-timing.mjs RESULTS.json [RESULTS.json ...]

import { readFileSync } from 'node:fs';

const f1 = (x) => (x == null ? '–' : (Math.round(x * 10) / 10).toString());
import { s2 } from './tabulate.mjs';

function quantile(values, q) {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  return v.length ? v[Math.min(v.length - 1, Math.floor(q * v.length))] : null;
}

/** Figures of one run's metrics. */
export function runFigures(m) {
  const rt = m.request_timing ?? {};
  const rows = m.request_log?.rows ?? [];
  const cols = m.request_log?.columns ?? [];
  const at = Object.fromEntries(cols.map((c, i) => [c, i]));
  // The top video rendition's parts: the ones whose delivery matters most.
  const topParts = rows.filter((r) => r[at.kind] === 'part' && !r[at.aborted] && /^v720\//.test(r[at.path]));
  const events = m.page_events ?? [];
  const count = (re) => events.filter(([, t]) => re.test(t)).length;
  const tcp = m.server_tcp ?? {};
  const aborted = Object.values(rt.aborted ?? {}).reduce((a, b) => a + b, 0);
  const newConns = Object.values(rt.kinds ?? {}).reduce((a, k) => a + (k.new_connections ?? 0), 0);
  return {
    latency_s: s2(m.latency_ms),
    target_s: s2(m.target_latency_ms),
    stalls: `${m.stall_count ?? '–'} (${s2(m.stall_ms)} s)`,
    hls_stalls: count(/bufferStalledError/),
    holes: count(/bufferSeekOverHole.*seeking from/),
    switches: m.switches,
    requests: rt.requests,
    aborted,
    connections: rt.connections,
    new_connections: newConns,
    part_queue_p99: f1(rt.kinds?.part?.queue_ms?.p99),
    v720_body: `${f1(quantile(topParts.map((r) => r[at.body_ms]), 0.5))} / ${f1(quantile(topParts.map((r) => r[at.body_ms]), 0.9))} / ${f1(quantile(topParts.map((r) => r[at.body_ms]), 1))}`,
    reload_gap: `${f1(rt.reload_gap_ms?.median)} / ${f1(rt.reload_gap_ms?.p90)}`,
    rto_tlp_retrans: `${tcp.TCPTimeouts ?? '–'} / ${tcp.TCPLossProbes ?? '–'} / ${tcp.RetransSegs ?? '–'}`,
    load: m.machine?.load_per_core,
  };
}

const HEAD = [
  ['run', 'run'],
  ['latency_s', 'latency (s)'],
  ['target_s', 'hls.js target (s)'],
  ['stalls', 'page stalls'],
  ['hls_stalls', 'hls.js stall errors'],
  ['holes', 'hole seeks'],
  ['switches', 'switches'],
  ['requests', 'requests'],
  ['aborted', 'aborted'],
  ['connections', 'connections'],
  ['new_connections', 'new conns'],
  ['part_queue_p99', 'part queue p99 (ms)'],
  ['v720_body', '720p part body p50/p90/max (ms)'],
  ['reload_gap', 'reload gap p50/p90 (ms)'],
  ['rto_tlp_retrans', 'origin RTO / TLP / retrans'],
  ['load', 'load/core'],
];

function main(files) {
  if (!files.length) {
    process.stderr.write('usage: node web/scripts/llhls-timing.mjs RESULTS.json [RESULTS.json ...]\n');
    process.exitCode = 2;
    return;
  }
  console.log(`| ${HEAD.map(([, h]) => h).join(' | ')} |`);
  console.log(`|${HEAD.map(() => '---').join('|')}|`);
  for (const f of files) {
    const res = JSON.parse(readFileSync(f, 'utf8'));
    for (const run of res.runs ?? []) {
      if (!run.metrics) {
        console.log(`| ${run.key} ${run.rep} | failed: ${run.error ?? run.skipped ?? '?'} |`);
        continue;
      }
      const fig = runFigures(run.metrics);
      const cells = HEAD.slice(1).map(([k]) => fig[k] ?? '–');
      console.log(`| ${run.cell.transport} ${run.cell.rtt}/${run.cell.loss} #${run.rep} | ${cells.join(' | ')} |`);
    }
  }
}

main(process.argv.slice(2));
