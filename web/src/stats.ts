// The QoE recorder: watches the <video> element and the player adapter and keeps the
// numbers the stats panel, the chart and the tests read. Start-up is measured from
// load() to the first 'playing'. After that, a stall is a wait for data ('waiting'
// while not seeking) that lasts STALL_MIN_MS or longer; shorter waits, such as the
// media element pausing for a fraction of a millisecond at a gap it then crosses,
// are counted apart as short waits, since no viewer sees them.

import type { PlayerAdapter, PlayerKind, PushCounters } from './players';
import type { AbandonCounters } from './players/hls-abandon';

/** A wait for data shorter than this is not a stall: about 2–3 frames at 25 fps. */
export const STALL_MIN_MS = 100;

/** One wait for data after start-up: where and for how long. */
export interface Wait {
  /** Media time (s) at which playback waited. */
  at: number;
  ms: number;
}

export interface Stats {
  player: PlayerKind | null;
  stream: string | null;
  live: boolean;
  /** Milliseconds from load to the first 'playing'; null until then. */
  startupMs: number | null;
  /** Seconds buffered ahead of the playhead. */
  bufferS: number;
  /** Declared bandwidth of the video rendition playing, bit/s. */
  bitrateBps: number | null;
  width: number;
  height: number;
  /** Stalls after start-up: count and total time, including one in progress. */
  stalls: number;
  stallMs: number;
  /** Waits shorter than STALL_MIN_MS (not stalls). */
  shortWaits: number;
  /** The last few waits (stalls and short ones), oldest first. */
  waits: Wait[];
  /** Seconds behind the live edge (live only). */
  latencyS: number | null;
  /** The latency the player steers to (live only). */
  targetLatencyS: number | null;
  /** Media segment requests completed and their bytes. */
  requests: number;
  bytes: number;
  droppedFrames: number;
  totalFrames: number;
  currentTime: number;
  /** Playing now: started, not paused, not stalled, not ended. */
  playing: boolean;
  /** The fatal player error, if any. */
  error: string | null;
  warnings: number;
  lastWarning: string | null;
  /** WebSocket push only (else null): the track the server chose last ('' while it
   * holds media back), why, and its capacity estimate in bit/s when it has one. */
  serverTrack: string | null;
  serverReason: string | null;
  serverEstimateBps: number | null;
  /** WebSocket push only (else null): what the session received, counted per message. */
  push: PushCounters | null;
  /** hls.js on LL-HLS only (else null): its emergency abandon rule and the page's part
   * guard (players/hls-abandon.ts): the mode, checks held and judged, aborts. */
  hlsAbandon: AbandonCounters | null;
}

export function emptyStats(): Stats {
  return {
    player: null, stream: null, live: false, startupMs: null, bufferS: 0, bitrateBps: null,
    width: 0, height: 0, stalls: 0, stallMs: 0, shortWaits: 0, waits: [], latencyS: null,
    targetLatencyS: null, requests: 0, bytes: 0, droppedFrames: 0, totalFrames: 0,
    currentTime: 0, playing: false, error: null, warnings: 0, lastWarning: null,
    serverTrack: null, serverReason: null, serverEstimateBps: null, push: null,
    hlsAbandon: null,
  };
}

/** Seconds of media buffered ahead of time t in the element's buffered ranges. */
export function bufferAhead(buffered: TimeRanges, t: number): number {
  // Small gaps between ranges are jumped by the players; treat 0.1 s as contiguous.
  const gap = 0.1;
  let end = -1;
  for (let i = 0; i < buffered.length; i++) {
    const s = buffered.start(i);
    const e = buffered.end(i);
    if (end < 0) {
      if (t >= s - gap && t <= e) end = e;
    } else if (s - end <= gap) {
      end = Math.max(end, e);
    }
  }
  return end < 0 ? 0 : Math.max(0, end - t);
}

export class QoeRecorder {
  private readonly t0 = performance.now();
  private startupMs: number | null = null;
  private waitStart: number | null = null;
  private waitAt = 0;
  private stalls = 0;
  private stallMsDone = 0;
  private shortWaits = 0;
  private waits: Wait[] = [];
  private requests = 0;
  private bytes = 0;
  private error: string | null = null;
  private warnings = 0;
  private lastWarning: string | null = null;
  private readonly off: Array<() => void> = [];

