package load

import (
	"math"
	"runtime/metrics"
)

// selfSched reads the load generator's own Go runtime: how long its goroutines waited
// to run once runnable (the scheduler's latency histogram) and how much CPU its
// garbage collector took. A viewer goroutine that waited seconds for a processor is
// late because of the load generator, not the origin.
type selfSched struct {
	samples []metrics.Sample
	prev    []uint64 // the latency histogram's counts at the last read
}

const (
	schedLatencies = "/sched/latencies:seconds"
	gcCPU          = "/cpu/classes/gc/total:cpu-seconds"
	gcCycles       = "/gc/cycles/total:gc-cycles"
)

func newSelfSched() *selfSched {
	s := &selfSched{samples: []metrics.Sample{{Name: schedLatencies}, {Name: gcCPU}, {Name: gcCycles}}}
	s.read()
	return s
}

// selfSchedState is the cumulative GC CPU and cycles at one read.
type selfSchedState struct {
	gcCPU    float64
	gcCycles uint64
}

// read returns the cumulative GC state and, over the goroutine wake-ups since the
// last read, the 99th percentile and the largest scheduling latency (seconds; the
// upper bound of the histogram bucket).
func (s *selfSched) read() (st selfSchedState, p99, maxLat float64) {
	metrics.Read(s.samples)
	if v := s.samples[1].Value; v.Kind() == metrics.KindFloat64 {
		st.gcCPU = v.Float64()
	}
	if v := s.samples[2].Value; v.Kind() == metrics.KindUint64 {
		st.gcCycles = v.Uint64()
	}
	v := s.samples[0].Value
	if v.Kind() != metrics.KindFloat64Histogram {
		return st, 0, 0
	}
	h := v.Float64Histogram()
	delta := make([]uint64, len(h.Counts))
	var total uint64
	for i, c := range h.Counts {
		if i < len(s.prev) && c >= s.prev[i] {
			delta[i] = c - s.prev[i]
		} else {
			delta[i] = c
		}
		total += delta[i]
	}
	s.prev = append(s.prev[:0], h.Counts...)
	return st, bucketQuantile(h.Buckets, delta, total, 0.99), bucketQuantile(h.Buckets, delta, total, 1)
}

// bucketQuantile is the upper bound of the bucket holding quantile q of counts
// (buckets has one more boundary than counts; an infinite bound gives its lower one).
func bucketQuantile(buckets []float64, counts []uint64, total uint64, q float64) float64 {
	if total == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= want && c > 0 {
			if hi := buckets[i+1]; !math.IsInf(hi, 1) {
				return hi
			}
			return buckets[i]
		}
	}
	return 0
}
