package netem

import (
	"math"
	"sort"
)

// bottleneck computes when a packet finishes leaving a rate-limited link. Packets are
// served in arrival order; the caller passes the time service may start (the later of
// the packet's arrival and the previous packet's departure). Times are nanoseconds on
// the monotonic clock. It is a plain value so a tentative departure can be undone by
// restoring a copy.
type bottleneck struct {
	kind bottleneckKind

	// token bucket over a capacity curve (constant or stepped)
	rate       float64 // bits per ns, constant curve
	steps      []step  // stepped curve, cyclic from epoch
	period     int64   // ns
	periodBits float64
	epoch      int64
	burst      float64 // bucket depth in bits; 0 = serialise at the rate
	tokens     float64
	tokT       int64

	// Mahimahi trace
	tr     *Trace
	cyc    int64 // cycle of the opportunity last used
	idx    int   // index of the opportunity last used
	used   bool  // an opportunity has been used
	left   int   // bits left over in the last used opportunity
	leftAt int64 // time of that opportunity
}

type bottleneckKind int

const (
	unlimited bottleneckKind = iota
	bucket
	trace
)

type step struct {
	rate float64 // bits per ns
	dur  int64   // ns
}

func newBottleneck(r RateSpec, burst Size, epoch int64) bottleneck {
	b := bottleneck{epoch: epoch, tokT: epoch, burst: float64(burst) * 8}
	b.tokens = b.burst
	switch {
	case r.Trace != nil:
		b.kind = trace
		b.tr = r.Trace
	case len(r.Steps) > 0:
		b.kind = bucket
		for _, s := range r.Steps {
			st := step{rate: float64(s.Rate) / 1e9, dur: int64(s.For)}
			b.steps = append(b.steps, st)
			b.period += st.dur
			b.periodBits += st.rate * float64(st.dur)
		}
	case r.Constant > 0:
		b.kind = bucket
		b.rate = float64(r.Constant) / 1e9
	}
	return b
}

// depart returns when a packet of size bytes, whose service may start at start, has
// left the link, and advances the link's state.
func (b *bottleneck) depart(start int64, size int) int64 {
	bits := float64(size * 8)
	switch b.kind {
	case bucket:
		if b.burst == 0 {
			return b.after(start, bits)
		}
		if start > b.tokT {
			b.tokens = math.Min(b.burst, b.tokens+b.capacity(b.tokT, start))
			b.tokT = start
		}
		if b.tokens >= bits {
			b.tokens -= bits
			return start
		}
		t := b.after(start, bits-b.tokens)
		b.tokens, b.tokT = 0, t
		return t
	case trace:
		return b.traceDepart(start, int(bits))
	}
	return start
}

// capacity is how many bits the curve carries in [t0, t1].
func (b *bottleneck) capacity(t0, t1 int64) float64 {
	if t1 <= t0 {
		return 0
	}
	if b.steps == nil {
		return b.rate * float64(t1-t0)
	}
	var sum float64
	t := t0
	if n := (t1 - t0) / b.period; n > 0 {
		sum += float64(n) * b.periodBits
		t += n * b.period
	}
	for t < t1 {
		i, rem := b.stepAt(t)
		d := min(rem, t1-t)
		sum += b.steps[i].rate * float64(d)
		t += d
	}
	return sum
}

// after is the earliest time by which the curve has carried bits since t0.
func (b *bottleneck) after(t0 int64, bits float64) int64 {
	if bits <= 0 {
		return t0
	}
	if b.steps == nil {
		return t0 + int64(math.Ceil(bits/b.rate))
	}
	t := t0
	if n := int64(bits / b.periodBits); n > 0 {
		// Whole periods first; keep at least a sliver for the walk below.
		if float64(n)*b.periodBits >= bits {
			n--
		}
		bits -= float64(n) * b.periodBits
		t += n * b.period
	}
	for range 2*len(b.steps) + 2 { // at most one period and a bit is left
		i, rem := b.stepAt(t)
		s := b.steps[i]
		if c := s.rate * float64(rem); s.rate > 0 && c >= bits {
			return t + int64(math.Ceil(bits/s.rate))
		} else {
			bits -= c
		}
		t += rem
	}
	return t // unreachable with a valid schedule
}

// stepAt returns the step active at t and the time left in it.
func (b *bottleneck) stepAt(t int64) (int, int64) {
	phase := (t - b.epoch) % b.period
	if phase < 0 {
		phase += b.period
	}
	for i, s := range b.steps {
		if phase < s.dur {
			return i, s.dur - phase
		}
		phase -= s.dur
	}
	return len(b.steps) - 1, 1
}

// opportunity returns the time of opportunity idx in cycle cyc.
func (b *bottleneck) opportunity(cyc int64, idx int) int64 {
	return b.epoch + (cyc*b.tr.Period+b.tr.Millis[idx])*1e6
}

// nextOpportunity returns the first opportunity at or after t, after the last used
// one.
func (b *bottleneck) nextOpportunity(t int64) (int64, int) {
	cyc, idx := b.cyc, b.idx+1
	if !b.used {
		cyc, idx = 0, 0
	}
	if idx >= len(b.tr.Millis) {
		cyc, idx = cyc+1, 0
	}
	if b.opportunity(cyc, idx) >= t {
		return cyc, idx
	}
	// Jump: find the cycle and index of the first opportunity ≥ t.
	rel := t - b.epoch
	if rel < 0 {
		rel = 0
	}
	per := b.tr.Period * 1e6
	cyc = rel / per
	ms := float64(rel%per) / 1e6
	idx = sort.Search(len(b.tr.Millis), func(i int) bool { return float64(b.tr.Millis[i]) >= ms })
	if idx == len(b.tr.Millis) {
		cyc, idx = cyc+1, 0
	}
	return cyc, idx
}

// traceDepart follows Mahimahi: each opportunity carries TraceMTU bytes; bytes an
// opportunity has left over serve only packets already waiting at that moment, and
// an opportunity with nothing waiting is wasted.
func (b *bottleneck) traceDepart(start int64, bits int) int64 {
	if b.used && b.left > 0 && start <= b.leftAt {
		use := min(b.left, bits)
		b.left -= use
		bits -= use
		if bits == 0 {
			return b.leftAt
		}
	}
	for bits > 0 {
		cyc, idx := b.nextOpportunity(start)
		b.cyc, b.idx, b.used = cyc, idx, true
		b.leftAt = b.opportunity(cyc, idx)
		use := min(TraceMTU*8, bits)
		b.left = TraceMTU*8 - use
		bits -= use
	}
	return b.leftAt
}
