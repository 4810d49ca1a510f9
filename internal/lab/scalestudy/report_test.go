package main

import (
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/lab/load/workload"
	"github.com/streambed/streambed/internal/lab/netem"
)

func cell(config int, cache, useCase string, rep int, p99, cores float64) *CellResult {
	c := &CellResult{Config: config, UseCase: useCase, Rep: rep, Cache: cache, Requests: 1000, RequestsPerS: 16,
		Latency: map[string]Latency{"all": {P50: 10, P99: p99, StdDev: 5}, "video": {P99: p99}},
		Servers: map[Role]*ServerResult{RoleOrigin: {CPUCores: cores, MediaRequests: 13, RSSMaxMiB: 60}}}
	switch config {
	case 1:
		c.ConfigName = OriginAtEdge.String()
		c.Servers[RoleOrigin].MediaRequests = 1000
	case 2:
		c.ConfigName = CentralCache.String() + " (" + cache + ")"
		c.Servers[RoleCache] = &ServerResult{CPUCores: 0.01, RSSMaxMiB: 30}
		c.CacheLog = &cacheLog{MaxFetchesPerSegment: 1}
	}
	c.reductions()
	return c
}

// TestMarkdownMediansAndRatio: repetitions fold into the median with their range, each
// configuration's p99 is divided by configuration 2's (nginx) of the same use case,
// and the origin load reduction comes from the origin's count against the viewers'.
func TestMarkdownMediansAndRatio(t *testing.T) {
	r := &Results{Command: "go run ./internal/lab/scalestudy", Started: time.Date(2026, 11, 24, 15, 0, 0, 0, time.UTC),
		Finished: time.Date(2026, 11, 24, 15, 20, 0, 0, time.UTC), Settings: ResultsConfig{Reps: 3, Workers: 50},
		Cells: []*CellResult{
			cell(1, "", "pure-live", 1, 100, 0.2), cell(2, "nginx", "pure-live", 1, 500, 0.02),
			cell(1, "", "pure-live", 2, 140, 0.3), cell(2, "nginx", "pure-live", 2, 600, 0.03),
			cell(1, "", "pure-live", 3, 120, 0.1), cell(2, "nginx", "pure-live", 3, 550, 0.01),
		}}
	var b strings.Builder
	writeMarkdown(&b, r)
	md := b.String()
	for _, want := range []string{
		"| pure-live | 1 origin at the edge, no cache | 16 | 0 | 10.0 | 120.0 (100.0–140.0) | 5.0 | 0.22 |",
		"| pure-live | 2 central origin + edge cache (nginx) | 16 | 0 | 10.0 | 550.0 (500.0–600.0) | 5.0 | 1.00 |",
		"| pure-live | 1 origin at the edge, no cache | 1000 | 0.0 | 0.00% | 0.000 → 0.200 (0.100–0.300) | 60 | — | — | — | — |",
		"| pure-live | 2 central origin + edge cache (nginx) | 13 | 0.0 | 98.70% |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestSpread(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want spread
	}{
		{nil, spread{}},
		{[]float64{3}, spread{3, 3, 3}},
		{[]float64{5, 1, 3}, spread{3, 1, 5}},
		{[]float64{4, 1, 3, 2}, spread{2.5, 1, 4}},
	} {
		if got := spreadOf(c.in); got != c.want {
			t.Errorf("spreadOf(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestFromLoad: the viewers' figures are the load report's, with "all" the merge of
// every kind's histogram.
func TestFromLoad(t *testing.T) {
	rep := &workload.Report{Kinds: map[workload.Kind]*workload.KindReport{}, Errors: map[string]uint64{"404": 2},
		Started: time.Unix(0, 0), Finished: time.Unix(10, 0)}
	for i, k := range workload.Kinds {
		h := workload.NewHist()
		for range 10 {
			h.Record(time.Duration(i+1) * time.Millisecond)
		}
		rep.Kinds[k] = &workload.KindReport{Requests: 10, Bytes: 1000, Latency: h}
	}
	rep.Sessions.TimeShifted = 4
	var c CellResult
	c.fromLoad(rep)
	if c.Requests != 40 || c.RequestsPerS != 4 || c.TimeShifted != 4 || c.Errors["404"] != 2 {
		t.Errorf("%+v", c)
	}
	if c.Latency["all"].P50 < 2 || c.Latency["all"].P50 > 3.02 || c.Latency["video"].P99 < 3.98 || c.Latency["all"].StdDev <= 0 {
		t.Errorf("latencies %+v", c.Latency)
	}
	if c.ThroughputMbit != 4*1000*8/10.0/1e6 {
		t.Errorf("throughput %v Mbit/s", c.ThroughputMbit)
	}
}

func TestLinkDeltas(t *testing.T) {
	before := []netem.DirectionStats{{From: "origin", To: "edge", Bytes: 1000, Timed: 10, LateSum: 10 * time.Millisecond}}
	after := []netem.DirectionStats{{From: "origin", To: "edge", Bytes: 1000 + 2_500_000, Timed: 110, LateSum: 60 * time.Millisecond, LateOver1ms: 5, QueueDropped: 2}}
	d := linkDeltas(before, after, 2)["origin>edge"]
	if d.Mbit != 10 || d.LateMeanMs != 0.5 || d.LateOver1ms != 0.05 || d.QueueDropped != 2 {
		t.Errorf("%+v: want 10 Mbit/s, 0.5 ms mean lateness, 5%% over 1 ms, 2 dropped", d)
	}
}
