package workload

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Arrival is one planned session: when it starts (from the run's start) and how long
// it lasts (0: until the run ends).
type Arrival struct {
	At, Length time.Duration
}

// RampSchedule starts n sessions spread evenly over ramp: session i at i·ramp/n, so
// the count rises from 0 to n; every session lasts until the run ends.
func RampSchedule(n int, ramp time.Duration) []Arrival {
	out := make([]Arrival, n)
	for i := range out {
		out[i].At = time.Duration(int64(ramp) * int64(i) / int64(n))
	}
	return out
}

// Session-length distributions of the open model.
const (
	DistExponential = "exp"
	DistFixed       = "fixed"
)

// PoissonSchedule is the open model: arrivals of a Poisson process of rate per second
// over duration (exponential gaps), each session lasting an exponential (or fixed)
// time of mean mean. The same seed gives the same schedule.
func PoissonSchedule(rate float64, duration, mean time.Duration, dist string, seed uint64) ([]Arrival, error) {
	if rate <= 0 || rate > 10000 {
		return nil, fmt.Errorf("arrival rate %g/s: want more than 0 and at most 10000", rate)
	}
	if mean <= 0 {
		return nil, fmt.Errorf("session mean %v: want a positive duration", mean)
	}
	if dist != DistExponential && dist != DistFixed {
		return nil, fmt.Errorf("session distribution %q: want %s or %s", dist, DistExponential, DistFixed)
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var out []Arrival
	at := time.Duration(0)
	for {
		at += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		if at >= duration {
			return out, nil
		}
		length := mean
		if dist == DistExponential {
			length = time.Duration(rng.ExpFloat64() * float64(mean))
		}
		out = append(out, Arrival{At: at, Length: max(length, time.Millisecond)})
	}
}
