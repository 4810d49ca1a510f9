// The player page: lists the origin's streams, plays one with dash.js, hls.js or
// WebSocket push (our MSE feeder, wspush.ts), and shows live QoE numbers and a chart.
// Deep link: /?stream=NAME&live=1|0&player=dashjs|hlsjs|wspush autoplays muted. Tests
// read window.streambed.stats().

import './app.css';
import { describeTrack, fetchStreams, formatBitrate, streamKey, type StreamInfo } from './api';
import { Chart } from './chart';
import { createPlayer, isPlayerKind, PLAYER_LABELS, type PlayerAdapter, type PlayerKind } from './players';
import { emptyStats, QoeRecorder, STALL_MIN_MS, type Stats } from './stats';
import { pushURL } from './wspush';
import { hlsProtocol, tlsUnreachable, tlsURL } from './h2';

const TICK_MS = 250;

interface Session {
  id: number;
  stream: StreamInfo;
  url: string;
  adapter: PlayerAdapter;
  recorder: QoeRecorder;
}

declare global {
  interface Window {
    streambed: {
      readonly player: PlayerKind;
      readonly stream: { name: string; live: boolean } | null;
      readonly streams: StreamInfo[];
      stats(): Stats;
    };
  }
}

function $<T extends HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`page is missing #${id}`);
  return el as T;
}

const params = new URLSearchParams(location.search);
const ui = {
  video: $<HTMLVideoElement>('video'),
  error: $<HTMLDivElement>('error'),
  list: $<HTMLUListElement>('streams'),
  listError: $<HTMLDivElement>('streams-error'),
  title: $<HTMLHeadingElement>('now-title'),
  url: $<HTMLAnchorElement>('now-url'),
  note: $<HTMLParagraphElement>('now-note'),
  stats: $<HTMLDListElement>('stats'),
  timeline: $<HTMLInputElement>('mpd-timeline'),
  badge: $<HTMLDivElement>('latency-badge'),
  chart: new Chart($<HTMLCanvasElement>('chart')),
};

let playerKind: PlayerKind = isPlayerKind(params.get('player')) ? (params.get('player') as PlayerKind) : 'dashjs';
let useTimeline = params.get('mpd') === 'timeline';
// ?delay=N: play N segments behind the live edge instead of where the origin says.
const liveDelaySegments = positiveNumber(params.get('delay'));
// ?hlsproto=http1: LL-HLS from this page's origin even when it has HTTP/2 on TLS (h2.ts).
const llhlsProtocol = hlsProtocol(params.get('hlsproto'));
let httpsPort: number | null = null;
let streams: StreamInfo[] = [];
let session: Session | null = null;
let sessionCounter = 0;

window.streambed = {
  get player() {
    return playerKind;
  },
  get stream() {
    return session ? { name: session.stream.name, live: session.stream.live } : null;
  },
  get streams() {
    return streams;
  },
  stats() {
    return session ? session.recorder.snapshot() : { ...emptyStats(), player: playerKind };
  },
};

function positiveNumber(v: string | null): number | null {
  const n = v == null ? NaN : Number(v);
  return Number.isFinite(n) && n > 0 ? n : null;
}

// ---- errors -------------------------------------------------------------------------

function showError(message: string | null): void {
  ui.error.hidden = message == null;
  ui.error.textContent = message ?? '';
}

// ---- player selection ---------------------------------------------------------------

function initPlayerSelect(): void {
  for (const input of document.querySelectorAll<HTMLInputElement>('input[name="player"]')) {
    input.checked = input.value === playerKind;
    input.addEventListener('change', () => {
      if (!input.checked || !isPlayerKind(input.value)) return;
      playerKind = input.value;
      syncTimelineToggle();
      if (session) play(session.stream, false);
      else writeUrl(null);
    });
  }
  ui.timeline.checked = useTimeline;
  ui.timeline.addEventListener('change', () => {
    useTimeline = ui.timeline.checked;
    if (session && playerKind === 'dashjs') play(session.stream, false);
    else writeUrl(session?.stream ?? null);
  });
  syncTimelineToggle();
}

