package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/transport/pars"
)

// traces collects what every range did on its connection in one ParS cell.
type traces struct {
	mu  sync.Mutex
	all []pars.UnitTrace
}

func (t *traces) add(u pars.UnitTrace) {
	t.mu.Lock()
	t.all = append(t.all, u)
	t.mu.Unlock()
}

// gapMetrics says where a cell's connections were not receiving a body. Per
// connection, between the end of one range's body and the first byte of the next
// (the gap), split into: no work (the connection had taken no next range yet: the
// pipeline was empty or the player had not asked), the request round trip (from the
// later of "request handed to the connection" and "previous body done" to the first
// byte: what a request sent only after the previous body costs). idle_share is the
// connections' time without a body arriving over n × the cell's duration, from
// start to end (slow start of new connections is in the body time, not here).
func gapMetrics(ts []pars.UnitTrace, n int, start, end time.Time) map[string]any {
	byLane := map[int][]pars.UnitTrace{}
	for _, u := range ts {
		if u.FirstByte.IsZero() || u.Done.IsZero() || u.Err {
			continue
		}
		byLane[u.Lane] = append(byLane[u.Lane], u)
	}
	var gaps, rtts, noWork, bodyKbps, unitKB []float64
	var bodyTime time.Duration
	for _, us := range byLane {
		slices.SortFunc(us, func(a, b pars.UnitTrace) int { return a.FirstByte.Compare(b.FirstByte) })
		for i, u := range us {
			d := u.Done.Sub(u.FirstByte)
			bodyTime += d
			if d > 0 {
				bodyKbps = append(bodyKbps, float64(u.Bytes)*8/d.Seconds()/1000)
			}
			unitKB = append(unitKB, float64(u.Bytes)/1000)
			if i == 0 {
				continue
			}
			prev := us[i-1]
			gap := u.FirstByte.Sub(prev.Done)
			gaps = append(gaps, ms(max(gap, 0)))
			noWork = append(noWork, ms(max(u.Picked.Sub(prev.Done), 0)))
			from := prev.Done
			if u.Sent.After(from) {
				from = u.Sent
			}
			rtts = append(rtts, ms(max(u.FirstByte.Sub(from), 0)))
		}
	}
	total := end.Sub(start) * time.Duration(max(n, len(byLane)))
	idle := 0.0
	if total > 0 {
		idle = 1 - bodyTime.Seconds()/total.Seconds()
	}
	return map[string]any{
		"gaps":                  len(gaps),
		"gap_ms_median":         round(median(gaps), 1),
		"gap_ms_p90":            round(quantile(gaps, 0.9), 1),
		"gap_ms_total":          round(sum(gaps), 0),
		"gap_nowork_ms_total":   round(sum(noWork), 0),
		"gap_request_ms_median": round(median(rtts), 1),
		"gap_request_ms_total":  round(sum(rtts), 0),
		"idle_share":            round(idle, 3),
		"range_kb_median":       round(median(unitKB), 1),
		"body_kbps_median":      round(median(bodyKbps), 1),
		"connections_used":      len(byLane),
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

func median(xs []float64) float64 { return quantile(xs, 0.5) }

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}

// writeTraces writes a cell's range traces as CSV (ms from the cell's start).
func writeTraces(path string, ts []pars.UnitTrace, start time.Time) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"lane", "segment", "unit", "bytes", "picked_ms", "sent_ms", "first_byte_ms", "done_ms", "error"})
	at := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return strconv.FormatFloat(ms(t.Sub(start)), 'f', 2, 64)
	}
	for _, u := range ts {
		_ = w.Write([]string{strconv.Itoa(u.Lane), strconv.FormatUint(u.Segment, 10), strconv.Itoa(u.Unit), strconv.FormatInt(u.Bytes, 10),
			at(u.Picked), at(u.Sent), at(u.FirstByte), at(u.Done), fmt.Sprint(u.Err)})
	}
	w.Flush()
	return fsutil.WriteFileAtomic(path, b.Bytes(), 0o644)
}
