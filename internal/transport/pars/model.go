package pars

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// The study's model of N parallel TCP connections sharing a bottleneck of capacity C
// with M competing flows:
//
//	X_N = N·C / (N + M)
//
// From the throughput of one connection (X1) and of two (X2), measured after slow
// start, it follows that
//
//	C = X1·X2 / (2·X1 − X2)        M = 2·(X2 − X1) / (2·X1 − X2)
//
// which is valid only for X1 < X2 < 2·X1. Since 1/X_N = 1/C + (M/C)·(1/N), the same
// two numbers are the intercept and slope of a line through (1/1, 1/X1) and
// (1/2, 1/X2).

// Domain errors of Solve.
var (
	ErrNoGain       = errors.New("X2 ≤ X1: a second connection added no throughput (one connection already fills the bottleneck, or the samples are noise); the model has no solution there")
	ErrSuperlinear  = errors.New("X2 ≥ 2·X1: two connections more than doubled one (the single connection was held back by something the model leaves out: slow start, a loss burst, the server); C would be infinite or negative")
	ErrNoThroughput = errors.New("no throughput measured")
)

// Solve returns the bottleneck capacity C (in the unit of x1 and x2) and the number
// of competing flows M from X1 and X2. Outside X1 < X2 < 2·X1 it returns an error
// saying why.
func Solve(x1, x2 float64) (c, m float64, err error) {
	switch {
	case !(x1 > 0) || !(x2 > 0) || math.IsInf(x1, 0) || math.IsInf(x2, 0):
		return 0, 0, ErrNoThroughput
	case x2 <= x1:
		return 0, 0, ErrNoGain
	case x2 >= 2*x1:
		return 0, 0, ErrSuperlinear
	}
	d := 2*x1 - x2
	return x1 * x2 / d, 2 * (x2 - x1) / d, nil
}

// Throughput is the model's X_N.
func Throughput(n int, c, m float64) float64 { return float64(n) * c / (float64(n) + m) }

// Choose returns the smallest N in [1, maxN] whose X_N reaches share of C, that is
// N ≥ share·M/(1−share); maxN when none does.
func Choose(m, share float64, maxN int) int {
	maxN = max(maxN, 1)
	if share <= 0 || m <= 0 {
		return 1
	}
	if share >= 1 {
		return maxN
	}
	n := math.Ceil(share*m/(1-share) - 1e-9)
	if n > float64(maxN) {
		return maxN
	}
	return max(int(n), 1)
}

// OneFillsRatio is the largest X2/X1 at which the model says one connection reaches
// share of the capacity: X_1 = C/(1+M) ≥ share·C when M ≤ (1−share)/share, and
// X2/X1 = (2+2M)/(2+M).
func OneFillsRatio(share float64) float64 {
	if share <= 0 || share >= 1 {
		return 1
	}
	m := (1 - share) / share
	return (2 + 2*m) / (2 + m)
}

// EstimatorConfig tunes an Estimator. Zero fields take the defaults.
type EstimatorConfig struct {
	// Share is the share of the estimated capacity C the chosen N must reach (0.8).
	Share float64
	// Max bounds N (8, the study's largest).
	Max int
	// Fallback is N when the estimate is invalid because X2 ≥ 2·X1 and no earlier
	// estimate was valid (min(4, Max)). When X2 ≤ X1 the estimator uses 1: a second
	// connection was measured to add nothing.
	Fallback int
	// ProbeSamples is how many valid samples to average at N = 2 and at N = 1 (2).
	ProbeSamples int
	// ReprobeEvery measures X1 and X2 again after this many samples at the chosen N (30).
	ReprobeEvery int
	// Tolerance: two samples in a row further than this share from the model's X_N
	// (the network changed) start a new probe (0.35).
	Tolerance float64
	// MinGain: when X2 is at most (1+MinGain)·X1, one connection already fills the
	// bottleneck (a BBR sender on a lossy link, a link with no loss): the estimator
	// uses N = 1 and says so rather than opening connections that add nothing (0.05).
	// For the whole-segment probes the bar is the larger of this and
	// OneFillsRatio(Share).
	MinGain float64
	// Hysteresis: once one connection was found to fill the link, N = 1 is left
	// only when the whole-segment probes of the last two rounds together say one
	// connection reaches less than Share − Hysteresis of C (X2/X1 above
	// OneFillsRatio(Share − Hysteresis), 1.25 at the defaults); and a choice of N > 1
	// from a round whose whole-segment X2/X1 was within that band is checked by a
	// second round after ConfirmAfter segments (0.2).
	Hysteresis float64
	// ConfirmAfter is how many segments at the chosen N come before that second
	// round (4).
	ConfirmAfter int
}

