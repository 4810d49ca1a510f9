package netem

import (
	"math/rand/v2"
	"time"
)

// shaper is the emulation model of one direction of a link, independent of how
// packets move: given a packet's arrival time and size it decides whether the packet
// is lost, duplicated or corrupted and when each copy is delivered. Times are
// nanoseconds on the monotonic clock. Not safe for concurrent use.
type shaper struct {
	m   Impairment
	rng *rand.Rand

	geP, geR, lossGood, lossBad float64
	bad                         bool

	bn         bottleneck
	lastDepart int64
	q          fifo // departures still in the future, for the queue bound
	limitPkts  int
	limitBytes int
	limitLat   int64

	lastAt int64 // latest delivery time handed out, for in-order delivery
	wander wander
	stats  DirectionStats
}

// wander is the jitter of a link that keeps packets in order: the delay varies
// smoothly over time, along straight lines between random points, and never falls
// faster than half as fast as time passes, so no packet can overtake the one before
// it and the mean delay stays the configured one.
type wander struct {
	t0, t1 int64 // segment start and end
	v0, v1 int64 // jitter at t0 and at t1
}

// DirectionStats counts what one direction of a link did.
type DirectionStats struct {
	From, To       string
	Packets        uint64 // entered the link
	Bytes          uint64
	Lost           uint64 // random loss
	QueueDropped   uint64 // drop-tail and delay-line overflow
	Duplicated     uint64
	Corrupted      uint64
	Reordered      uint64 // sent early by the reorder share
	Delivered      uint64
	DeliveredBytes uint64
	Queued         int // packets in the rate-limited queue now

	// The user-space forwarder's timing (zeros for the kernel backend): how late it
	// handed delivered packets to the receiving host against the delivery times the
	// shaper gave them. The model's times are exact; lateness is what the machine
	// added — wake-ups delayed by other work on the CPUs. A write up to timerLead
	// early counts as negative lateness.
	Timed       uint64        // delivered packets whose lateness is counted
	LateSum     time.Duration // their total lateness
	LateMax     time.Duration // the largest
	LateOver1ms uint64        // how many were more than 1 ms late
}

// delivered counts one packet of size bytes handed over at now, due at at.
func (st *DirectionStats) delivered(size int, now, at int64) {
	st.Delivered++
	st.DeliveredBytes += uint64(size)
	late := time.Duration(now - at)
	st.Timed++
	st.LateSum += late
	st.LateMax = max(st.LateMax, late)
	if late > time.Millisecond {
		st.LateOver1ms++
	}
}

// MeanLate is the mean lateness of the timed packets, 0 when none were timed.
func (st DirectionStats) MeanLate() time.Duration {
	if st.Timed == 0 {
		return 0
	}
	return st.LateSum / time.Duration(st.Timed)
}

// verdict is the shaper's decision for one packet.
type verdict struct {
	n       int      // copies to deliver, 0..2
	at      [2]int64 // delivery times
	corrupt bool     // flip a bit in the first copy
	bit     uint64   // random number choosing the bit
}

