// Where each page stall of a lab run of hls.js came from
// (experiments/latency-browser-hls-stalls.yaml): for every stall, the requests that
// were late around it (which kind, which rendition, on which connection, where their
// time went), the packets the emulated link dropped just before it (metrics.link_drops:
// a request, a response's data, an ACK, a SYN) and both ends' TCP recovery on the
// client's connections (metrics.client_tcp.events: retransmissions, RTOs as the
// "loss" state, fast recovery), then one Markdown row per run and a cause per stall.
//
//   node web/scripts/llhls-stalls.mjs RESULTS.json [RESULTS.json ...]            # tables
//   node web/scripts/llhls-stalls.mjs --detail RESULTS.json [RESULTS.json ...]   # and each stall's evidence
//   node web/scripts/llhls-stalls.mjs --parts RESULTS.json [RESULTS.json ...]    # and 720p part bodies, origin windows, BBR collapses
//   node web/scripts/llhls-stalls.mjs --by-arm RESULTS.json [RESULTS.json ...]   # summaries per arm (the set's name without -rN),
//       with the origin's pacing-guard restarts (its origin.log beside results.json) per run and before each stall

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { causeOf, classify, connPorts, lateRequests, netAround, stallsOf } from './stalls.mjs';
import { median, s2 } from './tabulate.mjs';

const detail = process.argv.includes('--detail');
const partsTable = process.argv.includes('--parts');
const byArm = process.argv.includes('--by-arm');
const armOf = (set) => set.replace(/-r\d+$/, '');