func (c EstimatorConfig) withDefaults() EstimatorConfig {
	if c.Share <= 0 || c.Share >= 1 {
		c.Share = 0.8
	}
	if c.Max <= 0 {
		c.Max = 8
	}
	if c.Fallback <= 0 {
		c.Fallback = 4
	}
	c.Fallback = min(c.Fallback, c.Max)
	if c.ProbeSamples <= 0 {
		c.ProbeSamples = 2
	}
	if c.ReprobeEvery <= 0 {
		c.ReprobeEvery = 30
	}
	if c.Tolerance <= 0 {
		c.Tolerance = 0.35
	}
	if c.MinGain <= 0 {
		c.MinGain = 0.05
	}
	if c.Hysteresis <= 0 || c.Hysteresis >= c.Share {
		c.Hysteresis = min(0.2, c.Share/2)
	}
	if c.ConfirmAfter <= 0 {
		c.ConfirmAfter = 4
	}
	return c
}

// Estimate is the estimator's current view.
type Estimate struct {
	X1, X2 float64 // bit/s, after slow start
	// WholeX1, WholeX2 are the same probes as whole-segment throughput (size over
	// request-to-last-byte time): what a second connection adds to a segment's
	// delivery, the measure of "one connection already fills the link".
	WholeX1, WholeX2 float64
	Capacity         float64 // C, bit/s; 0 when not valid
	Competing        float64 // M; 0 when not valid
	Connections      int     // the N in use
	Valid            bool    // C and M come from X1 < X2 < 2·X1
	Reason           string  // how N was chosen, or why the model could not be used
	Estimates        int     // how many times X1 and X2 were measured
	At               time.Time
	// Probes are the samples this estimate was solved from, in the order they came.
	Probes []ProbeSample
}

// ProbeSample is one probe segment's throughput as the estimator took it.
type ProbeSample struct {
	N     int
	Whole bool    // whole-segment throughput (ObserveWhole), else after slow start
	Bps   float64 // bit/s
	D     time.Duration
}

// maxHistory bounds the estimates an Estimator keeps (Decisions).
const maxHistory = 64

type phase int

const (
	probing phase = iota // measuring X2 and X1, alternately
	running              // using the chosen N
)

type accum struct {
	bytes float64
	secs  float64
	n     int
}

func (a accum) rate() float64 {
	if a.secs <= 0 {
		return 0
	}
	return a.bytes * 8 / a.secs
}

// Estimator chooses N for ParS: it measures X2 (N = 2) and X1 (N = 1) on real
// segment downloads, solves the model, uses the smallest N that reaches the chosen
// share of C, and measures again periodically or when the throughput at that N
// leaves the model's prediction. It alternates 2, 1, 2, 1, …: under random loss a
// connection runs above its long-run rate for a while after slow start, so measuring
// all of X2 first on fresh connections and X1 later made X2 look several times X1 in
// the lab; alternating gives both the same mix of young and older connections. It
// starts with 2 so that start-up runs on two connections rather than one. It is safe
// for concurrent use.
type Estimator struct {
	cfg EstimatorConfig
	now func() time.Time

	mu     sync.Mutex
	ph     phase
	acc    map[int]*accum
	whole  map[int]*accum // whole-segment throughput of the same probes
	est    Estimate
	hist   []Estimate // every estimate solved, oldest first (at most maxHistory)
	probes []ProbeSample
	// lastWhole is the previous round's whole-segment probes, pooled with the
	// current round's for the "one connection fills the link" decision.
	lastWhole map[int]accum
	oneFills  bool // N = 1 because one connection fills the link
	confirm   int  // > 0: re-probe after this many segments (a choice of N > 1 that may be noise)
	segs      int  // segments fetched at the chosen N since the estimate
	prevN     int  // last N from a valid estimate, 0 if none
	since     int  // samples at the chosen N since the estimate
	outside   int  // consecutive samples outside the tolerance
}