func newShaper(m Impairment, seed uint64, now int64) *shaper {
	s := &shaper{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	s.apply(m, now)
	return s
}

// apply switches to a new impairment at now, keeping the packets already queued and
// the order guarantee.
func (s *shaper) apply(m Impairment, now int64) {
	s.m = m
	s.geP, s.geR, s.lossGood, s.lossBad = m.Loss.GEParams()
	if !m.Loss.ge() {
		s.bad = false
	}
	s.bn = newBottleneck(m.Rate, m.Burst, now)
	s.wander = wander{}
	s.limitPkts = m.Queue.Packets
	s.limitBytes = int(m.Queue.Bytes)
	s.limitLat = int64(m.Queue.Latency)
	if !m.Rate.IsZero() && s.limitPkts == 0 && s.limitBytes == 0 && s.limitLat == 0 {
		s.limitPkts = DefaultQueuePackets
	}
	if s.lastDepart < now {
		s.lastDepart = now
	}
}

// lost draws the loss chain for one packet.
func (s *shaper) lost() bool {
	if s.geP == 0 && s.lossGood == 0 && !s.bad {
		return false
	}
	// Move the chain, then draw a loss in the new state (netem's gemodel order).
	if s.bad {
		if s.rng.Float64() < s.geR {
			s.bad = false
		}
	} else if s.geP > 0 && s.rng.Float64() < s.geP {
		s.bad = true
	}
	pl := s.lossGood
	if s.bad {
		pl = s.lossBad
	}
	return pl > 0 && s.rng.Float64() < pl
}

func (s *shaper) chance(p Percent) bool { return p > 0 && s.rng.Float64() < p.Fraction() }

// admit decides the fate of a packet of size bytes arriving at now.
func (s *shaper) admit(now int64, size int) verdict {
	s.stats.Packets++
	s.stats.Bytes += uint64(size)
	var v verdict
	if s.lost() {
		s.stats.Lost++
		return v
	}
	copies := 1
	if s.chance(s.m.Duplicate) {
		copies = 2
		s.stats.Duplicated++
	}
	if s.chance(s.m.Corrupt) {
		v.corrupt = true
		v.bit = s.rng.Uint64()
		s.stats.Corrupted++
	}
	for range copies {
		dep, ok := s.enqueue(now, size)
		if !ok {
			s.stats.QueueDropped++
			continue
		}
		v.at[v.n] = s.delay(dep)
		v.n++
	}
	if v.n == 0 {
		v.corrupt = false
	}
	return v
}

// enqueue passes the packet through the rate-limited drop-tail queue and returns its
// departure time.
func (s *shaper) enqueue(now int64, size int) (int64, bool) {
	if s.bn.kind == unlimited {
		return now, true
	}
	s.q.expire(now)
	if s.limitPkts > 0 && s.q.len() >= s.limitPkts {
		return 0, false
	}
	if s.limitBytes > 0 && s.q.bytes+size > s.limitBytes {
		return 0, false
	}
	start := max(now, s.lastDepart)
	var saved bottleneck
	if s.limitLat > 0 {
		saved = s.bn
	}
	dep := s.bn.depart(start, size)
	if s.limitLat > 0 && dep-now > s.limitLat {
		s.bn = saved
		return 0, false
	}
	s.lastDepart = dep
	s.q.push(dep, size)
	return dep, true
}

// delay adds the one-way delay, jitter and the reorder share to a departure.
func (s *shaper) delay(dep int64) int64 {
	if s.chance(s.m.Reorder) {
		s.stats.Reordered++
		return dep // overtakes the packets still in the delay line
	}
	d := int64(s.m.Delay)
	if s.m.Jitter > 0 {
		if s.m.JitterReorders {
			d += s.jitter()
		} else {
			d += s.wanderAt(dep)
		}
		d = max(d, 0)
	}
	at := dep + d
	if !s.m.JitterReorders && at < s.lastAt {
		at = s.lastAt
	}
	s.lastAt = max(s.lastAt, at)
	return at
}

// jitter draws one delay variation from the configured distribution.
func (s *shaper) jitter() int64 {
	j := float64(s.m.Jitter)
	if s.m.Distribution == "normal" {
		return int64(s.rng.NormFloat64() * j)
	}
	return int64((s.rng.Float64()*2 - 1) * j)
}

// wanderAt is the in-order jitter at time t.
func (s *shaper) wanderAt(t int64) int64 {
	w := &s.wander
	if w.t1 == 0 || t >= w.t1 {
		if w.t1 == 0 || t-w.t1 > 4*int64(s.m.Jitter) { // idle: start afresh
			w.t1, w.v1 = t, s.jitter()
		}
		for range 1000 { // segments of at least 4 jitters: one is nearly always enough
			next := s.jitter()
			span := max(2*abs(next-w.v1), 4*int64(s.m.Jitter), int64(time.Millisecond))
			w.t0, w.v0, w.t1, w.v1 = w.t1, w.v1, w.t1+span, next
			if t < w.t1 {
				break
			}
		}
	}
	if t <= w.t0 {
		return w.v0
	}
	return w.v0 + int64(float64(w.v1-w.v0)*float64(t-w.t0)/float64(w.t1-w.t0))
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// fifo holds (departure, size) of queued packets in departure order.
type fifo struct {
	dep   []int64
	size  []int
	head  int
	bytes int
}

func (f *fifo) len() int { return len(f.dep) - f.head }

func (f *fifo) push(dep int64, size int) {
	if f.head > 0 && f.head == len(f.dep) {
		f.dep, f.size, f.head = f.dep[:0], f.size[:0], 0
	} else if f.head > 1024 && f.head*2 > len(f.dep) {
		n := copy(f.dep, f.dep[f.head:])
		copy(f.size, f.size[f.head:])
		f.dep, f.size, f.head = f.dep[:n], f.size[:n], 0
	}
	f.dep = append(f.dep, dep)
	f.size = append(f.size, size)
	f.bytes += size
}

// expire drops the packets that have left by now.
func (f *fifo) expire(now int64) {
	for f.head < len(f.dep) && f.dep[f.head] <= now {
		f.bytes -= f.size[f.head]
		f.head++
	}
}
