package player

import (
	"math"
	"time"
)

// hls.js 1.7's latency rule in low-latency mode (src/controller/latency-controller.ts),
// which the player follows for LL-HLS so that `play` reads what hls.js shows:
//
//   - its live edge is the end of the newest part listed plus the time since that
//     playlist was loaded (estimateLiveEdge), and it starts PART-HOLD-BACK behind it,
//     but at least one part behind the listed end (liveSyncPosition);
//   - it never plays slower than real time, and plays faster only while more than
//     0.05 s behind its target, less than a target duration beyond it, and with more
//     than a second buffered: rate = round(20 · 2/(1+e^(−0.75·d − stalled)))/20,
//     between 1 and maxLiveSyncPlaybackRate (the page's 1.1). With a target of 0.6 s
//     a second of buffer is rare, so the latency mostly stays where it started.

// hlsjsMinBuffer is the forward buffer hls.js wants before it speeds up.
const hlsjsMinBuffer = time.Second

// hlsjsEdge is hls.js's estimate of the live edge now. Callers hold p.mu.
func (p *Player) hlsjsEdge() time.Duration {
	return p.manifest.ListedEdge + p.clock.Now().Sub(p.lastLoad)
}

// hlsjsStart is hls.js's start position (liveSyncPosition). Callers hold p.mu.
func (p *Player) hlsjsStart() time.Duration {
	return min(p.hlsjsEdge()-p.ll.target, p.manifest.ListedEdge-p.manifest.PartTarget)
}

// steerHLSJS sets the playback rate by hls.js's rule. Callers hold p.mu.
func (p *Player) steerHLSJS(now time.Time) {
	ll := p.ll
	d := p.manifest.ListedEdge + now.Sub(p.lastLoad) - p.playhead - ll.target // its own latency
	// edgeStalled: how much longer than three parts ago the playlist last advanced.
	stalled := max(now.Sub(p.lastLoad)-3*p.manifest.PartTarget, 0)
	rate := 1.0
	if d > 50*time.Millisecond && d < ll.target+p.manifest.MaxSegmentDuration && p.minLevel() > hlsjsMinBuffer {
		r := math.Round(2/(1+math.Exp(-0.75*d.Seconds()-stalled.Seconds()))*20) / 20
		rate = min(max(r, 1), ll.maxRate)
	}
	if rate != p.rate {
		p.rate = rate
		p.rec.PlaybackRate(rate)
	}
}