function syncTimelineToggle(): void {
  ui.timeline.disabled = playerKind !== 'dashjs';
  ui.timeline.closest('label')?.classList.toggle('disabled', ui.timeline.disabled);
}

// ---- stream list --------------------------------------------------------------------

function renderStreams(): void {
  ui.list.replaceChildren();
  if (streams.length === 0) {
    const li = document.createElement('li');
    li.className = 'muted';
    li.textContent = 'The origin serves no streams yet.';
    ui.list.append(li);
    return;
  }
  // Live channels first, then assets; by name within each.
  const sorted = [...streams].sort((a, b) => Number(b.live) - Number(a.live) || a.name.localeCompare(b.name));
  for (const s of sorted) {
    const li = document.createElement('li');
    li.dataset.key = streamKey(s);

    const btn = document.createElement('button');
    btn.type = 'button';
    btn.className = 'stream';
    btn.addEventListener('click', () => play(s, false));
    const name = document.createElement('span');
    name.className = 'stream-name';
    name.textContent = s.name;
    const badge = document.createElement('span');
    badge.className = s.live ? 'badge live' : 'badge vod';
    badge.textContent = s.live ? 'LIVE' : 'VOD';
    const meta = document.createElement('span');
    meta.className = 'stream-meta';
    const parts: string[] = [];
    if (s.segment_duration_ms) parts.push(`${trimNum(s.segment_duration_ms / 1000)} s segments`);
    if (s.live && s.chunk_duration_ms) parts.push(`${Math.round(s.chunk_duration_ms)} ms chunks (low latency)`);
    for (const t of s.tracks ?? []) parts.push(describeTrack(t));
    meta.textContent = parts.join(' · ');
    btn.append(name, badge, meta);

    const links = document.createElement('span');
    links.className = 'stream-links';
    for (const [label, href] of [['MPD', s.dash], ['MPD timeline', s.dash_timeline], ['HLS', s.hls]] as const) {
      if (!href) continue;
      const a = document.createElement('a');
      a.href = href;
      a.textContent = label;
      a.target = '_blank';
      a.rel = 'noopener';
      links.append(a);
    }
    li.append(btn, links);
    ui.list.append(li);
  }
  highlightCurrent();
}

function highlightCurrent(): void {
  const key = session ? streamKey(session.stream) : null;
  for (const li of ui.list.querySelectorAll<HTMLLIElement>('li[data-key]')) {
    const on = li.dataset.key === key;
    li.classList.toggle('current', on);
    li.querySelector('button')?.setAttribute('aria-pressed', String(on));
  }
}

// ---- playback -----------------------------------------------------------------------

/** The URL a player loads: an MPD, a master playlist, or for WebSocket push the
 * stream's ws: (wss: on an https page) URL on this origin. */
function manifestFor(s: StreamInfo, kind: PlayerKind): string | undefined {
  if (kind === 'hlsjs') return s.hls;
  if (kind === 'wspush') return pushURL(pushPathFor(s), location.href);
  return useTimeline && s.dash_timeline ? s.dash_timeline : s.dash;
}

/** The push URL /api/streams lists (/ws/{channel}, /ws/vod/{asset}); built the same
 * way for an origin that does not list it (docs/protocols/wspush.md). */
function pushPathFor(s: StreamInfo): string {
  if (s.ws) return s.ws;
  const name = encodeURIComponent(s.name);
  return s.live ? `/ws/${name}` : `/ws/vod/${name}`;
}

const FORMAT_NAMES: Record<PlayerKind, string> = { dashjs: 'DASH manifest', hlsjs: 'HLS playlist', wspush: 'WebSocket push URL' };

function stop(): void {
  if (!session) return;
  session.recorder.dispose();
  try {
    session.adapter.destroy();
  } catch (err) {
    console.warn('player destroy failed', err);
  }
  session = null;
  ui.video.removeAttribute('src');
  ui.video.load();
}

