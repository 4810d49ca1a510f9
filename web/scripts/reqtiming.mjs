// Per-request timings of a stream's HTTP requests, from Chromium's DevTools Network
// events, for the lab client (labclient.mjs): which requests are late, and where the
// time goes — waiting for a connection (HTTP/1.1 allows six per origin), setting one
// up, the origin's answer (a blocking reload or a part in progress is held there on
// purpose) or the body's transfer (a lost packet shows here, as a retransmission
// delay). Phases come from the response's ResourceTiming (`timing`, ms after its
// `requestTime`) and the events' monotonic timestamps (s).

/** The kind of a stream request by its URL: a blocking playlist reload (LL-HLS
 * `_HLS_msn`), a plain playlist or manifest, a part (`N.P.m4s`), a segment, an init
 * segment, or the clock. */
export function requestKind(url) {
  let u;
  try {
    u = new URL(url);
  } catch {
    return 'other';
  }
  const p = u.pathname;
  if (/\.m3u8$/.test(p)) return u.searchParams.has('_HLS_msn') ? 'reload' : 'playlist';
  if (/\.mpd$/.test(p)) return 'playlist';
  if (/\/\d+\.\d+\.m4s$/.test(p)) return 'part';
  if (/\/\d+\.m4s$/.test(p)) return 'segment';
  if (/\/init\.mp4$/.test(p)) return 'init';
  if (p === '/time') return 'clock';
  return 'other';
}

const ms = (x) => (x == null || !Number.isFinite(x) ? null : Math.round(x * 10) / 10);

/** Phases of one finished request in ms, or null fields where Chromium gave none.
 * `queue`: from the player's request to its first byte on the wire, less connection
 * set-up (waiting for a free connection, or for HTTP/2's one); `connect`: TCP (and TLS)
 * set-up when a new connection was made for it; `wait`: request sent to response head
 * (round trip, plus any hold at the origin); `body`: head to last byte. */
export function phases(r) {
  const t = r.timing;
  const out = { kind: r.kind, path: r.path, status: r.status, reused: r.reused, conn: r.conn, protocol: r.protocol };
  out.total = ms((r.finished - r.issued) * 1000);
  out.firstData = ms(r.firstData);
  out.by100 = r.by100 ?? 0;
  out.by150 = r.by150 ?? 0;
  out.bytes = r.bytes ?? 0;
  out.wall = r.wall == null ? null : r.wall * 1000;
  if (!t) return out;
  const base = t.requestTime * 1000;
  const connect = t.connectStart >= 0 && t.connectEnd >= 0 ? t.connectEnd - t.connectStart : 0;
  out.connect = ms(connect);
  out.queue = ms(base + t.sendStart - r.issued * 1000 - connect);
  out.wait = ms(t.receiveHeadersEnd - t.sendEnd);
  out.body = ms(r.finished * 1000 - (base + t.receiveHeadersEnd));
  out.at = ms(r.issued * 1000); // for ordering only (monotonic ms)
  return out;
}

