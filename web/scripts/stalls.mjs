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

/** Chromium's connection ids → the client's ports. Each id's requests are time
 * windows (issued to last byte); each port's dropped response packets and the origin's
 * retransmissions on it are instants: an id goes to the port with the most instants
 * inside its windows (a loss shows on the connection whose response it slowed), ports
 * taken greedily, best score first. Ids with no such instant are paired by bytes (each
 * id's response bytes against each connection's bytes received, largest first). A
 * guess from timing; an id left over maps to null. */
export function connPorts(m) {
  const log = m.request_log;
  const conns = m.client_tcp?.connections ?? [];
  if (!log || !conns.length) return new Map();
  const c = (n) => col(log, n);
  const t0 = m.t0_ms;
  const windows = new Map();
  const bytes = new Map();
  for (const r of log.rows) {
    const id = r[c('conn')];
    if (id == null) continue;
    (windows.get(id) ?? windows.set(id, []).get(id)).push([r[c('t_ms')], r[c('t_ms')] + (r[c('total_ms')] ?? 0)]);
    bytes.set(id, (bytes.get(id) ?? 0) + (r[c('bytes')] ?? 0));
  }
  const instants = new Map();
  const add = (port, t) => (instants.get(port) ?? instants.set(port, []).get(port)).push(t);
  for (const [dir, rows] of Object.entries(m.link_drops ?? {})) {
    if (!dir.startsWith('server')) continue;
    for (const [ms, , , dport, , payload] of rows) if (payload > 0) add(dport, ms - t0);
  }
  for (const [ms, side, kind, port] of m.client_tcp?.events ?? []) if (side === 'server' && kind === 'retransmit') add(port, ms - t0);
  const scores = [];
  for (const [id, ws] of windows) {
    for (const [port, ts] of instants) {
      const n = ts.filter((t) => ws.some(([a, b]) => t >= a && t <= b)).length;
      if (n > 0) scores.push([n, id, port]);
    }
  }
  scores.sort((a, b) => b[0] - a[0]);
  const out = new Map();
  const used = new Set();
  for (const [, id, port] of scores) {
    if (out.has(id) || used.has(port)) continue;
    out.set(id, port);
    used.add(port);
  }
  const ids = [...bytes.entries()].filter(([id]) => !out.has(id)).sort((a, b) => b[1] - a[1]);
  const ports = conns.filter((k) => !used.has(k.port)).sort((a, b) => b.bytes_received - a.bytes_received);
  ids.forEach(([id], i) => out.set(id, ports[i]?.port ?? null));
  return out;
}

/** The origin's slowest sender state on port while a response loaded (session ms
 * from..to, with the last sample before from): the lowest pacing rate and congestion
 * window sampled, or null without samples. */
export function senderDuring(m, port, from, to) {
  const tl = m.client_tcp?.server_sockets;
  if (!tl?.rows || port == null) return null;
  const ci = (k) => tl.columns.indexOf(k);
  const a = m.t0_ms + from;
  const b = m.t0_ms + to;
  let before = null;
  const during = [];
  for (const r of tl.rows) {
    if (r[ci('client_port')] !== port) continue;
    if (r[0] <= a) before = r;
    else if (r[0] <= b) during.push(r);
  }
  const rows = before ? [before, ...during] : during;
  if (!rows.length) return null;
  return { pacing_kbps: Math.min(...rows.map((r) => r[ci('pacing_kbps')])), cwnd: Math.min(...rows.map((r) => r[ci('cwnd')])) };
}

/** The class of a stall from its late media request and what happened on that
 * request's connection: "request lost", "response loss" (a packet of the response
 * lost and recovered while it loaded), "slow after a loss" (nothing lost while it
 * loaded, but its connection recovered a loss in the 1.5 s before: the sender's rate
 * after that recovery), or "no loss on its connection". */
export function classify(m, late, ports) {
  const req = late.find((r) => r.kind === 'part' || r.kind === 'segment' || r.kind === 'init') ?? late[0];
  if (!req) return { cls: 'no late request' };
  const port = ports.get(req.conn) ?? null;
  const t0 = m.t0_ms;
  const drops = [];
  for (const [dir, rows] of Object.entries(m.link_drops ?? {})) {
    const up = dir.startsWith('client');
    for (const [ms, , sport, dport, , payload] of rows) if ((up ? sport : dport) === port) drops.push({ t: ms - t0, up, payload });
  }
  const ev = (m.client_tcp?.events ?? []).filter(([, side, kind, p]) => p === port && side === 'server' && (kind === 'retransmit' || kind === 'loss')).map(([ms, , kind]) => ({ t: ms - t0, kind }));
  const end = req.t + req.total;
  const sender = senderDuring(m, port, req.t + (req.queue ?? 0) + (req.wait ?? 0), end);
  const base = { port, req, pacing_kbps: sender?.pacing_kbps ?? null, cwnd: sender?.cwnd ?? null };
  if (port == null) return { ...base, cls: 'connection unknown' };
  if (drops.some((d) => d.up && d.payload > 0 && d.t >= req.t - 50 && d.t <= req.t + (req.queue ?? 0) + (req.wait ?? 0))) return { ...base, cls: 'request lost' };
  if (drops.some((d) => !d.up && d.payload > 0 && d.t >= req.t && d.t <= end)) return { ...base, cls: 'response loss' };
  if (ev.some((e) => e.t >= req.t - 1500 && e.t <= req.t)) return { ...base, cls: 'slow after a loss' };
  return { ...base, cls: 'no loss on its connection' };
}
