// WebSocket push into Media Source Extensions: the server pushes every CMAF chunk the
// moment it exists and chooses the rendition (server-side adaptation); this module
// appends inits and chunks, follows track switches, chases the live edge with
// playbackRate, trims old buffer and reports what the stats panel needs plus which
// track the server chose and why. Wire format: docs/protocols/wspush.md.
//
// It is the page's 'wspush' player (players/index.ts). Live latency is measured as
// dash.js does it: the origin's clock (GET /time, as the MPD's UTCTiming) minus the
// wall-clock time of the playhead, availabilityStart + currentTime (the live timeline's
// media time 0 is the channel's availability start).

import type { LoadOptions, PlayerAdapter, PlayerEvents, PushCounters, ServerChoice } from './players/types';

const KIND_INIT = 1;
const KIND_CHUNK = 2;
const FLAG_START = 0x10;
const FLAG_END = 0x20;

const TICK_MS = 250;
/** Live: the least latency aimed for, seconds (one-frame chunks allow it). */
export const MIN_TARGET_LATENCY_S = 0.5;
/** Live: the target stays this far above the duration of one chunk, so the next chunk
 * arrives while this much media is still buffered. */
const CHUNK_MARGIN_S = 0.4;
/** Live: and this far above the largest lag of the received edge behind the live
 * edge over EDGE_WINDOW_MS (slow delivery raises the target instead of stalling). */
const EDGE_MARGIN_S = 0.5;
const EDGE_WINDOW_MS = 10_000;
/** Media kept behind the playhead, seconds; older media is removed. */
const KEEP_BEHIND_S = 10;

/** One track of the ready message. */
export interface WsTrack {
  index: number;
  id: string;
  kind: 'video' | 'audio';
  codec: string;
  mime: string;
  bandwidth: number;
  width?: number;
  height?: number;
  timescale: number;
}

/** The server's answer to start. */
export interface WsReady {
  type: 'ready';
  stream: string;
  live: boolean;
  segmentDuration: number;
  availabilityStart?: string;
  duration?: number;
  tracks: WsTrack[];
  base: number;
  start: number;
  policy: string;
  video?: string;
  audio?: string;
}

/** A parsed binary message. */
export interface WsFrame {
  kind: number;
  start: boolean;
  end: boolean;
  track: number;
  sequence: number;
  payload: Uint8Array;
}

/** Parses a binary message (byte 0 kind|flags, byte 1 track, uvarint sequence). */
export function parseFrame(buf: ArrayBuffer): WsFrame {
  const b = new Uint8Array(buf);
  if (b.length < 3) throw new Error(`wspush: ${b.length}-byte message`);
  const kind = b[0] & 0x0f;
  if ((kind !== KIND_INIT && kind !== KIND_CHUNK) || (b[0] & 0xc0) !== 0) throw new Error(`wspush: unknown kind or flags ${b[0]}`);
  let seq = 0;
  let mul = 1;
  let i = 2;
  for (;; i++) {
    if (i >= b.length || i > 9) throw new Error('wspush: bad sequence');
    seq += (b[i] & 0x7f) * mul;
    mul *= 128;
    if ((b[i] & 0x80) === 0) break;
  }
  return { kind, start: (b[0] & FLAG_START) !== 0, end: (b[0] & FLAG_END) !== 0, track: b[1], sequence: seq, payload: b.subarray(i + 1) };
}

/** Codec families this browser can play, for the start message. */
function playableCodecs(): string[] {
  const probes: [string, string][] = [
    ['avc1', 'video/mp4; codecs="avc1.64001f"'], ['vp09', 'video/mp4; codecs="vp09.00.10.08"'],
    ['av01', 'video/mp4; codecs="av01.0.05M.08"'], ['mp4a', 'audio/mp4; codecs="mp4a.40.2"'],
    ['opus', 'audio/mp4; codecs="opus"'],
  ];
  return probes.filter(([, t]) => MediaSource.isTypeSupported(t)).map(([c]) => c);
}

/** The push URL (ws: or wss:, as the page's own scheme) of a stream's MPD or playlist
 * URL (/live/NAME/..., /vod/NAME/...) or of a push path (/ws/NAME, /ws/vod/NAME). */
