package experiment

import (
	"math"
	"sort"
	"strconv"
)

// Summary describes one metric over the repetitions of one cell.
type Summary struct {
	N      int     `json:"n"`
	Failed int     `json:"failed"` // runs of the cell that produced no value
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Stddev float64 `json:"stddev"`
}

// Summarize computes a Summary of xs (NaN-free).
func Summarize(xs []float64) Summary {
	s := Summary{N: len(xs)}
	if len(xs) == 0 {
		return s
	}
	sorted := append([]float64(nil), xs...)
	sort.Float64s(sorted)
	s.Min, s.Max = sorted[0], sorted[len(sorted)-1]
	if n := len(sorted); n%2 == 1 {
		s.Median = sorted[n/2]
	} else {
		s.Median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	for _, x := range xs {
		s.Mean += x
	}
	s.Mean /= float64(len(xs))
	if len(xs) > 1 {
		var ss float64
		for _, x := range xs {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.Stddev = math.Sqrt(ss / float64(len(xs)-1))
	}
	return s
}

// number reads a metric from a player's JSON output as a float.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x)
	case int:
		return float64(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

// CellSummaries summarizes every metric of every cell: key → metric → summary.
func (r *Results) CellSummaries() map[string]map[string]Summary {
	vals := map[string]map[string][]float64{}
	failed := map[string]int{}
	for _, run := range r.Runs {
		if run.Skipped != "" {
			continue // not played: no row
		}
		if vals[run.Key] == nil {
			vals[run.Key] = map[string][]float64{}
		}
		if run.Error != "" {
			failed[run.Key]++
			continue
		}
		for _, m := range r.Scenario.Metrics {
			if f, ok := number(run.Metrics[m]); ok {
				vals[run.Key][m] = append(vals[run.Key][m], f)
			}
		}
	}
	out := map[string]map[string]Summary{}
	for key, metrics := range vals {
		out[key] = map[string]Summary{}
		for _, m := range r.Scenario.Metrics {
			s := Summarize(metrics[m])
			s.Failed = failed[key]
			out[key][m] = s
		}
	}
	return out
}