  constructor(
    private readonly video: HTMLVideoElement,
    private readonly adapter: PlayerAdapter,
    private readonly stream: string,
    private readonly live: boolean,
  ) {
    this.listen('playing', () => this.onPlaying());
    this.listen('waiting', () => this.onWaiting());
    // A wait ends when time moves again; 'playing' usually says so, but not always.
    this.listen('timeupdate', () => {
      if (this.waitStart != null && this.video.readyState >= 3 && !this.video.paused) this.endWait();
    });
    this.listen('pause', () => this.endWait());
    this.listen('seeking', () => this.endWait());
    this.listen('ended', () => this.endWait());
    this.listen('error', () => {
      const e = this.video.error;
      if (e) this.setError(`media error ${e.code}: ${e.message || 'decode or source failure'}`);
    });
  }

  private listen(type: string, fn: () => void): void {
    this.video.addEventListener(type, fn);
    this.off.push(() => this.video.removeEventListener(type, fn));
  }

  private onPlaying(): void {
    if (this.startupMs == null) this.startupMs = performance.now() - this.t0;
    this.endWait();
  }

  private onWaiting(): void {
    const v = this.video;
    if (this.startupMs == null || v.seeking || v.paused || v.ended || this.waitStart != null) return;
    this.waitStart = performance.now();
    this.waitAt = v.currentTime;
  }

  private endWait(): void {
    if (this.waitStart == null) return;
    const ms = performance.now() - this.waitStart;
    this.waitStart = null;
    if (ms >= STALL_MIN_MS) {
      this.stalls++;
      this.stallMsDone += ms;
    } else {
      this.shortWaits++;
    }
    this.waits.push({ at: this.waitAt, ms: Math.round(ms * 10) / 10 });
    if (this.waits.length > 20) this.waits.shift();
  }

  /** Milliseconds of the stall in progress, or 0 (a wait not yet STALL_MIN_MS long is none). */
  private stallInProgressMs(): number {
    if (this.waitStart == null) return 0;
    const ms = performance.now() - this.waitStart;
    return ms >= STALL_MIN_MS ? ms : 0;
  }

  segment(bytes: number): void {
    this.requests++;
    this.bytes += bytes;
  }

  setError(message: string): void {
    if (this.error == null) this.error = message;
  }

  warn(message: string): void {
    this.warnings++;
    this.lastWarning = message;
  }

  get currentError(): string | null {
    return this.error;
  }

  snapshot(): Stats {
    const v = this.video;
    const q = typeof v.getVideoPlaybackQuality === 'function' ? v.getVideoPlaybackQuality() : null;
    const stallMs = this.stallInProgressMs();
    const stalled = stallMs > 0;
    const choice = this.adapter.serverChoice?.() ?? null;
    return {
      player: this.adapter.kind,
      stream: this.stream,
      live: this.live,
      startupMs: this.startupMs,
      bufferS: bufferAhead(v.buffered, v.currentTime),
      bitrateBps: this.adapter.bitrate(),
      width: v.videoWidth,
      height: v.videoHeight,
      stalls: this.stalls + (stalled ? 1 : 0),
      stallMs: this.stallMsDone + stallMs,
      shortWaits: this.shortWaits,
      waits: [...this.waits],
      latencyS: this.adapter.latency(),
      targetLatencyS: this.adapter.targetLatency(),
      requests: this.requests,
      bytes: this.bytes,
      droppedFrames: q ? q.droppedVideoFrames : 0,
      totalFrames: q ? q.totalVideoFrames : 0,
      currentTime: v.currentTime,
      playing: this.startupMs != null && !stalled && !v.paused && !v.ended && this.error == null,
      error: this.error,
      warnings: this.warnings,
      lastWarning: this.lastWarning,
      serverTrack: choice ? choice.track : null,
      serverReason: choice ? choice.reason : null,
      serverEstimateBps: choice?.estimateBps ?? null,
      push: this.adapter.pushCounters?.() ?? null,
      hlsAbandon: this.adapter.abandonCounters?.() ?? null,
    };
  }

  dispose(): void {
    this.endWait();
    for (const f of this.off) f();
    this.off.length = 0;
  }
}
