// A small seam between the page and the player libraries: each adapter drives one
// library (or, for WebSocket push, our own MSE feeder) and reports what the stats panel
// needs, so the QoE recorder stays library-agnostic.

import type { AbandonCounters } from './hls-abandon';

export type PlayerKind = 'dashjs' | 'hlsjs' | 'wspush';

export const PLAYER_LABELS: Record<PlayerKind, string> = {
  dashjs: 'dash.js',
  hlsjs: 'hls.js',
  wspush: 'WebSocket push',
};

export function isPlayerKind(v: string | null): v is PlayerKind {
  return v === 'dashjs' || v === 'hlsjs' || v === 'wspush';
}

/** What an adapter tells the page while it plays. */
export interface PlayerEvents {
  /** A fatal player error: playback stopped or cannot start. */
  error(message: string): void;
  /** A recoverable problem worth showing (the player retries by itself). */
  warning(message: string): void;
  /** One media segment (or part) arrived. */
  segment(bytes: number): void;
}

export interface LoadOptions {
  url: string;
  live: boolean;
  /** Target distance from the live edge in segments; null follows the origin (the MPD's
   * ServiceDescription or suggestedPresentationDelay, the playlist's HOLD-BACK). */
  liveDelaySegments: number | null;
  autoplay: boolean;
  /** The stream's segment duration in seconds, when the catalogue says it (WebSocket
   * push needs it to start `delay` segments behind the edge). */
  segmentDurationS?: number | null;
  /** The manifest is low-latency DASH or LL-HLS (a live channel served chunk by chunk
   * as it is made): dash.js follows the origin's ServiceDescription (target latency,
   * playback rates) instead of its own catch-up settings, hls.js runs in its
   * low-latency mode (parts, blocking reloads, PART-HOLD-BACK). */
  lowLatency?: boolean;
}

/** The rendition a server-side adaptation chose last, and its reason (push only). */
export interface ServerChoice {
  /** Track ID, or '' while the server holds media back. */
  track: string;
  reason: string;
  /** The policy's capacity estimate, bit/s, when it has one. */
  estimateBps?: number;
}

/** What a push session received, counted by the client (WebSocket push only). */
export interface PushCounters {
  /** The socket's URL. */
  url: string;
  /** Adaptation policy the server runs for this session (from its ready message). */
  policy: string | null;
  /** Every message received, text and binary. */
  messages: number;
  /** Binary media messages: init segments and CMAF chunks. */
  inits: number;
  chunks: number;
  /** Payload bytes of the media messages (framing excluded). */
  bytes: number;
  /** Server messages announcing a rendition switch, a skip, and adapt reports. */
  switches: number;
  skips: number;
  adapts: number;
}

export interface PlayerAdapter {
  readonly kind: PlayerKind;
  /** Library name and version, e.g. "dash.js 5.2.1". */
  readonly version: string;
  load(opts: LoadOptions): void;
  /** Declared bandwidth of the video rendition being played, in bit/s. */
  bitrate(): number | null;
  /** Seconds behind the live edge, as the library measures it; null for VOD. */
  latency(): number | null;
  /** The latency the library steers to, in seconds; null for VOD or before it knows. */
  targetLatency(): number | null;
  /** Server-side adaptation: the track the server chose and why (push players only). */
  serverChoice?(): ServerChoice | null;
  /** Push players only: what the session received. */
  pushCounters?(): PushCounters | null;
  /** hls.js on LL-HLS only: what its emergency abandon rule did (hls-abandon.ts). */
  abandonCounters?(): AbandonCounters | null;
  destroy(): void;
}
