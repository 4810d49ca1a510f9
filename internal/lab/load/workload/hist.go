package workload

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"time"
)

// Hist is a log-bucket histogram of response times in microseconds, in the manner of
// HdrHistogram: 128 linear sub-buckets per power of two, so a recorded value is kept
// to within 1/128 of itself and a reported quantile (the middle of its bucket) is
// within 0.4% of the true value (exact below 256 µs). Buckets are counts, so two
// histograms merge exactly by adding them, whichever process recorded them.
type Hist struct {
	counts map[int32]uint64
	n      uint64
	sumUS  uint64
	minUS  uint64
	maxUS  uint64
}

const subBits = 7 // 2^7 = 128 sub-buckets per power of two

// NewHist returns an empty histogram.
func NewHist() *Hist { return &Hist{counts: map[int32]uint64{}} }

func bucketOf(v uint64) int32 {
	e := max(0, bits.Len64(v)-(subBits+1))
	return int32(e<<subBits) + int32(v>>e)
}

// bucketRange is the lowest value of bucket i and its width.
func bucketRange(i int32) (lo, width uint64) {
	e := int(i>>subBits) - 1
	if e <= 0 {
		return uint64(i), 1
	}
	m := uint64(i) - uint64(e<<subBits)
	return m << e, 1 << e
}

// Record adds one response time.
func (h *Hist) Record(d time.Duration) {
	v := uint64(max(d.Microseconds(), 0))
	h.counts[bucketOf(v)]++
	if h.n == 0 || v < h.minUS {
		h.minUS = v
	}
	h.maxUS = max(h.maxUS, v)
	h.n++
	h.sumUS += v
}

// Merge adds o's counts to h.
func (h *Hist) Merge(o *Hist) {
	if o == nil || o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.minUS < h.minUS {
		h.minUS = o.minUS
	}
	h.maxUS = max(h.maxUS, o.maxUS)
	h.n += o.n
	h.sumUS += o.sumUS
}

// Count is the number of recorded values.
func (h *Hist) Count() uint64 { return h.n }

// Quantile returns the value at quantile q (0..1): the middle of the bucket holding
// it, clamped to the recorded minimum and maximum.
func (h *Hist) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	keys := h.sortedKeys()
	var seen uint64
	for _, i := range keys {
		seen += h.counts[i]
		if seen >= rank {
			lo, w := bucketRange(i)
			v := lo + (w-1)/2
			v = min(max(v, h.minUS), h.maxUS)
			return time.Duration(v) * time.Microsecond
		}
	}
	return time.Duration(h.maxUS) * time.Microsecond
}

// Mean is the exact mean of the recorded values.
func (h *Hist) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sumUS/h.n) * time.Microsecond
}

// StdDev is the standard deviation of the recorded values, from the buckets' middles
// around the exact mean (each value is within 1/256 of its bucket's middle).
func (h *Hist) StdDev() time.Duration {
	if h.n < 2 || h.minUS == h.maxUS {
		return 0
	}
	mean := float64(h.sumUS) / float64(h.n)
	var ss float64
	for i, c := range h.counts {
		lo, w := bucketRange(i)
		d := float64(lo) + float64(w-1)/2 - mean
		ss += float64(c) * d * d
	}
	return time.Duration(math.Sqrt(ss/float64(h.n)) * float64(time.Microsecond))
}

// Max is the largest recorded value.
func (h *Hist) Max() time.Duration { return time.Duration(h.maxUS) * time.Microsecond }

func (h *Hist) sortedKeys() []int32 {
	keys := make([]int32, 0, len(h.counts))
	for i := range h.counts {
		keys = append(keys, i)
	}
	sort.Slice(keys, func(a, b int) bool { return keys[a] < keys[b] })
	return keys
}

// histJSON is the stored form: the buckets as [index, count] pairs, plus the exact
// count, sum, minimum and maximum.
type histJSON struct {
	Buckets [][2]uint64 `json:"buckets"`
	Count   uint64      `json:"count"`
	SumUS   uint64      `json:"sum_us"`
	MinUS   uint64      `json:"min_us"`
	MaxUS   uint64      `json:"max_us"`
}

// MarshalJSON implements json.Marshaler.
func (h *Hist) MarshalJSON() ([]byte, error) {
	j := histJSON{Buckets: [][2]uint64{}, Count: h.n, SumUS: h.sumUS, MinUS: h.minUS, MaxUS: h.maxUS}
	for _, i := range h.sortedKeys() {
		j.Buckets = append(j.Buckets, [2]uint64{uint64(i), h.counts[i]})
	}
	return json.Marshal(j)
}

// maxBucket bounds bucket indexes read from a file (values up to 2^63 µs).
const maxBucket = 64 << subBits

// UnmarshalJSON implements json.Unmarshaler; it checks that the buckets add up.
func (h *Hist) UnmarshalJSON(b []byte) error {
	var j histJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*h = Hist{counts: map[int32]uint64{}, n: j.Count, sumUS: j.SumUS, minUS: j.MinUS, maxUS: j.MaxUS}
	var total uint64
	for _, p := range j.Buckets {
		if p[0] >= maxBucket {
			return fmt.Errorf("histogram bucket %d out of range", p[0])
		}
		h.counts[int32(p[0])] += p[1]
		total += p[1]
	}
	if total != j.Count {
		return fmt.Errorf("histogram buckets hold %d values, count says %d", total, j.Count)
	}
	return nil
}
