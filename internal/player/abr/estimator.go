package abr

import (
	"math"
	"time"
)

// Estimator estimates throughput from completed downloads with two exponentially
// weighted moving averages, weighted by download time and corrected for their zero
// start (as Shaka Player and dash.js do), and answers the lower of the two: the fast
// one reacts to drops, the slow one ignores brief peaks.
type Estimator struct {
	FastHalfLife, SlowHalfLife time.Duration // 0 means 3 s and 8 s
	// MinBytes ignores downloads smaller than this: their time is mostly round trip.
	MinBytes int64

	fast, slow ewma
}

type ewma struct {
	est, total float64 // estimate (bit/s, biased to 0) and accumulated weight (s)
}

func (e *ewma) add(halfLife, weight, value float64) {
	alpha := math.Pow(0.5, weight/halfLife)
	e.est = alpha*e.est + (1-alpha)*value
	e.total += weight
}

func (e *ewma) get(halfLife float64) float64 {
	zero := 1 - math.Pow(0.5, e.total/halfLife)
	if zero <= 0 {
		return 0
	}
	return e.est / zero
}

// Add records a download of n bytes that took d.
func (e *Estimator) Add(n int64, d time.Duration) {
	if n <= 0 || n < e.MinBytes {
		return
	}
	if d < time.Millisecond {
		d = time.Millisecond // a download from a cache in the same process
	}
	sec := d.Seconds()
	rate := float64(n) * 8 / sec
	fh, sh := e.halfLives()
	e.fast.add(fh, sec, rate)
	e.slow.add(sh, sec, rate)
}

// Estimate returns bit/s, or 0 before the first download.
func (e *Estimator) Estimate() float64 {
	if e.fast.total == 0 {
		return 0
	}
	fh, sh := e.halfLives()
	return math.Min(e.fast.get(fh), e.slow.get(sh))
}

func (e *Estimator) halfLives() (float64, float64) {
	f, s := e.FastHalfLife, e.SlowHalfLife
	if f <= 0 {
		f = 3 * time.Second
	}
	if s <= 0 {
		s = 8 * time.Second
	}
	return f.Seconds(), s.Seconds()
}