function play(s: StreamInfo, muted: boolean): void {
  stop();
  showError(null);
  ui.note.hidden = true;
  ui.chart.clear();
  if (muted) ui.video.muted = true;
  writeUrl(s);
  const label = `${s.name} · ${s.live ? 'live' : 'on demand'} · ${PLAYER_LABELS[playerKind]}`;
  ui.title.textContent = label;
  document.title = `${s.name} — Streambed`;

  const url = manifestFor(s, playerKind);
  if (!url) {
    ui.url.textContent = '';
    ui.url.removeAttribute('href');
    showError(`${s.name} (${s.live ? 'live' : 'VOD'}) has no ${FORMAT_NAMES[playerKind]}`);
    highlightCurrent();
    return;
  }
  ui.url.textContent = url;
  // A ws: URL is nothing a browser tab can open; show it without a link.
  if (playerKind === 'wspush') ui.url.removeAttribute('href');
  else ui.url.href = url;

  const id = ++sessionCounter;
  const current = () => session?.id === id;
  let recorder: QoeRecorder | null = null;
  const adapter = createPlayer(playerKind, ui.video, {
    error: (msg) => {
      if (!current() || !recorder) return;
      console.error(msg);
      recorder.setError(msg);
      showError(msg);
    },
    warning: (msg) => {
      if (!current() || !recorder) return;
      console.warn(msg);
      recorder.warn(msg);
    },
    segment: (bytes) => {
      if (current()) recorder?.segment(bytes);
    },
  });
  recorder = new QoeRecorder(ui.video, adapter, s.name, s.live);
  ui.title.textContent = `${s.name} · ${s.live ? 'live' : 'on demand'} · ${adapter.version}`;
  session = { id, stream: s, url, adapter, recorder };
  highlightCurrent();
  const rec = recorder;
  const segmentDurationS = s.segment_duration_ms ? s.segment_duration_ms / 1000 : null;
  // Low-latency DASH is the $Number$ MPD of a channel made in short chunks (the
  // SegmentTimeline MPD of the same channel is not); LL-HLS is its HLS playlists.
  const lowLatency = s.live && !!s.chunk_duration_ms && (url === s.dash || url === s.hls);
  const load = (absolute: string) => {
    try {
      adapter.load({ url: absolute, live: s.live, liveDelaySegments, autoplay: true, segmentDurationS, lowLatency });
    } catch (err) {
      const msg = `${PLAYER_LABELS[playerKind]} failed to start: ${(err as Error).message}`;
      rec.setError(msg);
      showError(msg);
    }
  };
  // Absolute, since parts of dash.js (its CMCD reporter) parse request URLs without a base.
  const absolute = new URL(url, location.href).href;
  const h2 = playerKind === 'hlsjs' && lowLatency && llhlsProtocol === 'auto' && httpsPort ? tlsURL(url, location.href, httpsPort) : null;
  if (!h2) {
    load(absolute);
    return;
  }
  // LL-HLS over HTTP/2 (h2.ts): on the TLS port if the browser reaches it.
  void tlsUnreachable(h2).then((why) => {
    if (!current()) return;
    if (why) {
      const page = new URL(location.href);
      page.protocol = 'https:';
      page.port = String(httpsPort);
      const msg = `LL-HLS over HTTP/1.1: the origin's HTTP/2 (${new URL(h2).origin}) is not reachable from this page (${why}); ` +
        `hls.js switches renditions on lossy links over HTTP/1.1 — open ${page.href} (accept its certificate) for HTTP/2`;
      console.warn(msg);
      rec.warn(msg);
      showNote('LL-HLS is on HTTP/1.1 here, where hls.js keeps less of its low latency on lossy links. For HTTP/2, open ', page.href,
        ' once and accept its certificate.', msg);
      load(absolute);
      return;
    }
    ui.url.textContent = h2;
    ui.url.href = h2;
    if (session) session.url = h2;
    load(h2);
  });
}

/** A visible note under the playing URL: text, a link, more text; title holds the detail. */
function showNote(before: string, href: string, after: string, title: string): void {
  const a = document.createElement('a');
  a.href = href;
  a.textContent = href;
  ui.note.replaceChildren(before, a, after);
  ui.note.title = title;
  ui.note.hidden = false;
}