// The origin's pacing-guard restarts in origin.log (serve --log-level info): epoch ms
// and the client port of the connection restarted, with its pacing before and after.
function guardRestarts(file) {
  const log = join(dirname(file), 'origin.log');
  if (!existsSync(log)) return [];
  const out = [];
  for (const line of readFileSync(log, 'utf8').split('\n')) {
    const m = line.match(/^time=(\S+) .*pacing guard: congestion control restarted" remote=\S+:(\d+) .*pacing_kbps=(\d+) .*after_kbps=(\d+)/);
    if (m) out.push({ ms: Date.parse(m[1]), port: Number(m[2]), before: Number(m[3]), after: Number(m[4]) });
  }
  return out;
}
const files = process.argv.slice(2).filter((a) => !a.startsWith('--'));

const protoOf = (cell) => (cell.transport === 'hls-h2' ? 'HTTP/2' : 'HTTP/1.1');
const rows = [];
const stallRows = [];
for (const file of files) {
  const doc = JSON.parse(readFileSync(file, 'utf8'));
  const set = file.split('/').slice(-2, -1)[0];
  const restarts = guardRestarts(file);
  for (const r of doc.runs) {
    const m = r.metrics ?? {};
    const ct = m.client_tcp ?? {};
    const cc = ct.counters ?? {};
    const st = m.server_tcp ?? {};
    const lk = m.link ?? {};
    const stalls = stallsOf(m);
    const runPorts = new Set((ct.connections ?? []).map((c) => c.port));
    const runRestarts = restarts.filter((x) => runPorts.has(x.port));
    rows.push({
      arm: armOf(set), restarts: runRestarts.length,
      proto: protoOf(r.cell), set, rep: r.rep, error: r.error || null, latency: m.latency_ms, target: m.target_latency_ms,
      stallCount: m.stall_count, stallMS: m.stall_ms, switches: m.switches,
      client: `${cc.TCPTimeouts ?? '–'} / ${cc.TCPLossProbes ?? '–'} / ${cc.TCPSynRetrans ?? '–'} / ${cc.RetransSegs ?? '–'}`,
      server: `${st.TCPTimeouts ?? '–'} / ${st.TCPLossProbes ?? '–'} / ${st.RetransSegs ?? '–'}`,
      link: `${lk['client>server']?.lost ?? '–'} / ${lk['server>client']?.lost ?? '–'}`,
      conns: ct.connections?.length ?? '–', slowSyn: (ct.connections ?? []).filter((c) => c.syn_sent_ms > 0).length,
      load: m.machine?.load_per_core, busy: m.machine?.cpu_busy,
      cc: (ct.server_sockets?.cc ?? []).join(',') || 'not recorded',
    });
    const ports = connPorts(m);
    for (const s of stalls) {
      const late = lateRequests(m.request_log, s.at);
      const net = netAround(m, s.at);
      const k = classify(m, late, ports);
      const T = m.t0_ms + s.at;
      const before = runRestarts.filter((x) => x.port === k.port && x.ms >= T - 2500 && x.ms <= T);
      stallRows.push({ arm: armOf(set), restartsBefore: before.map((x) => `${x.before}→${x.after}`).join(', ') || '–', proto: protoOf(r.cell), set, rep: r.rep, at: s.at, ms: s.ms, cause: causeOf(late, net), cls: k.cls, port: k.port, pacing: k.pacing_kbps, cc: (m.client_tcp?.server_sockets?.cc ?? []).join(',') || '–' });
      if (!detail) continue;
      console.log(`\n### ${set} ${protoOf(r.cell)} round ${r.rep}: stall at ${s2(s.at)} s (${s.ms == null ? '?' : Math.round(s.ms)} ms, from the page's ${s.how})`);
      console.log(`class: ${k.cls}; late request's connection ≈ port ${k.port}; origin's lowest pacing while it loaded ${k.pacing_kbps ?? '–'} kbit/s, cwnd ${k.cwnd ?? '–'}`);
      console.log('late requests (session s issued, kind, path, queue/connect/wait/body/total ms, conn, new, aborted):');
      for (const q of late.slice(0, 8)) console.log(`  ${s2(q.t)} ${q.kind} ${q.path} ${q.queue}/${q.connect}/${q.wait}/${q.body}/${q.total} conn ${q.conn}${q.fresh ? ' new' : ''}${q.aborted ? ' ' + q.aborted : ''}`);
      console.log('link drops (session s, direction, what, client port):');
      for (const d of net.drops) console.log(`  ${s2(d.t)} ${d.dir} ${d.what}${d.payload ? ' ' + d.payload + ' B' : ''} port ${d.port} (${d.why})`);
      console.log('TCP events on the client\'s connections (session s, whose sender, event, client port):');
      for (const e of net.events) console.log(`  ${s2(e.t)} ${e.side} ${e.kind} port ${e.port}`);
    }
  }
}

const gh = byArm ? ' guard restarts |' : '';
const gs = byArm ? '---:|' : '';
console.log('| protocol | set | round | latency (s) | hls.js target (s) | page stalls | switches | client RTO / TLP / SYN retrans / retransmitted | origin RTO / TLP / retransmitted | link lost up / down | client connections (slow handshakes) | load/core (CPU busy) |' + gh);
console.log('|---|---|---:|---:|---:|---|---:|---|---|---|---|---:|' + gs);
for (const r of rows) {
  const stalls = r.stallCount ? `${r.stallCount} (${s2(r.stallMS)} s)` : '0';
  console.log(`| ${r.proto} | ${r.set} | ${r.rep} | ${r.error ? `failed: ${r.error}` : s2(r.latency)} | ${s2(r.target)} | ${stalls} | ${r.switches ?? '–'} | ${r.client} | ${r.server} | ${r.link} | ${r.conns} (${r.slowSyn}) | ${r.load ?? '–'} (${r.busy == null ? '–' : Math.round(r.busy * 100) + ' %'}) |` + (byArm ? ` ${r.restarts} |` : ''));
}
console.log('');
console.log('| protocol | set | round | stall at (s) | length (ms) | class | lowest pacing of the origin on its connection while it loaded (kbit/s) | late request; lost packets in the 2.5 s before; TCP recovery then |' + (byArm ? ' guard restarts on its connection in the 2.5 s before (kbit/s before→after) |' : ''));
console.log('|---|---|---:|---:|---:|---|---:|---|' + (byArm ? '---|' : ''));
for (const s of stallRows) console.log(`| ${s.proto} | ${s.set} | ${s.rep} | ${s2(s.at)} | ${s.ms == null ? '?' : Math.round(s.ms)} | ${s.cls} | ${s.pacing ?? '–'} | ${s.cause} |` + (byArm ? ` ${s.restartsBefore} |` : ''));
console.log('');
const group = byArm ? 'arm' : 'origin congestion control';
const keyOf = (x) => `${x.proto} | ${byArm ? x.arm : x.cc}`;
console.log(`| protocol | ${group} | stalls | ` + [...new Set(stallRows.map((s) => s.cls))].join(' | ') + ' |');
const classes = [...new Set(stallRows.map((s) => s.cls))];
console.log('|---|---|---:|' + classes.map(() => '---:').join('|') + '|');
for (const key of [...new Set(stallRows.map(keyOf))]) {
  const ss = stallRows.filter((s) => keyOf(s) === key);
  console.log(`| ${key} | ${ss.length} | ${classes.map((c) => ss.filter((s) => s.cls === c).length).join(' | ')} |`);
}
console.log('');
console.log(`| protocol | ${group} | runs | latency median (min–max) | runs ≤ 1.33 s with no page stall | runs with a page stall | stalled time median (s) |` + (byArm ? ' guard restarts a run (median, min–max) |' : ''));
console.log('|---|---|---:|---|---:|---:|---:|' + (byArm ? '---|' : ''));
for (const key of [...new Set(rows.map(keyOf))]) {
  const rs = rows.filter((r) => keyOf(r) === key && !r.error && Number.isFinite(r.latency));
  if (!rs.length) continue;
  const lat = rs.map((r) => r.latency);
  const rr = rs.map((r) => r.restarts);
  console.log(`| ${key} | ${rs.length} | ${s2(median(lat))} (${s2(Math.min(...lat))}–${s2(Math.max(...lat))}) | ${rs.filter((r) => r.latency <= 1330 && r.stallCount === 0).length} | ${rs.filter((r) => r.stallCount > 0).length} | ${s2(median(rs.map((r) => r.stallMS ?? 0)))} |` + (byArm ? ` ${median(rr)} (${Math.min(...rr)}–${Math.max(...rr)}) |` : ''));
}

if (partsTable) {
  // Per protocol and congestion control: the 720p parts' bodies (head to last byte),
  // the origin's congestion window over its samples, and BBR collapses per run (a
  // sample whose bandwidth estimate is under a third of the connection's previous
  // one, from over 2 Mbit/s).
  const arms = new Map();
  for (const file of files) {
    for (const r of JSON.parse(readFileSync(file, 'utf8')).runs) {
      const m = r.metrics ?? {};
      const tl = m.client_tcp?.server_sockets;
      const key = `${protoOf(r.cell)} | ${byArm ? armOf(file.split('/').slice(-2, -1)[0]) : (tl?.cc ?? []).join(',') || 'not recorded'}`;
      const a = arms.get(key) ?? arms.set(key, { bodies: [], cwnd: [], collapses: [] }).get(key);
      const log = m.request_log;
      if (log) {
        const c = (n) => log.columns.indexOf(n);
        for (const x of log.rows) if (x[c('kind')] === 'part' && x[c('path')].startsWith('v720') && !x[c('aborted')] && x[c('body_ms')] != null) a.bodies.push(x[c('body_ms')]);
      }
      if (tl?.rows) {
        const last = new Map();
        let n = 0;
        for (const x of tl.rows) {
          if (x[4] > 0) a.cwnd.push(x[2]);
          const p = last.get(x[1]);
          if (p && p[6] > 2000 && x[6] < p[6] / 3) n++;
          last.set(x[1], x);
        }
        a.collapses.push(n);
      }
    }
  }
  const q = (v, p) => { const s = [...v].sort((x, y) => x - y); return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : null; };
  console.log('');
  console.log(`| protocol | ${group} | 720p parts | body median (ms) | p90 | p99 | origin window median (p10), packets | BBR collapses a run |` + (byArm ? ' bodies over 500 ms |' : ''));
  console.log('|---|---|---:|---:|---:|---:|---:|---|' + (byArm ? '---:|' : ''));
  for (const [key, a] of arms) {
    console.log(`| ${key} | ${a.bodies.length} | ${Math.round(median(a.bodies))} | ${Math.round(q(a.bodies, 0.9))} | ${Math.round(q(a.bodies, 0.99))} | ${a.cwnd.length ? `${median(a.cwnd)} (${q(a.cwnd, 0.1)})` : '–'} | ${a.collapses.length ? a.collapses.join(', ') : '–'} |` + (byArm ? ` ${a.bodies.filter((b) => b > 500).length} |` : ''));
  }
}
