// A small seam between the page and the player libraries: each adapter drives one
// library and reports what the stats panel needs, so the QoE recorder stays
// library-agnostic.

export type PlayerKind = 'dashjs' | 'hlsjs';

export const PLAYER_LABELS: Record<PlayerKind, string> = {
  dashjs: 'dash.js',
  hlsjs: 'hls.js',
};

export function isPlayerKind(v: string | null): v is PlayerKind {
  return v === 'dashjs' || v === 'hlsjs';
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
  destroy(): void;
}
