// hls.js's emergency abandon rule, kept from judging an LL-HLS part by its first packet.
//
// hls.js's AbrController checks a loading fragment or part every 100 ms from half its
// duration on (`_abandonRulesCheck`): it extrapolates the rest of the load from the
// bytes the loader has reported, and if that outlasts the buffer it abandons the load
// and drops to a low rendition. For 200 ms LL-HLS parts over HTTP/1.1 the check at
// 100 ms sees one XHR progress event that carries only the first packet (a median 3 %
// of the part on a 50 ms RTT, 1 % loss link; Chromium reports progress again ~50 ms
// later), so it abandons parts that are nearly in: 40–80 switches a minute, an HTTP/1.1
// connection closed by each abort, stalls, and hls.js's target latency raised from
// 0.6 s to 2.6 s. Measured in docs/results/latency.md ("LL-HLS on the lossy link:
// where the time goes"; the fix's runs at the end of that page).
//
// The subclass below leaves the rule as hls.js has it, but does not let it judge a
// part until the part has loaded for longer than its own duration (it is late by then,
// whatever the reports say) or the loader has reported at least PART_MIN_SHARE of its
// bytes (enough to extrapolate from). Whole segments are judged as hls.js does.
// ?hlsabandon=hlsjs turns it off (hls.js's own controller), for the lab's A/B runs.

import Hls, { type Fragment, type Level, type LoaderStats, type Part } from 'hls.js';

/** 'part': the guard below (the page's default); 'hlsjs': hls.js's rule unchanged. */
export type AbandonMode = 'part' | 'hlsjs';

export function abandonMode(param: string | null): AbandonMode {
  return param === 'hlsjs' ? 'hlsjs' : 'part';
}

/** Share of a part's bytes the loader must have reported before hls.js may judge the
 * part by them while the part is still within its own duration. */
export const PART_MIN_SHARE = 0.5;

/** What the page saw of hls.js's abandon rule in one playback (stats.hlsAbandon). */
export interface AbandonCounters {
  mode: AbandonMode;
  /** The guard is in hls.js's controller (false in 'hlsjs' mode, or if this hls.js no
   * longer has the rule as a replaceable field: then its rule runs unchanged). */
  installed: boolean;
  /** Checks of a loading part that hls.js's rule would have judged (past its own
   * half-duration wait) but the guard held back. */
  held: number;
  /** Checks of a loading part passed on to hls.js's rule. */
  judged: number;
  /** hls.js's decisions to abandon a load and switch down (FRAG_LOAD_EMERGENCY_ABORTED). */
  emergencyAborts: number;
  /** Of those, parts abandoned within their duration with less than PART_MIN_SHARE of
   * their bytes reported: judged from a first-packet sample. */
  earlyAborts: number;
}

export function newAbandonCounters(mode: AbandonMode): AbandonCounters {
  return { mode, installed: false, held: 0, judged: 0, emergencyAborts: 0, earlyAborts: 0 };
}

/** Whether a part's load may be judged: it has lasted longer than the part's duration
 * (at this playback rate), or PART_MIN_SHARE of its bytes are reported. expectedBytes
 * is the part's size if known (Content-Length), else hls.js's own estimate. */
export function partJudgeable(timeLoadingMs: number, durationS: number, playbackRate: number, loaded: number, expectedBytes: number): boolean {
  const rate = Math.abs(playbackRate) || 1;
  if (timeLoadingMs > (1000 * durationS) / rate) return true;
  return expectedBytes > 0 && loaded >= PART_MIN_SHARE * expectedBytes;
}

// The parts of hls.js's AbrController the guard reads. They are private in its types,
// so they are named here; if a later hls.js renames them, the guard is not installed.
interface AbrInternals {
  _abandonRulesCheck: ((levelLoaded?: Level) => void) | null;
  fragCurrent: Fragment | null;
  partCurrent: Part | null;
  bwEstimator: { getEstimateTTFB(): number };
  hls: Hls | null;
}

/** The part's size: Content-Length when the loader knows it, else what hls.js assumes
 * (the part's duration at the fragment's or rendition's bitrate). */
function expectedBytes(hls: Hls, frag: Fragment, part: Part, stats: LoaderStats): number {
  if (stats.total > 0) return stats.total;
  const level = hls.levels[frag.level];
  const bitrate = frag.bitrate || level?.averageBitrate || level?.bitrate || 0;
  return Math.round((part.duration * bitrate) / 8);
}

/** A part's load judged early: within its duration, under PART_MIN_SHARE reported. */
export function judgedEarly(hls: Hls, frag: Fragment, part: Part | null, stats: LoaderStats): boolean {
  if (!part) return false;
  const rate = hls.media?.playbackRate ?? 1;
  return !partJudgeable(performance.now() - stats.loading.start, part.duration, rate, stats.loaded, expectedBytes(hls, frag, part, stats));
}

/** True when the rule must not judge the part loading now (counted as held when
 * hls.js itself would have judged it). */
function holdPart(abr: AbrInternals, counters: AbandonCounters): boolean {
  const { fragCurrent: frag, partCurrent: part, hls } = abr;
  const media = hls?.media;
  if (!hls || !frag || !part || !media) return false; // a whole segment, or nothing: hls.js's rule
  if (!hls.autoLevelEnabled || frag.level <= hls.minAutoLevel) return false; // hls.js judges nothing here
  const stats = part.stats;
  if (stats.aborted || (stats.loaded && stats.loaded === stats.total)) return false; // hls.js stops its timer
  const timeLoading = performance.now() - stats.loading.start;
  const rate = Math.abs(media.playbackRate) || 1;
  if (partJudgeable(timeLoading, part.duration, rate, stats.loaded, expectedBytes(hls, frag, part, stats))) return false;
  // hls.js's own wait: half the part's duration, or its time-to-first-byte estimate.
  if (timeLoading > Math.max(abr.bwEstimator.getEstimateTTFB(), (1000 * part.duration) / (rate * 2))) counters.held++;
  return true;
}

/** hls.js's AbrController with the part guard, counting into counters. */
export function partAwareAbrController(counters: AbandonCounters): typeof Hls.DefaultConfig.abrController {
  const Base = Hls.DefaultConfig.abrController;
  return class PartAwareAbrController extends Base {
    constructor(hls: Hls) {
      super(hls);
      // hls.js 1.7 defines _abandonRulesCheck as an arrow-function class field, set in
      // its constructor (and handed to setInterval on every FRAG_LOADING), not as a
      // prototype method: an override on the prototype would never run. So the field
      // is wrapped here, after super() has set it.
      const self = this as unknown as AbrInternals;
      const rule = self._abandonRulesCheck;
      if (typeof rule !== 'function') return;
      self._abandonRulesCheck = (levelLoaded?: Level) => {
        if (holdPart(self, counters)) return;
        const { hls: h, fragCurrent: frag, partCurrent: part } = self;
        if (h && frag && part && h.autoLevelEnabled && frag.level > h.minAutoLevel) counters.judged++;
        rule(levelLoaded);
      };
      counters.installed = true;
    }
  };
}