function writeUrl(s: StreamInfo | null): void {
  const p = new URLSearchParams(location.search);
  if (s) {
    p.set('stream', s.name);
    p.set('live', s.live ? '1' : '0');
  }
  p.set('player', playerKind);
  if (useTimeline) p.set('mpd', 'timeline');
  else p.delete('mpd');
  history.replaceState(null, '', `${location.pathname}?${p}`);
}

// ---- stats panel --------------------------------------------------------------------

type Field = [key: string, label: string, value: (s: Stats) => string, title?: (s: Stats) => string];

const FIELDS: Field[] = [
  ['state', 'State', stateOf],
  ['startup', 'Start-up delay', (s) => (s.startupMs == null ? '–' : `${Math.round(s.startupMs)} ms`)],
  ['buffer', 'Buffer', (s) => `${s.bufferS.toFixed(1)} s`],
  ['bitrate', 'Bitrate', (s) => formatBitrate(s.bitrateBps)],
  ['resolution', 'Resolution', (s) => (s.width ? `${s.width}×${s.height}` : '–')],
  ['latency', 'Live latency / target', latency, () => 'seconds behind the live edge, and the delay the player steers to'],
  ['stalls', 'Stalls', (s) => `${s.stalls} (${(s.stallMs / 1000).toFixed(1)} s)`, (s) =>
    `stalls: waits for data of ${STALL_MIN_MS} ms or more after start-up; shorter waits: ${s.shortWaits}` +
    (s.waits.length ? `\nlast waits: ${s.waits.map((w) => `${w.ms} ms at ${w.at.toFixed(2)} s`).join(', ')}` : '')],
  ['requests', 'Segments loaded', (s) => `${s.requests} · ${formatBytes(s.bytes)}`],
  ['dropped', 'Dropped frames', (s) => `${s.droppedFrames} / ${s.totalFrames}`],
  ['position', 'Position', position, (s) => `media time ${s.currentTime.toFixed(3)} s`],
  ['warnings', 'Warnings', (s) => String(s.warnings), (s) => s.lastWarning ?? ''],
  // WebSocket push only: the server adapts, so show what it chose and why.
  ['server', 'Server chose', serverChoice, (s) => `the rendition the server chose last and its reason: ${serverChoice(s)}`],
  ['push', 'Pushed', pushed, (s) => (s.push ? `${s.push.url}\n${s.push.messages} messages: ${s.push.inits} inits, ${s.push.chunks} chunks, ` +
    `${s.push.switches} switches, ${s.push.skips} skips, ${s.push.adapts} adapt reports` : '')],
];

/** Rows shown only while the WebSocket push player plays. */
const PUSH_ONLY = new Set(['server', 'push']);

const statCells = new Map<string, HTMLElement>();

function initStats(): void {
  ui.stats.replaceChildren();
  for (const [key, label] of FIELDS) {
    const wrap = document.createElement('div');
    wrap.className = 'stat';
    const dt = document.createElement('dt');
    dt.textContent = label;
    const dd = document.createElement('dd');
    dd.dataset.stat = key;
    dd.textContent = '–';
    wrap.append(dt, dd);
    if (PUSH_ONLY.has(key)) {
      wrap.hidden = true;
      wrap.classList.add('wide');
    }
    ui.stats.append(wrap);
    statCells.set(key, dd);
  }
}

function serverChoice(s: Stats): string {
  if (s.serverReason == null) return '–';
  const track = s.serverTrack ? s.serverTrack : 'held back';
  const est = s.serverEstimateBps ? `, estimate ${formatBitrate(s.serverEstimateBps)}` : '';
  return `${track} (${s.serverReason}${est})`;
}

function pushed(s: Stats): string {
  if (!s.push) return '–';
  return `${s.push.chunks} chunks · ${formatBytes(s.push.bytes)}${s.push.policy ? ` · policy ${s.push.policy}` : ''}`;
}

function latency(s: Stats): string {
  if (!s.live) return 'n/a (VOD)';
  const l = s.latencyS == null ? '–' : s.latencyS.toFixed(2);
  return s.targetLatencyS == null ? `${l} s` : `${l} / ${s.targetLatencyS.toFixed(1)} s`;
}