export function pushURL(url: string, base: string = location.href): string {
  const u = new URL(url, base);
  const secure = u.protocol === 'https:' || u.protocol === 'wss:';
  u.protocol = secure ? 'wss:' : 'ws:';
  u.search = '';
  u.hash = '';
  if (u.pathname.startsWith('/ws/')) return u.toString();
  const m = u.pathname.match(/^\/(live|vod)\/([^/]+)\//);
  if (!m) throw new Error(`wspush: ${url} is not a stream URL`);
  u.pathname = m[1] === 'live' ? `/ws/${m[2]}` : `/ws/vod/${m[2]}`;
  return u.toString();
}

/** A track of one kind fed into one SourceBuffer, with its append queue. */
class Lane {
  private sb: SourceBuffer;
  // Bytes to append, a codec change (changeType) to make first, or a callback to run
  // once everything before it is appended (given the buffered end then).
  private queue: ({ data: Uint8Array } | { type: string } | { mark: (end: number) => void })[] = [];
  private mime: string;
  constructor(ms: MediaSource, mime: string, private onError: (m: string) => void) {
    this.mime = mime;
    this.sb = ms.addSourceBuffer(mime);
    this.sb.mode = 'segments';
    this.sb.addEventListener('updateend', () => this.pump());
    this.sb.addEventListener('error', () => this.onError(`SourceBuffer error (${this.mime})`));
  }
  append(data: Uint8Array, mime: string): void {
    if (mime !== this.mime) {
      this.queue.push({ type: mime }); // a switch to another codec string
      this.mime = mime;
    }
    this.queue.push({ data });
    this.pump();
  }
  /** Calls fn with the end of the buffered media once all queued so far is appended. */
  mark(fn: (end: number) => void): void {
    this.queue.push({ mark: fn });
    this.pump();
  }
  /** Nothing queued and nothing being appended. */
  get idle(): boolean {
    return this.queue.length === 0 && !this.sb.updating;
  }
  private pump(): void {
    while (!this.sb.updating && this.queue.length > 0) {
      const next = this.queue.shift()!;
      try {
        if ('type' in next) {
          this.sb.changeType(next.type);
          continue;
        }
        if ('mark' in next) {
          const r = this.sb.buffered;
          next.mark(r.length > 0 ? r.end(r.length - 1) : -Infinity);
          continue;
        }
        this.sb.appendBuffer(next.data as Uint8Array<ArrayBuffer>);
      } catch (e) {
        if ((e as DOMException).name === 'QuotaExceededError' && 'data' in next) {
          this.queue.unshift(next); // trimming frees room; the next tick retries
        } else {
          this.onError(`append: ${(e as Error).message}`);
        }
      }
      return;
    }
  }
  /** Retries a stalled queue and removes media before the given time, in steps of
   * a few seconds (not on every tick). */
  trim(before: number): void {
    this.pump();
    if (this.sb.updating || before <= 0) return;
    const r = this.sb.buffered;
    if (r.length > 0 && r.start(0) < before - 2) this.sb.remove(0, before);
  }
}

/** The WebSocket push player (kind 'wspush'). */
export class WsPushAdapter implements PlayerAdapter {
  readonly kind = 'wspush' as const;
  readonly version = 'WebSocket push (wspush v1)';
  private ms: MediaSource | null = null;
  private ws: WebSocket | null = null;
  private url = '';
  private opened = false;
  private ready: WsReady | null = null;
  private lanes = new Map<string, Lane>(); // by kind
  // The video renditions fed, each from the media time its init applies: the one at
  // the playhead is the one playing (the newest may still be seconds ahead).
  private renditions: { at: number; track: WsTrack }[] = [];
  private ast = 0; // availability start, s since the epoch
  private clockOffsetMs = 0; // origin clock − local clock
  private timer = 0;
  private ticks = 0;
  private started = false;
  private startBy = 0; // performance.now() after which a live start waits no longer
  private live = false;
  private fixedTarget: number | null = null; // ?delay=N, in seconds
  private target = MIN_TARGET_LATENCY_S;
  private rate = 1;
  // Chunk duration: exact per kind once a segment completed, else an upper bound
  // from the segment in progress (segmentDuration / (chunks seen so far)).
  private chunkDur = new Map<string, number>();
  private chunkBound = new Map<string, number>();
  private lastIndex = new Map<string, number>(); // per kind: the newest chunk's index in its segment
  private edgeLags: { t: number; lag: number }[] = [];
  private segBytes = new Map<number, number>(); // bytes of the segment in progress, by track index
  private choice: ServerChoice | null = null;
  private counters: PushCounters = { url: '', policy: null, messages: 0, inits: 0, chunks: 0, bytes: 0, switches: 0, skips: 0, adapts: 0 };
  private ending = false; // VOD: the server sent 'end'
  private closed = false;

  constructor(private video: HTMLVideoElement, private on: PlayerEvents) {}

  load(opts: LoadOptions): void {
    this.live = opts.live;
    this.url = pushURL(opts.url);
    this.counters.url = this.url;
    if (opts.live && opts.liveDelaySegments != null && opts.segmentDurationS) {
      this.fixedTarget = opts.liveDelaySegments * opts.segmentDurationS;
    }
    if (typeof MediaSource === 'undefined') {
      this.on.error('WebSocket push: this browser has no Media Source Extensions');
      return;
    }
    this.ms = new MediaSource();
    this.video.src = URL.createObjectURL(this.ms);
    this.ms.addEventListener('sourceopen', () => this.open(opts), { once: true });
    if (opts.live) void this.syncClock();
  }

  /** Origin clock offset from GET /time (the UTCTiming source the MPDs name): of a
   * few samples, the one with the shortest round trip, where the server's stamp can be
   * least far from the middle of it. */
  private async syncClock(): Promise<void> {
    const u = new URL(this.url);
    u.protocol = u.protocol === 'wss:' ? 'https:' : 'http:';
    u.pathname = '/time';
    let best = Infinity;
    for (let i = 0; i < 3 && !this.closed; i++) {
      try {
        const t0 = performance.now();
        const res = await fetch(u, { cache: 'no-store' });
        const body = (await res.text()).trim();
        const t1 = performance.now();
        const server = Date.parse(body);
        if (!res.ok || !Number.isFinite(server)) throw new Error(`HTTP ${res.status} ${body.slice(0, 40)}`);
        if (t1 - t0 < best) {
          best = t1 - t0;
          // Date.now() now, less half the round trip: the local time in its middle.
          this.clockOffsetMs = server - (Date.now() - (t1 - t0) / 2);
        }
      } catch (e) {
        if (!this.closed) this.on.warning(`clock sync with ${u.pathname} failed, using the local clock: ${(e as Error).message}`);
        return;
      }
    }
  }

  private open(opts: LoadOptions): void {
    if (this.closed) return;
    const ws = new WebSocket(this.url);
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    let at: string | number = 'live';
    // Behind the live edge by more than a segment: start that far back (the server
    // sends the older segments at once, then follows the edge).
    if (this.fixedTarget != null && opts.segmentDurationS) at = -(this.fixedTarget + opts.segmentDurationS);
    ws.onopen = () => {
      this.opened = true;
      ws.send(JSON.stringify({ type: 'start', at, codecs: playableCodecs(), stats: true }));
    };
    ws.onmessage = (ev) => {
      if (this.closed) return;
      this.counters.messages++;
      try {
        if (typeof ev.data === 'string') this.text(JSON.parse(ev.data));
        else this.binary(parseFrame(ev.data as ArrayBuffer));
      } catch (e) {
        this.on.error(`WebSocket push: ${(e as Error).message}`);
        this.destroy();
      }
    };
    ws.onclose = (ev) => this.onClose(ev);
    this.timer = window.setInterval(() => this.tick(), TICK_MS);
    if (opts.autoplay) {
      this.video.play().catch((err: Error) => {
        if (!this.closed) this.on.warning(`autoplay refused: ${err.message}`);
      });
    }
  }

  private onClose(ev: CloseEvent): void {
    if (this.closed) return;
    this.ws = null;
    if (ev.code === 1000 && !this.live) {
      this.ending = true; // the whole asset was sent; end the stream once appended
      return;
    }
    const why = ev.reason ? `: ${ev.reason}` : '';
    if (!this.opened) {
      this.on.error(`WebSocket push: could not connect to ${this.url} (${ev.code}${why}); is the stream served over WebSocket push?`);
    } else if (ev.code === 1006) {
      this.on.error(`WebSocket push: the connection to ${this.url} was lost (1006)`);
    } else {
      this.on.error(`WebSocket push: the server closed the session (${ev.code}${why})`);
    }
  }

  private text(m: { type: string; [k: string]: unknown }): void {
    switch (m.type) {
      case 'ready': {
        const r = m as unknown as WsReady;
        this.ready = r;
        this.live = r.live;
        this.counters.policy = r.policy;
        this.ast = r.availabilityStart ? Date.parse(r.availabilityStart) / 1000 : 0;
        if (!this.ms) return;
        for (const id of [r.video, r.audio]) {
          const t = r.tracks.find((x) => x.id === id);
          if (!t) continue;
          this.lanes.set(t.kind, new Lane(this.ms, `${t.mime}; codecs="${t.codec}"`, (e) => this.on.error(e)));
        }
        if (this.lanes.size === 0) throw new Error('the server chose no playable track');
        try {
          // Live: an open-ended timeline, as dash.js sets it; VOD: the asset's length.
          this.ms.duration = r.live ? Infinity : r.duration || this.ms.duration;
        } catch {
          /* only cosmetic: the position display */
        }
        this.startBy = performance.now() + 2000 * (r.segmentDuration + MIN_TARGET_LATENCY_S);
        this.choice = { track: r.video ?? r.audio ?? '', reason: `start (policy ${r.policy})` };
        break;
      }
      case 'switch':
        this.counters.switches++;
        this.choice = { track: String(m.to), reason: String(m.reason) };
        break;
      case 'skip':
        this.counters.skips++;
        this.on.warning(`server skipped to segment ${m.segment} (${m.lost} chunks lost): ${m.reason}`);
        break;
      case 'adapt':
        this.counters.adapts++;
        this.choice = {
          track: String(m.track ?? ''),
          reason: String(m.reason ?? ''),
          ...(typeof m.estimate === 'number' && m.estimate > 0 ? { estimateBps: m.estimate } : {}),
        };
        break;
      case 'end':
        this.ending = true;
        break;
    }
  }

  private binary(f: WsFrame): void {
    const t = this.ready?.tracks[f.track];
    if (!t) throw new Error(`track index ${f.track} before ready or unknown`);
    const lane = this.lanes.get(t.kind);
    this.counters.bytes += f.payload.byteLength;
    if (f.kind === KIND_INIT) {
      this.counters.inits++;
      if (t.kind === 'video') lane?.mark((at) => this.renditions.push({ at, track: t }));
      this.on.segment(f.payload.byteLength);
    } else {
      this.counters.chunks++;
      this.countChunk(t, f);
    }
    lane?.append(f.payload, `${t.mime}; codecs="${t.codec}"`);
  }

  /** Segment bytes for the stats (one segment() per complete segment) and the
   * chunk-duration estimate for the live target. */
  private countChunk(t: WsTrack, f: WsFrame): void {
    const bytes = (f.start ? 0 : this.segBytes.get(f.track) ?? 0) + f.payload.byteLength;
    const index = f.start ? 0 : f.sequence; // a chunk's index in its segment
    const segDur = this.ready?.segmentDuration ?? 0;
    if (segDur > 0) {
      // A segment's chunk count is known at its end flag, or, for an encoder's
      // segments, which carry none, when the next one starts. Until then the count so
      // far only bounds the duration (and must not reset it at every segment start).
      const prev = this.lastIndex.get(t.kind);
      if (f.end) this.chunkDur.set(t.kind, segDur / (index + 1));
      else if (f.start && prev != null) this.chunkDur.set(t.kind, segDur / (prev + 1));
      else this.chunkBound.set(t.kind, segDur / (index + 1));
      this.lastIndex.set(t.kind, index);
    }
    if (f.end) {
      this.segBytes.delete(f.track);
      this.on.segment(bytes);
    } else {
      this.segBytes.set(f.track, bytes);
    }
  }

  /** The longest chunk of the tracks being fed, seconds (0 while unknown). */
  private chunkDuration(): number {
    let d = 0;
    for (const kind of this.lanes.keys()) d = Math.max(d, this.chunkDur.get(kind) ?? this.chunkBound.get(kind) ?? 0);
    return d;
  }

  /** Seconds since the availability start on the origin's clock: the live edge. */
  private edge(): number {
    return (Date.now() + this.clockOffsetMs) / 1000 - this.ast;
  }

  private updateTarget(end: number): void {
    if (this.fixedTarget != null) {
      this.target = this.fixedTarget;
      return;
    }
    const now = performance.now();
    this.edgeLags.push({ t: now, lag: this.edge() - end });
    while (this.edgeLags.length > 0 && this.edgeLags[0].t < now - EDGE_WINDOW_MS) this.edgeLags.shift();
    const lag = Math.max(...this.edgeLags.map((x) => x.lag));
    this.target = Math.max(MIN_TARGET_LATENCY_S, this.chunkDuration() + CHUNK_MARGIN_S, lag + EDGE_MARGIN_S);
  }

  private tick(): void {
    if (this.closed) return;
    this.ticks++;
    const v = this.video;
    const b = v.buffered;
    if (this.ending) this.finish();
    if (b.length === 0) return;
    const start0 = b.start(0);
    const end = b.end(b.length - 1);
    if (this.live && this.ast) this.updateTarget(end);
    if (!this.started) {
      let at = start0;
      if (this.live && this.ast) {
        // Start `target` behind the live edge; while that is before the keyframe the
        // server began with, wait (the edge moves on in real time) — up to a limit.
        at = this.edge() - this.target;
        if (at < start0 && performance.now() < this.startBy) return;
        at = Math.max(start0, Math.min(at, end - 0.1));
      }
      v.currentTime = at;
      this.started = true;
      return;
    }
    this.jumpGap(b);
    if (this.live) this.steer(end);
    for (const lane of this.lanes.values()) lane.trim(v.currentTime - KEEP_BEHIND_S);
    if (this.ws?.readyState === WebSocket.OPEN && this.ticks % 4 === 0) {
      const lat = this.latency();
      this.ws.send(JSON.stringify({ type: 'status', buffer: Math.max(0, end - v.currentTime), latency: lat != null && lat > 0 ? lat : 0 }));
    }
  }

  /** Live: playbackRate 1.1 while behind the target, 0.95 while ahead, with hysteresis;
   * a jump when far behind. Never faster while the buffer is nearly empty. */
  private steer(end: number): void {
    const v = this.video;
    const lat = this.latency();
    if (lat == null || v.paused || v.seeking) return;
    const err = lat - this.target;
    if (err > 3 && end - this.target > v.currentTime) {
      v.currentTime = Math.max(v.currentTime, Math.min(this.edge() - this.target, end - 0.1));
      this.rate = 1;
    } else if (err > 0.15) this.rate = 1.1;
    else if (err < -0.15) this.rate = 0.95;
    else if (Math.abs(err) < 0.03) this.rate = 1;
    const rate = end - v.currentTime < 0.3 ? Math.min(this.rate, 1) : this.rate;
    if (v.playbackRate !== rate) v.playbackRate = rate;
  }

  /** Jumps a hole in the buffer (a skipped segment, a lost chunk) when playback has
   * reached it. */
  private jumpGap(b: TimeRanges): void {
    const v = this.video;
    if (v.readyState >= 3 || v.seeking) return; // HAVE_FUTURE_DATA: not stuck
    const t = v.currentTime;
    for (let i = 0; i < b.length; i++) {
      if (t < b.start(i) - 0.01 || (t >= b.end(i) - 0.15 && t <= b.end(i) + 0.01 && i + 1 < b.length)) {
        const next = t < b.start(i) - 0.01 ? b.start(i) : b.start(i + 1);
        v.currentTime = next + 0.01;
        return;
      }
      if (t <= b.end(i)) return;
    }
  }

  /** VOD: end the stream once everything received is appended. */
  private finish(): void {
    const ms = this.ms;
    if (!ms || ms.readyState !== 'open') return;
    // Messages arrive in order: after 'end' (or the close) every chunk is queued.
    for (const lane of this.lanes.values()) if (!lane.idle) return;
    try {
      ms.endOfStream();
    } catch (e) {
      this.on.warning(`endOfStream: ${(e as Error).message}`);
    }
  }

  /** Declared bandwidth of the video rendition at the playhead, bit/s. */
  bitrate(): number | null {
    const r = this.renditions;
    const t = this.video.currentTime + 0.01;
    let i = 0;
    while (i + 1 < r.length && r[i + 1].at <= t) i++;
    if (i > 0) r.splice(0, i); // those before are played out
    return r.length > 0 ? r[0].track.bandwidth : null;
  }

  /** Seconds behind the live edge: the origin's clock minus the wall time of the playhead. */
  latency(): number | null {
    if (!this.live || !this.ast || !this.started) return null;
    return this.edge() - this.video.currentTime;
  }

  targetLatency(): number | null {
    return this.live && this.ready ? this.target : null;
  }

  /** The track the server chose last, and why. */
  serverChoice(): ServerChoice | null {
    return this.choice;
  }

  pushCounters(): PushCounters {
    return { ...this.counters };
  }

  destroy(): void {
    if (this.closed) return;
    this.closed = true;
    window.clearInterval(this.timer);
    this.ws?.close(1000);
    this.ws = null;
    this.video.playbackRate = 1;
    if (this.video.src.startsWith('blob:')) URL.revokeObjectURL(this.video.src);
    this.video.removeAttribute('src');
    this.video.load();
    this.ms = null;
  }
}
