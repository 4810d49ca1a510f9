import { Debug, MediaPlayer, type MediaPlayerClass } from 'dashjs';
import type { LoadOptions, PlayerAdapter, PlayerEvents } from './types';

// dash.js reports a failed clock sync as an error, then falls back to the local clock
// and plays on: show it, but do not call playback failed.
const TIME_SYNC_FAILED: number = MediaPlayer.errors?.TIME_SYNC_FAILED_ERROR_CODE ?? 16;

export class DashAdapter implements PlayerAdapter {
  readonly kind = 'dashjs' as const;
  readonly version: string;
  private player: MediaPlayerClass;
  private live = false;

  constructor(private video: HTMLVideoElement, private on: PlayerEvents) {
    this.player = MediaPlayer().create();
    this.version = `dash.js ${this.player.getVersion()}`;
    const ev = MediaPlayer.events;
    this.player.on(ev.ERROR, (e) => {
      const err = (e as { error?: { code?: number; message?: string } }).error;
      const msg = `dash.js error${err?.code != null ? ` ${err.code}` : ''}: ${err?.message ?? 'unknown'}`;
      if (err?.code === TIME_SYNC_FAILED) this.on.warning(msg);
      else this.on.error(msg);
    });
    this.player.on(ev.PLAYBACK_ERROR, (e) => {
      const err = (e as { error?: { message?: string } }).error;
      this.on.error(`dash.js playback error: ${err?.message ?? 'media error'}`);
    });
    this.player.on(ev.FRAGMENT_LOADING_COMPLETED, (e) => {
      // Init segments come through here too: every segment request counts, with its bytes.
      const bytes = e.request?.bytesLoaded || (e.response ? e.response.byteLength : 0);
      this.on.segment(bytes);
    });
  }

  load(opts: LoadOptions): void {
    this.live = opts.live;
    this.player.updateSettings({ debug: { logLevel: Debug.LOG_LEVEL_WARNING } });
    if (opts.lowLatency) {
      // Low-latency DASH: dash.js's low-latency mode starts from the MPD
      // (availabilityTimeComplete="false": segments are fetched while they grow), and
      // its ServiceDescription sets the target latency and the catch-up rates
      // (0.96–1.04). Settings would override both, so only catch-up is switched on.
      this.player.updateSettings({ streaming: { liveCatchup: { enabled: true } } });
    } else {
      // Steer back to the target delay by playing up to 10% faster or slower, as hls.js
      // does here, rather than staying as far behind as a slow start left us.
      this.player.updateSettings({ streaming: { liveCatchup: { enabled: true, playbackRate: { min: -0.1, max: 0.1 } } } });
    }
    // Without an override dash.js takes the delay the origin asks for in the MPD.
    if (opts.liveDelaySegments != null) {
      this.player.updateSettings({ streaming: { delay: { liveDelayFragmentCount: opts.liveDelaySegments } } });
    }
    this.player.initialize(this.video, opts.url, opts.autoplay);
  }

  bitrate(): number | null {
    const rep = this.player.getCurrentRepresentationForType('video');
    return rep ? rep.bandwidth : null;
  }

  latency(): number | null {
    if (!this.live) return null;
    const l = this.player.getCurrentLiveLatency();
    return Number.isFinite(l) && l > 0 ? l : null;
  }

  targetLatency(): number | null {
    if (!this.live) return null;
    const t = this.player.getTargetLiveDelay();
    return Number.isFinite(t) && t > 0 ? t : null;
  }

  destroy(): void {
    this.player.destroy();
  }
}
