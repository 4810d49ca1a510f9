package player

import (
	"time"

	"github.com/streambed/streambed/internal/media"
)

// The buffer model. Media plays in real time on the player's clock: between two
// events the playhead moves by the elapsed time unless a buffer runs dry, and the
// instant it runs dry is computed, not polled. So a stall starts exactly when the
// buffer empties, even if the player learns it only when the next download completes,
// and a simulated clock gives exact, repeatable numbers.

// playState is where playback is.
type playState int

const (
	stateStartup playState = iota // waiting for the start-up threshold
	statePlaying
	stateStalled // ran dry after start-up; waiting for the resume threshold
	stateEnded
)

func (s playState) String() string {
	return [...]string{"startup", "playing", "stalled", "ended"}[s]
}

// bufSeg is a downloaded segment not yet played through.
type bufSeg struct {
	start, end time.Duration
	rep        *Representation
}

// stream is the player's view of one adaptation set: what is buffered, what comes next.
type stream struct {
	kind    media.Kind
	set     *AdaptationSet
	primary bool // video, or the first set when there is no video: bitrate and switches are its

	current int           // index of the last requested representation; -1 before the first
	end     time.Duration // buffered end: where the next segment starts
	queue   []bufSeg
	inited  map[string]bool // representation IDs whose init segment was fetched
	done    bool            // no more segments (end of an on-demand presentation)

	// Scheduling: this stream's own schedule controller, as in dash.js. Only the
	// scheduler goroutine reads and writes these (see schedule.go).
	op       *op       // the request in flight for this stream; at most one
	chosen   string    // ID of the representation the ABR rule chose last (WithPlaying)
	next     *plan     // the segment chosen and not yet in the buffer
	wakeAt   time.Time // plan nothing before then (zero: now)
	onEvent  bool      // plan nothing before a download completes (full buffer while stalled)
	onReload bool      // plan nothing before the manifest reload in flight completes
	errRun   int       // consecutive failed requests
	chunked  bool      // s.end is inside the segment of s.next: its first chunks are in
}

func (s *stream) level(playhead time.Duration) time.Duration {
	return max(s.end-playhead, 0)
}

// minLevel is the buffer level that governs playback: the lowest of the streams that
// still fetch. A stream with nothing more to fetch (audio a little shorter than video
// at the end of an on-demand presentation) does not hold playback up; once every
// stream is complete, playback runs to the end of the longest.
func (p *Player) minLevel() time.Duration {
	all := p.allDone()
	lvl := time.Duration(-1)
	for _, s := range p.streams {
		l := s.level(p.playhead)
		switch {
		case all:
			lvl = max(lvl, l)
		case s.done:
		case lvl < 0 || l < lvl:
			lvl = l
		}
	}
	return max(lvl, 0)
}

func (p *Player) allDone() bool {
	for _, s := range p.streams {
		if !s.done {
			return false
		}
	}
	return true
}

// advance moves the model to clock time t, taking samples on the grid on the way.
// Callers hold p.mu.
func (p *Player) advance(t time.Time) {
	for !p.nextSample.After(t) {
		p.step(p.nextSample)
		p.takeSample(p.nextSample)
		p.nextSample = p.nextSample.Add(p.cfg.SampleInterval)
	}
	p.step(t)
}

// step plays from p.last to t.
func (p *Player) step(t time.Time) {
	dt := t.Sub(p.last)
	if dt <= 0 {
		return
	}
	if p.state == statePlaying {
		lvl := p.minLevel()
		adv := p.scaleRate(dt) // media time played: dt at rate 1
		// Exactly running dry as new media arrives is not a stall; it is the end when
		// nothing more will arrive.
		if adv < lvl || (adv == lvl && !p.allDone()) {
			p.play(adv, p.last)
		} else {
			p.play(lvl, p.last)
			dry := p.last.Add(p.unscaleRate(lvl))
			if p.allDone() {
				p.state = stateEnded
				p.endedAt = dry
			} else {
				p.state = stateStalled
				p.rec.StallStarted(dry)
			}
		}
	}
	p.last = t
}

// play advances the playhead by d starting at clock time from, and credits what was
// played to its renditions.
func (p *Player) play(d time.Duration, from time.Time) {
	if d <= 0 {
		return
	}
	p0, p1 := p.playhead, p.playhead+d
	for _, s := range p.streams {
		for len(s.queue) > 0 {
			b := s.queue[0]
			a, e := max(b.start, p0), min(b.end, p1)
			if e > a {
				p.rec.Played(from.Add(p.unscaleRate(e-p0)), b.rep.ID, b.rep.Bandwidth, e-a, s.primary)
				if s.primary {
					p.playingRep = b.rep
				}
			}
			if b.end > p1 {
				break
			}
			s.queue = s.queue[1:]
		}
	}
	p.playhead = p1
}

// appended updates the state after new media arrived at clock time t.
func (p *Player) appended(t time.Time) {
	lvl := p.minLevel()
	switch p.state {
	case stateStartup:
		if lvl >= p.startThreshold || (p.allDone() && lvl > 0) {
			p.state = statePlaying
			p.rec.Started(t)
		}
	case stateStalled:
		if lvl >= p.resumeThreshold || (p.allDone() && lvl > 0) {
			p.state = statePlaying
			p.rec.StallEnded(t)
		}
	}
}

// takeSample records one time-series point at t (the model is at t).
func (p *Player) takeSample(t time.Time) {
	bps := 0
	if p.state == statePlaying && p.playingRep != nil {
		bps = p.playingRep.Bandwidth
	}
	var lat *time.Duration
	if p.live && p.state == statePlaying {
		l := p.latencyAt(t)
		lat = &l
		p.rec.Latency(l)
	}
	p.rec.Sample(t, p.minLevel(), bps, p.state.String(), lat)
}

// latencyAt is the live latency at clock time t: synchronised wall time minus the
// wall time of the playhead.
func (p *Player) latencyAt(t time.Time) time.Duration {
	return t.Add(p.clockOffset).Sub(p.manifest.AvailabilityStart.Add(p.playhead))
}
