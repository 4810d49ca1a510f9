import Hls, { type ErrorData } from 'hls.js';
import { abandonMode, type AbandonCounters, judgedEarly, newAbandonCounters, partAwareAbrController } from './hls-abandon';
import type { LoadOptions, PlayerAdapter, PlayerEvents } from './types';

// hls.js follows a playlist's EXT-X-SERVER-CONTROL HOLD-BACK unless the page passes a
// delay of its own. Where a playlist has none, hls.js's default is 3 target durations;
// ours is 2, which is what the origin's MPDs suggest for dash.js. Set as a default (not
// per player) so that HOLD-BACK still wins.
Hls.DefaultConfig = { ...Hls.DefaultConfig, liveSyncDurationCount: 2 };

export class HlsAdapter implements PlayerAdapter {
  readonly kind = 'hlsjs' as const;
  readonly version = `hls.js ${Hls.version}`;
  private hls: Hls | null = null;
  private live = false;
  private recoveredMedia = false;
  private abandon: AbandonCounters | null = null;

  constructor(private video: HTMLVideoElement, private on: PlayerEvents) {}

  load(opts: LoadOptions): void {
    if (!Hls.isSupported()) {
      this.on.error('hls.js: this browser has no Media Source Extensions');
      return;
    }
    this.live = opts.live;
    // LL-HLS: hls.js's emergency abandon rule must not judge a 200 ms part by its first
    // packet (hls-abandon.ts; measured in docs/results/latency.md). ?hlsabandon=hlsjs
    // keeps hls.js's own controller.
    const abandon = opts.lowLatency ? newAbandonCounters(abandonMode(abandonParam())) : null;
    this.abandon = abandon;
    const hls = new Hls({
      ...(abandon?.mode === 'part' ? { abrController: partAwareAbrController(abandon) } : {}),
      ...(opts.liveDelaySegments != null ? { liveSyncDurationCount: opts.liveDelaySegments } : {}),
      // LL-HLS: parts, blocking playlist reloads and the playlist's PART-HOLD-BACK as
      // the target latency (hls.js's default, said here so it does not depend on one).
      // A plain playlist has no parts, so the mode changes nothing there.
      ...(opts.lowLatency ? { lowLatencyMode: true } : {}),
      // Drift back to the target latency by playing up to 10% faster, as dash.js does
      // in its catch-up mode, instead of staying as far behind as start-up left us.
      maxLiveSyncPlaybackRate: 1.1,
      // fMP4 needs no transmuxing, so no worker is needed (the ESM build has none inline).
      enableWorker: false,
      // ?hlsdebug=abr: hls.js's rendition decisions (its ABR and level controllers'
      // log lines, nothing else) on the console as `hlsabr: …`, for the lab client to
      // read beside its request timings (docs/results/latency.md).
      ...(abrDebug() ? { debug: abrLogger() } : {}),
      // ?hlsprogressive=1: hls.js's documented `progressive` setting (its fetch loader,
      // which reports a response's bytes as they are read, not XHR's progress events
      // ~50 ms apart). A lab arm of docs/results/latency.md, not the page's default.
      ...(progressiveParam() ? { progressive: true } : {}),
    });
    this.hls = hls;
    hls.on(Hls.Events.FRAG_LOADED, (_e, data) => {
      this.on.segment(data.frag.stats.loaded || data.payload?.byteLength || 0);
    });
    hls.on(Hls.Events.ERROR, (_e, data: ErrorData) => this.onError(data));
    if (abandon) {
      hls.on(Hls.Events.FRAG_LOAD_EMERGENCY_ABORTED, (_e, data) => {
        abandon.emergencyAborts++;
        if (judgedEarly(hls, data.frag, data.part, data.stats)) abandon.earlyAborts++;
      });
    }
    if (opts.autoplay) {
      hls.once(Hls.Events.MANIFEST_PARSED, () => {
        this.video.play().catch((err: Error) => {
          this.on.warning(`autoplay refused: ${err.message}`);
        });
      });
    }
    hls.attachMedia(this.video);
    hls.loadSource(opts.url);
  }

  private onError(data: ErrorData): void {
    const msg = `hls.js ${data.type}: ${data.details}${data.error?.message ? ` — ${data.error.message}` : ''}`;
    if (!data.fatal) {
      this.on.warning(msg);
      return;
    }
    // One recovery attempt for a decode error, as hls.js recommends; then give up.
    if (data.type === Hls.ErrorTypes.MEDIA_ERROR && !this.recoveredMedia && this.hls) {
      this.recoveredMedia = true;
      this.on.warning(`${msg} (recovering)`);
      this.hls.recoverMediaError();
      return;
    }
    this.on.error(msg);
  }

  bitrate(): number | null {
    const hls = this.hls;
    if (!hls) return null;
    const level = hls.levels[hls.currentLevel];
    return level ? level.bitrate : null;
  }

  latency(): number | null {
    if (!this.live || !this.hls) return null;
    const l = this.hls.latency;
    return Number.isFinite(l) && l > 0 ? l : null;
  }

  targetLatency(): number | null {
    if (!this.live || !this.hls) return null;
    const t = this.hls.targetLatency;
    return t != null && Number.isFinite(t) && t > 0 ? t : null;
  }

  abandonCounters(): AbandonCounters | null {
    return this.abandon ? { ...this.abandon } : null;
  }

  destroy(): void {
    this.hls?.destroy();
    this.hls = null;
  }
}

function abandonParam(): string | null {
  return new URLSearchParams(window.location.search).get('hlsabandon');
}

function progressiveParam(): boolean {
  return new URLSearchParams(window.location.search).get('hlsprogressive') === '1';
}

function abrDebug(): boolean {
  return new URLSearchParams(window.location.search).get('hlsdebug') === 'abr';
}

/** An hls.js logger that passes on only what its ABR, level and latency controllers
 * say (the decisions to switch renditions, abandon a load or raise the target). */
function abrLogger() {
  const keep = (...args: unknown[]) => {
    const line = args.map(String).join(' ');
    if (/abr|level-controller|latency-controller|switch/i.test(line)) console.info(`hlsabr: ${line}`);
  };
  const none = () => {};
  return { trace: none, debug: keep, log: keep, info: keep, warn: keep, error: keep };
}
