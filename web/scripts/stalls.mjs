// The evidence around a page stall of a lab run (metrics of one run in results.json):
// when the stall began, the requests late around it, the packets the emulated link
// dropped before it and both ends' TCP recovery on the client's connections. Used by
// llhls-stalls.mjs; no browser, no I/O.

/** Session ms of each page stall (a wait of 100 ms or more): from the page's waits
 * (media time → session time through the 0.5 s samples), else hls.js's
 * bufferStalledError warnings. Each: {at, ms}. */
export function stallsOf(m) {
  const samples = m.samples ?? [];
  const waits = (m.waits ?? []).filter((w) => w.ms >= 100);
  if (waits.length) {
    return waits.map((w) => {
      // The last sample still short of the wait's media time; the playhead moved at
      // about real time from there to the wait.
      let s = null;
      for (const x of samples) {
        if (x.current_time == null || x.state === 'startup') continue;
        if (x.current_time >= w.at - 0.02) break;
        s = x;
      }
      const at = s ? (s.t + Math.max(0, w.at - s.current_time)) * 1000 : null;
      return { at, ms: w.ms, how: 'wait' };
    });
  }
  const out = [];
  for (const [t, text] of m.page_events ?? []) {
    if (!text.includes('bufferStalledError')) continue;
    if (out.length && t - out[out.length - 1].at < 1500) continue;
    out.push({ at: t, ms: null, how: 'hls.js warning' });
  }
  return out;
}

const col = (log, name) => log.columns.indexOf(name);

/** Requests late around a stall at session ms T: in flight at T or finished in the 2 s
 * before it, and slow for their kind (a part or segment over 300 ms; a blocking reload
 * over 600 ms; anything with a new connection or aborted). */
export function lateRequests(log, T) {
  if (!log) return [];
  const c = (n) => col(log, n);
  return log.rows
    .map((r) => ({
      t: r[c('t_ms')], kind: r[c('kind')], path: r[c('path')], queue: r[c('queue_ms')], connect: r[c('connect_ms')],
      wait: r[c('wait_ms')], body: r[c('body_ms')], total: r[c('total_ms')], fresh: r[c('new_conn')], conn: r[c('conn')], aborted: r[c('aborted')],
    }))
    .filter((r) => r.t <= T && r.t + r.total >= T - 2000)
    .filter((r) => r.aborted || r.fresh || ((r.kind === 'part' || r.kind === 'segment' || r.kind === 'init') && r.total > 300) || (r.kind !== 'part' && r.total > 600))
    .sort((a, b) => b.total - a.total);
}

/** The drops and TCP events in [T − before, T + after] (session ms), each with the
 * client's port of its connection. */
export function netAround(m, T, before = 2500, after = 300) {
  const t0 = m.t0_ms;
  const inWin = (ms) => ms - t0 >= T - before && ms - t0 <= T + after;
  const drops = [];
  for (const [dir, rows] of Object.entries(m.link_drops ?? {})) {
    const up = dir.startsWith('client');
    for (const [ms, why, sport, dport, flags, payload] of rows) {
      if (!inWin(ms)) continue;
      let what = payload > 0 ? (up ? 'request data' : 'response data') : flags.includes('S') ? 'SYN' : flags.includes('F') ? 'FIN' : 'ACK';
      if (flags.includes('S') && flags.includes('A')) what = 'SYN-ACK';
      drops.push({ t: ms - t0, dir: up ? 'up' : 'down', port: up ? sport : dport, what, payload, why });
    }
  }
  const events = (m.client_tcp?.events ?? [])
    .filter(([ms, , kind]) => inWin(ms) && kind !== 'open' && kind !== 'disorder' && kind !== 'cwr')
    .map(([ms, side, kind, port]) => ({ t: ms - t0, side, kind, port }));
  return { drops: drops.sort((a, b) => a.t - b.t), events };
}

/** A short reading of one stall's evidence: the late request, the lost packet and how
 * TCP recovered it. */
export function causeOf(late, net) {
  const media = late.find((r) => r.kind === 'part' || r.kind === 'segment' || r.kind === 'init');
  const req = media ?? late[0];
  const parts = [];
  if (req) {
    const phase = req.aborted ? 'aborted' : req.connect > 0 ? `connect ${Math.round(req.connect)} ms` : req.queue > 200 ? `queued ${Math.round(req.queue)} ms` : req.wait > 400 && req.kind !== 'reload' ? `head ${Math.round(req.wait)} ms` : req.body > 200 ? `body ${Math.round(req.body)} ms` : `wait ${Math.round(req.wait)} ms`;
    parts.push(`${req.kind} ${req.path} ${Math.round(req.total)} ms (${phase})`);
  } else parts.push('no late request');
  const rto = net.events.filter((e) => e.kind === 'loss');
  const syn = net.events.filter((e) => e.kind === 'syn_retransmit' || e.kind === 'synack_retransmit');
  const rec = net.events.filter((e) => e.kind === 'recovery');
  const tlp = net.events.filter((e) => e.kind === 'retransmit');
  const tcp = [];
  for (const side of ['client', 'server']) {
    const n = (xs) => xs.filter((e) => e.side === side).length;
    if (n(syn)) tcp.push(`${side} SYN retransmit`);
    if (n(rto)) tcp.push(`${side} RTO ×${n(rto)}`);
    if (n(rec)) tcp.push(`${side} fast recovery ×${n(rec)}`);
    if (!n(rto) && !n(rec) && n(tlp)) tcp.push(`${side} retransmit ×${n(tlp)} (probe)`);
  }
  const lost = [...new Set(net.drops.map((d) => `${d.what} ${d.dir}`))];
  parts.push(lost.length ? `lost: ${lost.join(', ')}` : 'no packet lost in the 2.5 s before');
  parts.push(tcp.length ? tcp.join(', ') : 'no TCP recovery');
  return parts.join('; ');
}
