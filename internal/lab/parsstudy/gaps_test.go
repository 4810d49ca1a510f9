package main

import (
	"testing"
	"time"

	"github.com/streambed/streambed/internal/transport/pars"
)

// TestGapMetrics: on made-up traces of two connections, the gaps between ranges are
// split into waiting for work and the request's round trip, a pipelined request
// (sent before the previous body ended) leaves no gap, and the idle share is the
// connections' time without a body over n × the cell's time.
func TestGapMetrics(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ts := []pars.UnitTrace{
		// Lane 0: body 0–400; the next range taken at 420 (20 ms without work), sent
		// at 420, first byte at 470 (50 ms round trip), body to 900.
		{Lane: 0, Segment: 1, Unit: 0, Bytes: 100, Picked: at(0), Sent: at(0), FirstByte: at(0), Done: at(400)},
		{Lane: 0, Segment: 2, Unit: 0, Bytes: 100, Picked: at(420), Sent: at(420), FirstByte: at(470), Done: at(900)},
		// Lane 1: pipelined: the next request sent at 300, before the body ended at
		// 400; its first byte follows at once.
		{Lane: 1, Segment: 1, Unit: 1, Bytes: 100, Picked: at(0), Sent: at(0), FirstByte: at(0), Done: at(400)},
		{Lane: 1, Segment: 2, Unit: 1, Bytes: 100, Picked: at(300), Sent: at(300), FirstByte: at(400), Done: at(1000)},
		// A failed range does not count.
		{Lane: 1, Segment: 3, Unit: 1, Bytes: 5, Picked: at(1000), Sent: at(1000), FirstByte: at(1001), Done: at(1002), Err: true},
	}
	m := gapMetrics(ts, 2, t0, at(1000))
	want := map[string]any{
		"gaps":                 2,
		"gap_ms_total":         70.0,
		"gap_nowork_ms_total":  20.0,
		"gap_request_ms_total": 50.0,
		"connections_used":     2,
		"idle_share":           round(1-(400+430+400+600)/2000.0, 3),
		"gap_ms_median":        70.0, // of {0, 70}: the upper middle
		"range_kb_median":      0.1,
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, m[k], v, m)
		}
	}
}
