// WebSocket push into Media Source Extensions: the server pushes every CMAF chunk the
// moment it exists and chooses the rendition (server-side adaptation); this module
// appends inits and chunks, follows track switches, chases the live edge with
// playbackRate, trims old buffer and reports what the stats panel needs plus which
// track the server chose and why. Wire format: docs/protocols/wspush.md.
//
// Standalone: it has the shape of a PlayerAdapter (players/types.ts) with kind
// 'wspush'. To hook it in, add 'wspush' to PlayerKind and PLAYER_LABELS, return
// `new WsPushAdapter(video, on)` from createPlayer for it, and enable the
// "WebSocket push" radio in index.html.

import type { LoadOptions, PlayerEvents } from './players/types';

const KIND_INIT = 1;
const KIND_CHUNK = 2;
const FLAG_START = 0x10;
const FLAG_END = 0x20;

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

/** The push URL of a stream's MPD or playlist URL (/live/NAME/..., /vod/NAME/...). */
export function pushURL(manifestURL: string, base: string = location.href): string {
  const u = new URL(manifestURL, base);
  const m = u.pathname.match(/^\/(live|vod)\/([^/]+)\//);
  if (!m) throw new Error(`wspush: ${manifestURL} is not a stream URL`);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  u.pathname = m[1] === 'live' ? `/ws/${m[2]}` : `/ws/vod/${m[2]}`;
  u.search = '';
  return u.toString();
}

/** A track of one kind fed into one SourceBuffer, with its append queue. */
class Lane {
  private sb: SourceBuffer;
  // Bytes to append, or a codec change (changeType) to make first.
  private queue: ({ data: Uint8Array } | { type: string })[] = [];
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
  private pump(): void {
    while (!this.sb.updating && this.queue.length > 0) {
      const next = this.queue.shift()!;
      if ('type' in next) {
        this.sb.changeType(next.type);
        continue;
      }
      try {
        this.sb.appendBuffer(next.data as Uint8Array<ArrayBuffer>);
      } catch (e) {
        if ((e as DOMException).name === 'QuotaExceededError') {
          this.queue.unshift(next); // trimming frees room; the next tick retries
        } else {
          this.onError(`append: ${(e as Error).message}`);
        }
      }
      return;
    }
  }
  /** Retries a stalled queue and removes media before the given time. */
  trim(before: number): void {
    this.pump();
    if (this.sb.updating || before <= 0) return;
    const r = this.sb.buffered;
    if (r.length > 0 && r.start(0) < before) this.sb.remove(0, before);
  }
}

/** WebSocket push player with the shape of a PlayerAdapter (kind 'wspush'). */
export class WsPushAdapter {
  readonly kind = 'wspush' as const;
  readonly version = 'wspush v1';
  /** Seconds behind the live edge to aim for (the page may change it). */
  targetLatency = 1.0;
  private ms: MediaSource | null = null;
  private ws: WebSocket | null = null;
  private ready: WsReady | null = null;
  private lanes = new Map<string, Lane>(); // by kind
  private current = new Map<string, WsTrack>(); // the track each kind is on, by kind
  private ast = 0; // availability start, s since the epoch
  private timer = 0;
  private started = false;
  private live = false;
  private choice: { track: string; reason: string } | null = null;
  private closed = false;

  constructor(private video: HTMLVideoElement, private on: PlayerEvents) {}

  load(opts: LoadOptions): void {
    this.live = opts.live;
    this.ms = new MediaSource();
    this.video.src = URL.createObjectURL(this.ms);
    this.ms.addEventListener('sourceopen', () => this.open(opts), { once: true });
  }

  private open(opts: LoadOptions): void {
    const ws = new WebSocket(pushURL(opts.url));
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    ws.onopen = () => ws.send(JSON.stringify({ type: 'start', at: 'live', codecs: playableCodecs(), stats: true }));
    ws.onmessage = (ev) => {
      try {
        if (typeof ev.data === 'string') this.text(JSON.parse(ev.data));
        else this.binary(parseFrame(ev.data as ArrayBuffer));
      } catch (e) {
        this.on.error((e as Error).message);
        this.destroy();
      }
    };
    ws.onclose = (ev) => {
      if (this.closed) return;
      if (ev.code === 1000 && this.ms?.readyState === 'open') {
        this.ms.endOfStream(); // the end of an on-demand asset
      } else if (ev.code !== 1000) {
        this.on.error(`WebSocket closed ${ev.code}${ev.reason ? `: ${ev.reason}` : ''}`);
      }
    };
    this.timer = window.setInterval(() => this.tick(), 250);
    if (opts.autoplay) this.video.play().catch(() => { /* autoplay policy: the page shows a play button */ });
  }

  private text(m: { type: string; [k: string]: unknown }): void {
    switch (m.type) {
      case 'ready': {
        const r = m as unknown as WsReady;
        this.ready = r;
        this.live = r.live;
        this.ast = r.availabilityStart ? Date.parse(r.availabilityStart) / 1000 : 0;
        for (const id of [r.video, r.audio]) {
          const t = r.tracks.find((x) => x.id === id);
          if (!t || !this.ms) continue;
          this.lanes.set(t.kind, new Lane(this.ms, `${t.mime}; codecs="${t.codec}"`, (e) => this.on.error(e)));
          this.current.set(t.kind, t);
        }
        this.choice = r.video ? { track: r.video, reason: `start (policy ${r.policy})` } : null;
        break;
      }
      case 'switch':
        this.choice = { track: String(m.to), reason: String(m.reason) };
        break;
      case 'skip':
        this.on.warning(`server skipped to segment ${m.segment}: ${m.reason}`);
        break;
      case 'adapt':
        if (m.track) this.choice = { track: String(m.track), reason: String(m.reason) };
        break;
    }
  }

  private binary(f: WsFrame): void {
    const t = this.ready?.tracks[f.track];
    if (!t) throw new Error(`wspush: track index ${f.track} before ready`);
    const lane = this.lanes.get(t.kind);
    if (!lane) return;
    if (f.kind === KIND_INIT) this.current.set(t.kind, t);
    lane.append(f.payload, `${t.mime}; codecs="${t.codec}"`);
    if (f.kind === KIND_CHUNK && f.end) this.on.segment(f.payload.byteLength);
  }

  private tick(): void {
    const v = this.video;
    const b = v.buffered;
    if (b.length === 0) return;
    const end = b.end(b.length - 1);
    if (!this.started) {
      // Start at the keyframe the server began with, or close to the live edge.
      v.currentTime = this.live ? Math.max(b.start(0), end - this.targetLatency) : b.start(0);
      this.started = true;
    }
    if (this.live) {
      const lat = this.latency() ?? 0;
      if (lat > this.targetLatency + 3) v.currentTime = end - this.targetLatency; // far behind: jump
      else if (lat > this.targetLatency + 0.15) v.playbackRate = 1.1;
      else if (lat < this.targetLatency - 0.15) v.playbackRate = 0.95;
      else v.playbackRate = 1;
      // Jump small gaps (a skipped segment leaves one).
      if (b.length > 1 && v.currentTime < b.start(b.length - 1) && v.readyState < 3) v.currentTime = b.start(b.length - 1);
    }
    for (const lane of this.lanes.values()) lane.trim(v.currentTime - 10);
    if (this.ws?.readyState === WebSocket.OPEN && Math.round(performance.now() / 250) % 4 === 0) {
      const ahead = end - v.currentTime;
      this.ws.send(JSON.stringify({ type: 'status', buffer: Math.max(0, ahead), latency: this.latency() ?? 0 }));
    }
  }

  /** Declared bandwidth of the video track being fed, bit/s. */
  bitrate(): number | null {
    return this.current.get('video')?.bandwidth ?? null;
  }

  /** Seconds behind the live edge: wall clock minus the wall time of the playhead. */
  latency(): number | null {
    if (!this.live || !this.ast || !this.started) return null;
    return Date.now() / 1000 - (this.ast + this.video.currentTime);
  }

  /** The track the server chose last, and why. */
  serverChoice(): { track: string; reason: string } | null {
    return this.choice;
  }

  destroy(): void {
    this.closed = true;
    window.clearInterval(this.timer);
    this.ws?.close(1000);
    this.ws = null;
    if (this.video.src.startsWith('blob:')) URL.revokeObjectURL(this.video.src);
    this.video.removeAttribute('src');
    this.video.load();
    this.ms = null;
  }
}