/** VOD: time and duration. Live: the wall-clock time being shown (now − latency), since
 * a live timeline may count from the epoch and its raw seconds say little. */
function position(s: Stats): string {
  if (s.live) {
    if (s.latencyS == null) return '–';
    return `${new Date(Date.now() - s.latencyS * 1000).toISOString().slice(11, 19)} UTC`;
  }
  const d = ui.video.duration;
  return Number.isFinite(d) ? `${s.currentTime.toFixed(1)} / ${d.toFixed(1)} s` : `${s.currentTime.toFixed(1)} s`;
}

function stateOf(s: Stats): string {
  if (!session) return 'idle';
  if (s.error) return 'error';
  if (s.startupMs == null) return 'starting';
  if (s.playing) return 'playing';
  if (ui.video.ended) return 'ended';
  if (ui.video.paused) return 'paused';
  return 'stalled';
}

function tick(): void {
  const s = window.streambed.stats();
  for (const [key, , value, title] of FIELDS) {
    const cell = statCells.get(key);
    if (!cell) continue;
    const text = value(s);
    if (cell.textContent !== text) cell.textContent = text;
    if (title) cell.title = title(s);
    if (PUSH_ONLY.has(key) && cell.parentElement) cell.parentElement.hidden = s.player !== 'wspush';
  }
  const state = statCells.get('state');
  if (state) state.dataset.state = stateOf(s);
  showLatencyBadge(s);
  if (session) {
    ui.chart.push({
      t: performance.now(),
      bufferS: s.bufferS,
      bitrateBps: s.bitrateBps,
      stalled: s.startupMs != null && !s.playing && !ui.video.paused && !s.error,
    });
  }
}

const PLAYER_NAMES: Record<string, string> = { dashjs: 'dash.js', hlsjs: 'hls.js', wspush: 'WebSocket push' };

/** The live latency over the video, large: seconds behind the live edge and which
 * player holds it (green below 2 s). Hidden for VOD and before the player knows it. */
function showLatencyBadge(s: Stats): void {
  const show = !!session && s.live && s.latencyS != null && s.startupMs != null;
  ui.badge.hidden = !show;
  if (!show || s.latencyS == null) return;
  const value = s.latencyS.toFixed(2);
  const what = `behind live · ${s.player ? PLAYER_NAMES[s.player] ?? s.player : ""}`;
  if (ui.badge.dataset.text !== value + what) {
    ui.badge.dataset.text = value + what;
    const v = document.createElement('span');
    v.className = 'value';
    v.textContent = value;
    const u = document.createElement('span');
    u.className = 'unit';
    u.textContent = 's';
    const w = document.createElement('span');
    w.className = 'what';
    w.textContent = what;
    ui.badge.replaceChildren(v, u, w);
  }
  ui.badge.classList.toggle('low', s.latencyS < 2);
}

function formatBytes(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} GB`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} MB`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(0)} kB`;
  return `${n} B`;
}

function trimNum(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toFixed(2).replace(/0+$/, '');
}

// ---- start --------------------------------------------------------------------------

async function main(): Promise<void> {
  initPlayerSelect();
  initStats();
  ui.chart.draw();
  setInterval(tick, TICK_MS);
  window.addEventListener('resize', () => ui.chart.draw());

  try {
    ({ streams, httpsPort } = await fetchStreams());
    ui.listError.hidden = true;
  } catch (err) {
    ui.list.replaceChildren();
    ui.listError.hidden = false;
    ui.listError.textContent = (err as Error).message;
    return;
  }
  renderStreams();

  const wanted = params.get('stream');
  if (wanted) {
    const live = params.get('live');
    const match = streams.find((s) => s.name === wanted && (live == null || s.live === (live === '1' || live === 'true')));
    if (match) play(match, true);
    else showError(`No ${live === '1' ? 'live channel' : live === '0' ? 'asset' : 'stream'} named "${wanted}" on this origin.`);
  }
}

main().catch((err) => showError(`page failed: ${(err as Error).message}`));