function stats(values) {
  const v = values.filter((x) => x != null && Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return null;
  const q = (p) => v[Math.min(v.length - 1, Math.floor(p * v.length))];
  return { n: v.length, median: ms(q(0.5)), p90: ms(q(0.9)), p99: ms(q(0.99)), max: ms(v[v.length - 1]) };
}

/** Summary of finished requests (phases()) by kind: counts, new connections, the
 * distribution of each phase, how many waited ≥ 50 ms for a connection and how many
 * bodies took ≥ 200 ms (Linux's minimum retransmission timeout), and, per playlist,
 * the gaps between consecutive blocking-reload answers (one per part when on time). */
export function summarise(done, { slowest = 12 } = {}) {
  const aborted = {};
  for (const r of done) if (r.aborted) aborted[r.kind] = (aborted[r.kind] ?? 0) + 1;
  done = done.filter((r) => !r.aborted);
  const byKind = {};
  for (const r of done) (byKind[r.kind] ??= []).push(r);
  const kinds = {};
  for (const [k, rs] of Object.entries(byKind)) {
    kinds[k] = {
      requests: rs.length,
      new_connections: rs.filter((r) => r.reused === false).length,
      queued_50ms: rs.filter((r) => r.queue >= 50).length,
      body_200ms: rs.filter((r) => r.body >= 200).length,
      queue_ms: stats(rs.map((r) => r.queue)),
      connect_ms: stats(rs.filter((r) => r.reused === false).map((r) => r.connect)),
      wait_ms: stats(rs.map((r) => r.wait)),
      body_ms: stats(rs.map((r) => r.body)),
      total_ms: stats(rs.map((r) => r.total)),
    };
  }
  // Gaps between a playlist's blocking-reload answers: hls.js asks for the next part
  // as soon as one answer is in, so on time they are one part apart.
  const ends = {};
  for (const r of done) if (r.kind === 'reload') (ends[r.path] ??= []).push(r.at + r.total);
  const gaps = [];
  for (const e of Object.values(ends)) {
    e.sort((a, b) => a - b);
    for (let i = 1; i < e.length; i++) gaps.push(e[i] - e[i - 1]);
  }
  const conns = new Set(done.map((r) => r.conn).filter((c) => c != null));
  return {
    requests: done.length,
    aborted,
    connections: conns.size,
    kinds,
    reload_gap_ms: stats(gaps),
    reload_gaps_over_400ms: gaps.filter((g) => g > 400).length,
    slowest: [...done]
      .filter((r) => r.kind === 'part' || r.kind === 'segment' || r.kind === 'reload' || r.kind === 'playlist')
      .sort((a, b) => (b.queue ?? 0) + (b.body ?? 0) - ((a.queue ?? 0) + (a.body ?? 0)))
      .slice(0, slowest)
      .map(({ at, wall, by100, by150, firstData, ...r }) => r),
  };
}

/** Every request as one compact row, in the order issued: [ms after t0 (epoch ms) when
 * issued, kind, the path's last two parts (rendition/file), queue, connect, wait, body,
 * total (ms), 1 when on a new connection, connection id, aborted ("" when not)]. */
export function requestLog(done, t0) {
  const rows = done
    .filter((r) => r.wall != null)
    .sort((a, b) => a.wall - b.wall)
    .map((r) => [
      ms(r.wall - t0),
      r.kind,
      r.path.split('/').slice(-2).join('/'),
      r.queue ?? null,
      r.connect ?? null,
      r.wait ?? null,
      r.body ?? null,
      r.total,
      r.reused === false ? 1 : 0,
      r.conn ?? null,
      r.aborted ?? '',
      r.firstData ?? null,
      r.by100 ?? 0,
      r.by150 ?? 0,
      r.bytes ?? 0,
    ]);
  return {
    columns: ['t_ms', 'kind', 'path', 'queue_ms', 'connect_ms', 'wait_ms', 'body_ms', 'total_ms', 'new_conn', 'conn', 'aborted', 'first_data_ms', 'bytes_by_100ms', 'bytes_by_150ms', 'bytes'],
    rows,
  };
}

/** Collects the stream requests of a DevTools session (cdp) into phases(); call
 * result() at the end. Requests are matched by DevTools requestId. */
export function watchTimings(cdp) {
  const open = new Map();
  const done = [];
  cdp.on('Network.requestWillBeSent', (e) => {
    if (e.type !== 'XHR' && e.type !== 'Fetch') return;
    const kind = requestKind(e.request.url);
    if (kind === 'other') return;
    let path = e.request.url;
    try {
      path = new URL(e.request.url).pathname;
    } catch {
      /* kept whole */
    }
    // wallTime (epoch s) places the request beside the page's own events.
    open.set(e.requestId, { kind, path, issued: e.timestamp, wall: e.wallTime });
  });
  // Body bytes as they arrive: how much of a response a player could see 100 and 150
  // ms after asking (hls.js judges a part's progress from that point on).
  cdp.on('Network.dataReceived', (e) => {
    const r = open.get(e.requestId);
    if (!r) return;
    const after = (e.timestamp - r.issued) * 1000;
    if (r.firstData == null) r.firstData = after;
    if (after <= 100) r.by100 = (r.by100 ?? 0) + e.dataLength;
    if (after <= 150) r.by150 = (r.by150 ?? 0) + e.dataLength;
    r.bytes = (r.bytes ?? 0) + e.dataLength;
  });
  cdp.on('Network.responseReceived', (e) => {
    const r = open.get(e.requestId);
    if (!r) return;
    r.timing = e.response.timing;
    r.status = e.response.status;
    r.reused = e.response.connectionReused;
    r.conn = e.response.connectionId;
    r.protocol = e.response.protocol;
  });
  cdp.on('Network.loadingFinished', (e) => {
    const r = open.get(e.requestId);
    if (!r) return;
    open.delete(e.requestId);
    r.finished = e.timestamp;
    done.push(phases(r));
  });
  cdp.on('Network.loadingFailed', (e) => {
    const r = open.get(e.requestId);
    if (!r) return;
    open.delete(e.requestId);
    r.finished = e.timestamp;
    const p = phases(r);
    p.aborted = e.canceled ? 'canceled' : e.errorText || 'failed';
    done.push(p);
  });
  return { result: (opts) => summarise(done, opts), log: (t0) => requestLog(done, t0), done };
}
