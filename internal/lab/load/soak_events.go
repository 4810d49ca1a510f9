package load

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Every stall, skip and error of a healthy viewer is kept as an event with its time,
// so that it can be laid beside what else happened at that moment: the origin's CPU
// throttling, its garbage collections, the machine's load, and the load generator's
// own lateness. A viewer process that is itself starved of CPU sees gaps the origin
// did not cause; such a stall is classified "viewer starved" (and still counted and
// reported), never silently dropped.

// SoakEvent is one stall, skip or error of a healthy viewer, or one failed scrape of
// the origin's /metrics.
type SoakEvent struct {
	T     float64 `json:"t_s"` // since the first join: when it ended (a stall) or happened
	Kind  string  `json:"kind"`
	Event string  `json:"event"` // stall, skip, error, metrics
	// A stall's gap between two new segments (or from the last one to the session's
	// end); an error's or failed scrape's duration of the request that failed.
	GapS  float64 `json:"gap_s,omitempty"`
	Stage string  `json:"stage,omitempty"` // what failed: upgrade, read, init, segment, playlist, scrape
	Err   string  `json:"err,omitempty"`
	// The load generator's own scheduling lag over the gap (stall) or over the request
	// (error): the sum of the overshoots of a 50 ms sleep, and the largest one.
	ViewerLagMs    float64 `json:"viewer_lag_ms"`
	ViewerMaxLagMs float64 `json:"viewer_max_lag_ms"`
	// Cause of a stall: "viewer starved" when the load generator's own lateness during
	// the gap covers the part of the gap beyond the stall threshold (without it the
	// gap would not have been a stall), else "origin or network". Of an error:
	// "viewer starved" when that lateness is at least half of the failed request's
	// time (a client that did not run for seconds times out by its own clock).
	Cause string `json:"cause,omitempty"`
}

// Causes of a stall.
const (
	CauseViewerStarved = "viewer starved"
	CauseOrigin        = "origin or network"
)

// maxEvents bounds the event log of a long run; counts stay exact beyond it.
const maxEvents = 50000

// eventLog collects a run's events.
type eventLog struct {
	begin   time.Time
	lag     *lagMonitor
	after   time.Duration // the stall threshold
	dials   atomic.Int64  // connections the viewers opened (the timeline shows them per second)
	mu      sync.Mutex
	events  []SoakEvent
	dropped int
}

func newEventLog(begin time.Time, lag *lagMonitor, after time.Duration) *eventLog {
	return &eventLog{begin: begin, lag: lag, after: after}
}

// stall records a gap from..to between new segments and returns its cause.
func (l *eventLog) stall(kind string, from, to time.Time) string {
	sum, mx := l.lag.during(from, to)
	cause := CauseOrigin
	if gap := to.Sub(from); sum >= gap-l.after {
		cause = CauseViewerStarved
	}
	l.add(SoakEvent{T: to.Sub(l.begin).Seconds(), Kind: kind, Event: "stall", GapS: round(to.Sub(from).Seconds()),
		ViewerLagMs: ms(sum), ViewerMaxLagMs: ms(mx), Cause: cause})
	return cause
}

// fail records an error of a request that began at from.
func (l *eventLog) fail(kind, stage string, from time.Time, err error) {
	now := time.Now()
	sum, mx := l.lag.during(from, now)
	cause := CauseOrigin
	if took := now.Sub(from); took > 0 && sum >= took/2 {
		cause = CauseViewerStarved
	}
	l.add(SoakEvent{T: now.Sub(l.begin).Seconds(), Kind: kind, Event: "error", Stage: stage, GapS: round(now.Sub(from).Seconds()),
		Err: eventErr(err), ViewerLagMs: ms(sum), ViewerMaxLagMs: ms(mx), Cause: cause})
}

// eventErr is an error's whole text (URL, cause, connection), capped.
func eventErr(err error) string {
	s := err.Error()
	if len(s) > 400 {
		s = s[:400]
	}
	return s
}

// skip records a skip.
func (l *eventLog) skip(kind, stage string) {
	l.add(SoakEvent{T: time.Since(l.begin).Seconds(), Kind: kind, Event: "skip", Stage: stage})
}

// scrapeFailed records a /metrics scrape that failed after d.
func (l *eventLog) scrapeFailed(from time.Time, err error) {
	sum, mx := l.lag.during(from, time.Now())
	l.add(SoakEvent{T: time.Since(l.begin).Seconds(), Kind: "sampler", Event: "metrics", Stage: "scrape",
		GapS: round(time.Since(from).Seconds()), Err: eventErr(err), ViewerLagMs: ms(sum), ViewerMaxLagMs: ms(mx)})
}

func (l *eventLog) add(e SoakEvent) {
	e.T = round(e.T)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.events) >= maxEvents {
		l.dropped++
		return
	}
	l.events = append(l.events, e)
}

func (l *eventLog) all() ([]SoakEvent, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]SoakEvent(nil), l.events...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].T < out[j].T })
	return out, l.dropped
}

func ms(d time.Duration) float64 { return round(float64(d) / float64(time.Millisecond)) }

// lagMonitor measures the load generator's own scheduling lag: a goroutine sleeps
// 50 ms again and again and keeps how much later than asked it woke. A process
// starved of CPU (by the machine's other work, or by its own thousands of viewers)
// wakes late; its viewers are then late by as much, whatever the origin does.
type lagMonitor struct {
	begin time.Time
	tick  time.Duration
	mu    sync.Mutex
	at    []int64   // wake-up, ns since begin
	lag   []float32 // its overshoot, ms
	stop  chan struct{}
	done  chan struct{}
}

func startLagMonitor(begin time.Time, tick time.Duration) *lagMonitor {
	m := &lagMonitor{begin: begin, tick: tick, stop: make(chan struct{}), done: make(chan struct{})}
	go m.run()
	return m
}

func (m *lagMonitor) run() {
	defer close(m.done)
	for {
		// The lateness is measured with the clock read after waking, not with a
		// timer's channel value (the moment the timer fired, which can precede the
		// moment this goroutine got a processor to run on).
		t0 := time.Now()
		select {
		case <-m.stop:
			return
		case <-time.After(m.tick):
		}
		now := time.Now()
		over := max(now.Sub(t0)-m.tick, 0)
		m.mu.Lock()
		m.at = append(m.at, int64(now.Sub(m.begin)))
		m.lag = append(m.lag, float32(over.Seconds()*1000))
		m.mu.Unlock()
	}
}

func (m *lagMonitor) close() {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
}

// during is the sum and the largest of the overshoots of the wake-ups that fell in
// from..to, plus that of the first wake-up after to (it was late during the window).
func (m *lagMonitor) during(from, to time.Time) (sum, biggest time.Duration) {
	if m == nil {
		return 0, 0
	}
	a, b := int64(from.Sub(m.begin)), int64(to.Sub(m.begin))
	m.mu.Lock()
	defer m.mu.Unlock()
	i := sort.Search(len(m.at), func(i int) bool { return m.at[i] >= a })
	var s, mx float64
	for ; i < len(m.at); i++ {
		l := float64(m.lag[i])
		if m.at[i] > b {
			// The wake-up that ends the window: only the part of its lateness inside.
			l = min(l, float64(b-(m.at[i]-int64(l*1e6)))/1e6)
			if l > 0 {
				s += l
				mx = max(mx, l)
			}
			break
		}
		s += l
		mx = max(mx, l)
	}
	return time.Duration(s * 1e6), time.Duration(mx * 1e6)
}

// perSecond is the largest and the summed lag in each whole second since begin.
func (m *lagMonitor) perSecond(sec int) (maxMs, sumMs float64) {
	s, mx := m.during(m.begin.Add(time.Duration(sec)*time.Second), m.begin.Add(time.Duration(sec+1)*time.Second))
	return ms(mx), ms(s)
}
