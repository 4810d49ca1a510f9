package pars

import (
	"sync"
	"sync/atomic"
	"time"
)

// meter records when the bytes of one segment download arrived on each connection,
// so that the throughput "after slow start" can be measured.
//
// Each connection is measured over its own window, from a few round trips after its
// first byte to its last byte, and the N rates are added up. A common window for all
// connections (from the last first byte to the first connection to finish) would be
// biased: the range that finishes first is the one that happened to go fastest (fewer
// losses), so a window ending there overstates the N connections together, more so
// the more their rates vary — under loss it made X2 look like more than 2·X1.
type meter struct {
	mu    sync.Mutex
	lanes []laneCurve
	body  *atomic.Int64 // the client's count of body bytes received, if not nil
}

type laneCurve struct {
	sent, first, done time.Time
	pts               []point // cumulative bytes of this connection
	total             int64
}

type point struct {
	t time.Time
	n int64 // cumulative bytes at t
}

// coalesce merges arrivals closer together than this (bounds memory on fast links).
const coalesce = 500 * time.Microsecond

func newMeter(lanes int) *meter { return &meter{lanes: make([]laneCurve, lanes)} }

// sent marks a request sent on lane i (the first one counts: retries do not reset it).
func (m *meter) sent(i int, t time.Time) {
	m.mu.Lock()
	if m.lanes[i].sent.IsZero() {
		m.lanes[i].sent = t
	}
	m.mu.Unlock()
}

// add records n bytes arriving on lane i at t.
func (m *meter) add(i int, n int, t time.Time) {
	if n <= 0 {
		return
	}
	if m.body != nil {
		m.body.Add(int64(n))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	l := &m.lanes[i]
	if l.first.IsZero() {
		l.first = t
	}
	l.total += int64(n)
	if k := len(l.pts); k > 0 && t.Sub(l.pts[k-1].t) < coalesce {
		l.pts[k-1].n = l.total
		return
	}
	l.pts = append(l.pts, point{t, l.total})
}

// done marks lane i finished at t.
func (m *meter) done(i int, t time.Time) {
	m.mu.Lock()
	m.lanes[i].done = t
	m.mu.Unlock()
}

// firstByte is the earliest first byte over all lanes (zero if none arrived).
func (m *meter) firstByte() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	var f time.Time
	for _, l := range m.lanes {
		if !l.first.IsZero() && (f.IsZero() || l.first.Before(f)) {
			f = l.first
		}
	}
	return f
}

// steady returns the throughput of all lanes together after slow start, as bytes
// over a duration (the mean window; bytes·8/d is the sum of the lanes' rates). Each
// lane's window runs from skipRTTs round trips after its first byte to its end; the
// round trip is the shortest request-to-first-byte time of the lanes. ok is false
// when any lane's window is shorter than minRTTs round trips (the download was too
// short to leave slow start) or a lane received nothing.
func (m *meter) steady(skipRTTs, minRTTs float64) (bytes int64, d time.Duration, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var rtt time.Duration
	for _, l := range m.lanes {
		if l.sent.IsZero() || l.first.IsZero() || l.done.IsZero() {
			return 0, 0, false
		}
		if r := l.first.Sub(l.sent); rtt == 0 || r < rtt {
			rtt = r
		}
	}
	rtt = max(rtt, time.Millisecond)
	skip := time.Duration(skipRTTs * float64(rtt))
	var rate float64 // bytes per second, summed
	var sum time.Duration
	for _, l := range m.lanes {
		from := l.first.Add(skip)
		w := l.done.Sub(from)
		if w <= 0 || w < time.Duration(minRTTs*float64(rtt)) {
			return 0, 0, false
		}
		b := l.total - l.at(from)
		if b <= 0 {
			return 0, 0, false
		}
		rate += float64(b) / w.Seconds()
		sum += w
	}
	d = sum / time.Duration(len(m.lanes))
	return int64(rate * d.Seconds()), d, true
}

// at is the lane's cumulative byte count at t, interpolated between arrivals.
func (l *laneCurve) at(t time.Time) int64 {
	var prev point
	for _, p := range l.pts {
		if !p.t.Before(t) {
			if prev.t.IsZero() {
				return 0
			}
			f := float64(t.Sub(prev.t)) / float64(p.t.Sub(prev.t))
			return prev.n + int64(f*float64(p.n-prev.n))
		}
		prev = p
	}
	return l.total
}