// NewEstimator returns an estimator that starts by probing.
func NewEstimator(cfg EstimatorConfig) *Estimator {
	cfg = cfg.withDefaults()
	e := &Estimator{cfg: cfg, now: time.Now}
	e.reprobe("measuring X2 and X1")
	if cfg.Max == 1 {
		e.ph = running
		e.est.Connections, e.est.Reason = 1, "at most one connection allowed"
	}
	return e
}

// Config returns the configuration with defaults filled in.
func (e *Estimator) Config() EstimatorConfig { return e.cfg }

func (e *Estimator) reprobe(why string) {
	if e.whole != nil && e.whole[1].n > 0 && e.whole[2].n > 0 {
		e.lastWhole = map[int]accum{1: *e.whole[1], 2: *e.whole[2]}
	}
	e.ph = probing
	e.acc = map[int]*accum{1: {}, 2: {}}
	e.whole = map[int]*accum{1: {}, 2: {}}
	e.probes = nil
	e.since, e.outside, e.segs = 0, 0, 0
	e.est.Reason = why
}

// Next is the N to use for the next segment.
func (e *Estimator) Next() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ph == probing {
		return e.probeN()
	}
	return e.est.Connections
}

// probeN is the N the probe needs next: 2 until X2 has as many samples as X1.
// Callers hold e.mu.
func (e *Estimator) probeN() int {
	if e.acc[2].n <= e.acc[1].n {
		return 2
	}
	return 1
}

// Probing reports whether the estimator is measuring X1 and X2: its samples must
// not share the link with fetches at another N (ParS does not fetch ahead then).
func (e *Estimator) Probing() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ph == probing
}

// Current returns the current estimate.
func (e *Estimator) Current() Estimate {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.est
}

// Decisions returns every estimate solved so far, oldest first (the last
// maxHistory): the lab records them to show how a run's N came about.
func (e *Estimator) Decisions() []Estimate {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.hist)
}

// Observe adds a throughput sample: bytes received in d with n connections, measured
// after slow start. Samples at an N the estimator did not ask for are ignored.
func (e *Estimator) Observe(n int, bytes int64, d time.Duration) {
	if bytes <= 0 || d <= 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch e.ph {
	case probing:
		if n != e.probeN() {
			return
		}
		a := e.acc[n]
		a.bytes += float64(bytes)
		a.secs += d.Seconds()
		a.n++
		e.probes = append(e.probes, ProbeSample{N: n, Bps: float64(bytes) * 8 / d.Seconds(), D: d})
		if e.acc[1].n >= e.cfg.ProbeSamples && e.acc[2].n >= e.cfg.ProbeSamples {
			e.solve()
		}
	case running:
		if n != e.est.Connections {
			return
		}
		e.since++
		if e.est.Valid {
			x := float64(bytes) * 8 / d.Seconds()
			pred := Throughput(n, e.est.Capacity, e.est.Competing)
			if math.Abs(x-pred) > e.cfg.Tolerance*pred {
				e.outside++
			} else {
				e.outside = 0
			}
			if e.outside >= 2 {
				e.reprobe(fmt.Sprintf("throughput with N=%d left the model (%.0f kbit/s measured, %.0f predicted): measuring again", n, x/1000, pred/1000))
				return
			}
		}
		if e.since >= e.cfg.ReprobeEvery {
			e.reprobe("periodic re-estimate")
		}
	}
}

