package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/cdn"
	"github.com/streambed/streambed/internal/lab/netem"
)

// TestShortRunOnNamespaces runs the three configurations of the archive-dvr use case
// for a few seconds each on real namespace hosts: the real binary, replay encoder,
// nginx and load generator. It is opt-in (STREAMBED_SCALESTUDY=1, as root): it builds
// streambed, encodes the published ladder once (minutes the first time; cached) and
// takes about two minutes, too long for every `make test`.
func TestShortRunOnNamespaces(t *testing.T) {
	if os.Getenv("STREAMBED_SCALESTUDY") == "" {
		t.Skip("opt-in: set STREAMBED_SCALESTUDY=1 (root; builds streambed, encodes the published ladder once, ~2 min)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("STREAMBED_SCALESTUDY=1 needs root (network namespaces)")
	}
	if _, err := cdn.Binary(cdn.Nginx); err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs("../../..") // go build ./cmd/streambed runs from the repository root
	if err := os.Chdir(root); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	o := options{out: out, work: t.TempDir(), serverCPUs: "", clientCPUs: "",
		configs: []Config{OriginAtEdge, CentralCache, EdgeOriginCache}, caches: []cdn.Kind{cdn.Nginx},
		useCases: []string{"archive-dvr"}, workers: 4, reps: 1, ramp: 2 * time.Second, duration: 12 * time.Second,
		warmup: 2 * time.Second, shiftShare: 0.5, shift: 4 * time.Second,
		links: Links{WANDelay: 20 * time.Millisecond, WANRate: netem.Gbit, AccessDelay: time.Millisecond, AccessRate: netem.Gbit}}
	if err := run(context.Background(), o, testWriter{t}); err != nil {
		t.Fatal(err)
	}
	var r Results
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Failed) > 0 || len(r.Cells) != 3 {
		t.Fatalf("%d cells, failed %v", len(r.Cells), r.Failed)
	}
	for _, c := range r.Cells {
		o := server(c, RoleOrigin)
		if c.Requests == 0 || c.ErrorCount > 0 || c.TimeShifted != 2 || o.CPUCores <= 0 || o.RSSMaxMiB <= 0 {
			t.Errorf("config %d: %d requests, %d errors, %d time-shifted, origin %.3f cores %.0f MiB",
				c.Config, c.Requests, c.ErrorCount, c.TimeShifted, o.CPUCores, o.RSSMaxMiB)
		}
		switch Config(c.Config) {
		case OriginAtEdge:
			// No cache: the origin served exactly what the viewers asked.
			if o.MediaRequests != float64(c.Requests) {
				t.Errorf("configuration 1: the origin served %.0f media requests, the viewers made %d", o.MediaRequests, c.Requests)
			}
		case CentralCache, EdgeOriginCache:
			if c.CacheLog == nil || c.CacheLog.MaxFetchesPerSegment != 1 || c.CacheLog.SegmentObjects == 0 {
				t.Errorf("configuration %d: cache log %+v, want each segment fetched once", c.Config, c.CacheLog)
			}
			if c.Config == int(CentralCache) && o.MediaRequests >= float64(c.Requests) {
				t.Errorf("configuration 2: the origin served %.0f requests for the viewers' %d", o.MediaRequests, c.Requests)
			}
			if c.Config == int(EdgeOriginCache) {
				e := server(c, RoleEdgeOrigin)
				if e.MediaRequests == 0 || e.MediaRequests >= float64(c.Requests) || o.Requests["segment"] == 0 {
					t.Errorf("configuration 3: edge origin %.0f requests for the viewers' %d; central origin segments %.0f (its pulls)",
						e.MediaRequests, c.Requests, o.Requests["segment"])
				}
			}
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }
