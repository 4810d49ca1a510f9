package player

import (
	"math"
	"time"
)

// Low-latency live: the player starts its target latency behind the live edge (in the
// middle of a segment, which it gets chunk by chunk from the segment's start), and
// keeps that latency by playback rate, as dash.js's catch-up does: a rate above 1
// while behind the target, below 1 while ahead, bounded by the ServiceDescription's
// PlaybackRate (or the push page's rates), and never faster while the buffer is
// nearly empty. Far behind, it jumps ahead in its buffer as the browser page does.
//
// It applies to a live stream whose transport reports chunks (ChunkReporter) and that
// asks for low latency: a ServiceDescription with a target latency (LL-DASH), or a
// push transport that sends the live edge (EdgePusher: WebSocket push), where the
// target follows the browser page's rule (web/src/wspush.ts):
// max(MinPushTarget, one chunk + PushChunkMargin, the received edge's largest lag over
// the last PushEdgeWindow + PushEdgeMargin).

// The browser page's push rule (web/src/wspush.ts), kept equal so both players aim at
// the same latency.
const (
	MinPushTarget   = 500 * time.Millisecond // MIN_TARGET_LATENCY_S
	PushChunkMargin = 400 * time.Millisecond // CHUNK_MARGIN_S
	PushEdgeMargin  = 500 * time.Millisecond // EDGE_MARGIN_S
	PushEdgeWindow  = 10 * time.Second       // EDGE_WINDOW_MS
)

// Steering constants. dash.js: catch up only beyond minDrift (0.02 s); the rate is a
// sigmoid of the latency error (slope 5/s). The page's push rates: 0.95 ahead, 1.1
// behind; it never speeds up with less than 0.3 s buffered and jumps beyond 3 s.
const (
	catchUpMinDrift   = 20 * time.Millisecond
	catchUpSlope      = 5.0 // per second of error
	pushMinRate       = 0.95
	pushMaxRate       = 1.1
	catchUpLowBuffer  = 300 * time.Millisecond
	catchUpJumpBeyond = 3 * time.Second
	pushLagEvery      = 250 * time.Millisecond // TICK_MS
)

// lowLatency is the state of the latency steering.
type lowLatency struct {
	target           time.Duration
	source           string // "live-delay", "service-description", "part-hold-back", "push-rule"
	pushRule         bool   // the target follows the push page's rule
	hlsjs            bool   // hls.js's rule (target_hlsjs.go)
	minRate, maxRate float64
	chunk            time.Duration // longest chunk seen
	floor            time.Duration // where the buffers start: the playhead never goes before it
	lags             []edgeLag     // push rule: lag of the received edge, newest last
}

type edgeLag struct {
	at  time.Time
	lag time.Duration
}

// setupLowLatency decides whether the session steers its latency, and to what.
// Callers hold p.mu.
func (p *Player) setupLowLatency() {
	if !p.live || p.chunks == nil {
		return
	}
	sd := p.manifest.ServiceDescription
	push := false
	if e, ok := p.cfg.Fetcher.(EdgePusher); ok && e.PushesLiveEdge() {
		push = true
	}
	ll := &lowLatency{minRate: pushMinRate, maxRate: pushMaxRate}
	switch {
	case p.cfg.LiveDelay > 0:
		ll.target, ll.source = p.cfg.LiveDelay, "live-delay"
	case push:
		ll.target, ll.source, ll.pushRule = MinPushTarget, "push-rule", true
	case sd != nil && sd.TargetLatency > 0:
		ll.target, ll.source = sd.TargetLatency, "service-description"
		if sd.Source != "" {
			ll.source = sd.Source
		}
		ll.hlsjs = sd.CatchUp == CatchUpHLSJS
	default:
		return // not a low-latency stream: whole segments, as before
	}
	if sd != nil && !push {
		if sd.MinPlaybackRate > 0 {
			ll.minRate = sd.MinPlaybackRate
		}
		if sd.MaxPlaybackRate > 0 {
			ll.maxRate = sd.MaxPlaybackRate
		}
	}
	p.ll = ll
	p.rec.LowLatency(ll.target, ll.source)
}

// noteChunk notes the duration of a chunk that arrived at clock time now (the push
// rule keeps a margin above one chunk). Before playback starts, a target raised by it
// moves the start back, as the page places its playhead only when media is there:
// chunks as long as segments (a channel without low-latency chunks) then start a
// chunk and a margin behind the edge instead of stalling. Callers hold p.mu.
func (p *Player) noteChunk(now time.Time, chunk time.Duration) {
	ll := p.ll
	if ll == nil {
		return
	}
	ll.chunk = max(ll.chunk, chunk)
	if !ll.pushRule || p.state != stateStartup {
		return
	}
	if t := ll.chunk + PushChunkMargin; t > ll.target {
		ll.target = t
		p.rec.LowLatency(t, ll.source)
	}
	if pos := now.Add(p.clockOffset).Sub(p.manifest.AvailabilityStart) - ll.target; pos < p.playhead {
		p.playhead = max(pos, ll.floor)
	}
}

// pushTarget updates the push rule's target at clock time now, at most every
// pushLagEvery as the page's tick: the received edge (the buffered end of every
// stream, as MSE's buffered ranges of audio and video) lags the live edge by some
// amount; the largest lag over PushEdgeWindow plus a margin, one chunk plus a margin
// and MinPushTarget bound the target from below. Callers hold p.mu.
func (p *Player) pushTarget(now time.Time) {
	ll := p.ll
	if ll == nil || !ll.pushRule || len(p.streams) == 0 || (len(ll.lags) > 0 && now.Sub(ll.lags[len(ll.lags)-1].at) < pushLagEvery) {
		return
	}
	end := p.streams[0].end
	for _, s := range p.streams[1:] {
		end = min(end, s.end)
	}
	ll.lags = append(ll.lags, edgeLag{at: now, lag: now.Add(p.clockOffset).Sub(p.manifest.AvailabilityStart.Add(end))})
	for len(ll.lags) > 0 && ll.lags[0].at.Before(now.Add(-PushEdgeWindow)) {
		ll.lags = ll.lags[1:]
	}
	var lag time.Duration
	for _, l := range ll.lags {
		lag = max(lag, l.lag)
	}
	t := max(MinPushTarget, ll.chunk+PushChunkMargin, lag+PushEdgeMargin)
	if t != ll.target {
		ll.target = t
		p.rec.LowLatency(t, ll.source)
	}
}

// steer sets the playback rate for the latency at clock time now (the model is at
// now), and jumps ahead in the buffer when far behind. Callers hold p.mu.
func (p *Player) steer(now time.Time) {
	ll := p.ll
	if ll == nil || p.state != statePlaying {
		p.rate = 1
		return
	}
	if ll.hlsjs {
		p.steerHLSJS(now)
		return
	}
	p.pushTarget(now)
	lat := p.latencyAt(now)
	lvl := p.minLevel()
	errLat := lat - ll.target
	if errLat > catchUpJumpBeyond && lvl > ll.target {
		// Far behind (a long stall): skip ahead to the target, within what is buffered.
		p.seek(p.playhead + min(errLat, lvl-100*time.Millisecond))
		lat = p.latencyAt(now)
		errLat = lat - ll.target
		lvl = p.minLevel()
	}
	rate := 1.0
	if errLat > catchUpMinDrift || errLat < -catchUpMinDrift {
		cpr := ll.maxRate - 1
		if errLat < 0 {
			cpr = 1 - ll.minRate
		}
		s := 2 * cpr / (1 + math.Exp(-errLat.Seconds()*catchUpSlope))
		rate = 1 - cpr + s
	}
	if lvl < catchUpLowBuffer {
		rate = min(rate, 1)
	}
	rate = min(max(rate, ll.minRate), ll.maxRate)
	if rate != p.rate {
		p.rate = rate
		p.rec.PlaybackRate(rate)
	}
}

// seek moves the playhead forward to pos within the buffer, dropping what it skips.
// Callers hold p.mu.
func (p *Player) seek(pos time.Duration) {
	if pos <= p.playhead {
		return
	}
	for _, s := range p.streams {
		for len(s.queue) > 0 && s.queue[0].end <= pos {
			s.queue = s.queue[1:]
		}
	}
	p.playhead = pos
}

// lowLatencyStart is where a low-latency session starts: its target behind the live
// edge (the edge is now, not the end of the newest complete segment), within the DVR
// window; and the segment that holds it, which the player gets from its start.
func (p *Player) lowLatencyStart(lo time.Duration) (pos time.Duration, seg Segment, ok bool) {
	ix := p.streams[0].set.Representations[0].Index
	pos = max(p.serverNow().Sub(p.manifest.AvailabilityStart)-p.ll.target, lo)
	if p.ll.hlsjs && p.manifest.ListedEdge > 0 {
		pos = max(p.hlsjsStart(), lo)
	}
	seg, ok = ix.Next(pos)
	seg = ix.Independent(seg) // buffers start where a decoder can
	return max(pos, seg.Start), seg, ok
}

// scaleRate is the media time played in clock time d at the current rate, and
// unscaleRate its inverse.
func (p *Player) scaleRate(d time.Duration) time.Duration {
	if p.rate == 1 || p.rate <= 0 {
		return d
	}
	return time.Duration(float64(d) * p.rate)
}

func (p *Player) unscaleRate(d time.Duration) time.Duration {
	if p.rate == 1 || p.rate <= 0 {
		return d
	}
	return time.Duration(float64(d) / p.rate)
}