// Fetched counts a segment fetched with n connections, with or without a sample:
// pipelined segments at N > 1 often give none (a connection's window after slow
// start is too short), so the confirmation of a choice counts segments, not samples.
func (e *Estimator) Fetched(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ph != running || n != e.est.Connections {
		return
	}
	e.segs++
	if e.confirm > 0 && e.segs >= e.confirm {
		e.reprobe(fmt.Sprintf("N=%d was chosen from one probe round that may be noise: measuring again to confirm", n))
	}
}

// ObserveWhole adds a probe segment's whole-segment throughput (bytes over its
// request-to-last-byte time d with n connections). Call it before Observe for the
// same segment. Outside probing, or at an N the probe is not at, it is ignored.
func (e *Estimator) ObserveWhole(n int, bytes int64, d time.Duration) {
	if bytes <= 0 || d <= 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ph != probing || n != e.probeN() {
		return
	}
	a := e.whole[n]
	a.bytes += float64(bytes)
	a.secs += d.Seconds()
	a.n++
	e.probes = append(e.probes, ProbeSample{N: n, Whole: true, Bps: float64(bytes) * 8 / d.Seconds(), D: d})
}

// pooled is the whole-segment throughput at N = 1 and 2 of this round and the
// previous one together (this round alone on the first). Callers hold e.mu.
func (e *Estimator) pooled() (x1, x2 float64) {
	a1, a2 := *e.whole[1], *e.whole[2]
	if l, ok := e.lastWhole[1]; ok {
		a1.bytes, a1.secs, a1.n = a1.bytes+l.bytes, a1.secs+l.secs, a1.n+l.n
	}
	if l, ok := e.lastWhole[2]; ok {
		a2.bytes, a2.secs, a2.n = a2.bytes+l.bytes, a2.secs+l.secs, a2.n+l.n
	}
	return a1.rate(), a2.rate()
}

// solve turns the probes into an estimate. Callers hold e.mu.
func (e *Estimator) solve() {
	x1, x2 := e.acc[1].rate(), e.acc[2].rate()
	w1, w2 := e.whole[1].rate(), e.whole[2].rate()
	est := Estimate{X1: x1, X2: x2, WholeX1: w1, WholeX2: w2, Estimates: e.est.Estimates + 1, At: e.now()}
	c, m, err := Solve(x1, x2)
	// After slow start each connection is measured over its own window, which makes
	// two connections look faster than they are when one alone fills the link (BBR
	// on a lossy link: the lab saw X2 ≈ 1.15·X1 while whole segments came 2%
	// faster); whole-segment throughput shows what the second connection adds.
	// The bar is the model's own: one connection is enough when, solved from the
	// whole-segment probes, it reaches Share of C (X2 ≤ OneFillsRatio·X1, 1.11 at
	// 80%). A fixed 5% was inside the noise of two probe segments each: under BBR
	// the lab's whole-segment X2/X1 ranged 0.85–1.12, under CUBIC with 1% loss it is
	// far above (docs/results/pars.md).
	//
	// One round (two probe segments each) is noisy: under BBR the lab's whole-segment
	// X2/X1 ranged 0.76–1.29 around about 1.05 (slow start after idle favours two
	// connections a little), under CUBIC 1.30–3.03. So the decision has hysteresis
	// (docs/protocols/pars.md): N = 1 is kept while the last two rounds pooled stay
	// within leave (OneFillsRatio(Share − Hysteresis), 1.25), entered when this
	// round is within bar and the pooled rounds within leave; a choice of N > 1 is
	// confirmed by a second round soon after when it may be noise (below).
	bar := max(1+e.cfg.MinGain, OneFillsRatio(e.cfg.Share))
	leave := max(bar, OneFillsRatio(e.cfg.Share-e.cfg.Hysteresis))
	p1, p2 := e.pooled()
	round := w1 > 0 && w2 > 0
	pooledIn := p1 > 0 && p2 > 0 && p2 <= leave*p1
	stay := e.oneFills && pooledIn
	enter := round && w2 <= bar*w1 && pooledIn
	// A choice of N > 1 is confirmed by a second round when this one was within the
	// band, or when the model was valid (X1 < X2 < 2·X1 after slow start): where
	// BBR's rounds fell every time (×0.98–1.57), and CUBIC's with 1% loss almost never
	// (X2 ≥ 2·X1 in 13 of 13 auto runs), so it costs CUBIC about nothing.
	ambiguous := round && e.confirm == 0 && (w2 <= leave*w1 || err == nil)
	e.oneFills, e.confirm = false, 0
	switch {
	case stay || enter:
		est.Valid = err == nil
		if est.Valid {
			est.Capacity, est.Competing = c, m
		}
		est.Connections = 1
		if stay {
			est.Reason = fmt.Sprintf("one connection still fills the link: whole segments of the last two probes came at %.0f kbit/s with two connections and %.0f kbit/s with one (×%.2f, N=1 is left above ×%.2f: one connection under %.0f%% of the capacity they imply); this probe ×%.2f; using N=1",
				p2/1000, p1/1000, p2/p1, leave, 100*(e.cfg.Share-e.cfg.Hysteresis), w2/w1)
		} else {
			est.Reason = fmt.Sprintf("one connection already fills the link: whole segments came at %.0f kbit/s with two connections and %.0f kbit/s with one (×%.2f, at most ×%.2f: one connection reaches %.0f%% of the capacity they imply); using N=1",
				w2/1000, w1/1000, w2/w1, bar, 100*e.cfg.Share)
		}
		e.oneFills = true // not a model estimate: prevN stays the last one
	case x2 <= (1+e.cfg.MinGain)*x1:
		est.Valid = err == nil
		if est.Valid {
			est.Capacity, est.Competing = c, m
		}
		est.Connections = 1
		est.Reason = fmt.Sprintf("one connection already fills the link: X2 %.0f kbit/s is within %.0f%% of X1 %.0f kbit/s; using N=1",
			x2/1000, 100*e.cfg.MinGain, x1/1000)
		if err != nil {
			est.Reason += " (" + err.Error() + ")"
		}
		e.oneFills = true // not a model estimate: prevN stays the last one
	case err == nil:
		est.Valid, est.Capacity, est.Competing = true, c, m
		est.Connections = Choose(m, e.cfg.Share, e.cfg.Max)
		est.Reason = fmt.Sprintf("C %.0f kbit/s, M %.2f: N=%d reaches %.0f%% of C (target %.0f%%, max %d)",
			c/1000, m, est.Connections, 100*Throughput(est.Connections, c, m)/c, 100*e.cfg.Share, e.cfg.Max)
		e.prevN = est.Connections
	case errors.Is(err, ErrNoGain):
		est.Connections = 1
		est.Reason = fmt.Sprintf("model not usable (X1 %.0f, X2 %.0f kbit/s): %v; using N=1", x1/1000, x2/1000, err)
	default:
		est.Connections = e.cfg.Fallback
		from := "the configured fallback"
		if e.prevN > 0 {
			est.Connections, from = e.prevN, "the last valid estimate"
		}
		est.Reason = fmt.Sprintf("model not usable (X1 %.0f, X2 %.0f kbit/s): %v; using N=%d from %s", x1/1000, x2/1000, err, est.Connections, from)
	}
	if est.Connections > 1 && ambiguous {
		e.confirm = e.cfg.ConfirmAfter
		why := fmt.Sprintf("within ×%.2f", leave)
		if w2 > leave*w1 {
			why = "the model valid"
		}
		est.Reason += fmt.Sprintf(" (whole segments ×%.2f, %s: to be confirmed after %d segments)", w2/w1, why, e.confirm)
	}
	est.Probes = e.probes
	e.probes = nil
	e.est = est
	if len(e.hist) == maxHistory {
		e.hist = slices.Delete(e.hist, 0, 1)
	}
	e.hist = append(e.hist, est)
	e.ph = running
	e.since, e.outside, e.segs = 0, 0, 0
}
