package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const metricsText = `# HELP streambed_http_requests_total HTTP requests by kind of resource and status code.
# TYPE streambed_http_requests_total counter
streambed_http_requests_total{kind="init",status="200"} 2
streambed_http_requests_total{kind="manifest",status="200"} 30
streambed_http_requests_total{kind="metrics",status="200"} 4
streambed_http_requests_total{kind="segment",status="200"} 100
streambed_http_requests_total{kind="segment",status="404"} 3
streambed_http_response_bytes_total{kind="segment"} 2.5e+07
streambed_http_response_bytes_total{kind="manifest"} 60000
streambed_http_open_connections 3
`

func TestParseMetrics(t *testing.T) {
	c, err := parseMetrics(strings.NewReader(metricsText))
	if err != nil {
		t.Fatal(err)
	}
	if c.Requests["segment"] != 103 || c.Requests["manifest"] != 30 || c.Requests["metrics"] != 4 {
		t.Errorf("requests %v", c.Requests)
	}
	req, bytes := c.media()
	if req != 135 || bytes != 25060000 {
		t.Errorf("media requests %v bytes %v, want 135 (no /metrics) and 25060000", req, bytes)
	}
	before := originCounts{Requests: map[string]float64{"segment": 3, "manifest": 10}, Bytes: map[string]float64{"segment": 1e6}}
	d := c.sub(before)
	if d.Requests["segment"] != 100 || d.Requests["manifest"] != 20 || d.Bytes["segment"] != 2.4e7 {
		t.Errorf("difference %+v", d)
	}
	if _, err := parseMetrics(strings.NewReader("go_goroutines 12\n")); err == nil {
		t.Error("metrics without Streambed's counters accepted")
	}
	if _, err := parseMetrics(strings.NewReader(`streambed_http_requests_total{kind="segment"} x` + "\n")); err == nil {
		t.Error("a bad value accepted")
	}
}

// Lines in internal/cdn's nginx log format.
const accessLog = `2026-11-24T15:17:01+00:00 10.77.0.4 "GET /live/ch/manifest.mpd HTTP/1.1" 200 2100 0.003 cache=MISS upstream=127.0.0.1:8081 upstream_status=200 upstream_time=0.002
2026-11-24T15:17:01+00:00 10.77.0.4 "GET /live/ch/manifest.mpd HTTP/1.1" 200 2100 0.000 cache=HIT upstream=- upstream_status=- upstream_time=-
2026-11-24T15:17:02+00:00 10.77.0.4 "GET /live/ch/v1080/init.mp4 HTTP/1.1" 200 900 0.004 cache=MISS upstream=127.0.0.1:8081 upstream_status=200 upstream_time=0.004
2026-11-24T15:17:03+00:00 10.77.0.4 "GET /live/ch/v1080/880.m4s HTTP/1.1" 200 860000 0.080 cache=MISS upstream=127.0.0.1:8081 upstream_status=200 upstream_time=0.080
2026-11-24T15:17:03+00:00 10.77.0.4 "GET /live/ch/v1080/880.m4s HTTP/1.1" 200 860000 0.510 cache=HIT upstream=- upstream_status=- upstream_time=-
2026-11-24T15:17:03+00:00 10.77.0.4 "GET /live/ch/a128/880.m4s HTTP/1.1" 200 30000 0.020 cache=MISS upstream=127.0.0.1:8081 upstream_status=200 upstream_time=0.020
2026-11-24T15:17:04+00:00 10.77.0.4 "GET /live/ch/a128/880.m4s HTTP/1.1" 200 30000 0.020 cache=MISS upstream=127.0.0.1:8081 upstream_status=200 upstream_time=0.020
2026-11-24T15:17:05+00:00 10.77.0.4 "GET /live/ch/manifest.mpd HTTP/1.1" 200 2100 0.000 cache=STALE upstream=- upstream_status=- upstream_time=-
2026-11-24T15:17:05+00:00 10.77.0.4 "GET /live/ch/v10`

func TestParseCacheLog(t *testing.T) {
	l, err := parseCacheLog(strings.NewReader(accessLog))
	if err != nil {
		t.Fatal(err)
	}
	if l.Requests != 8 || l.ByStatus["MISS"] != 5 || l.ByStatus["HIT"] != 2 || l.ByStatus["STALE"] != 1 {
		t.Errorf("requests %d by status %v, want 8: 5 MISS, 2 HIT, 1 STALE (the cut last line skipped)", l.Requests, l.ByStatus)
	}
	if l.SegmentFetches != 3 || l.SegmentObjects != 2 || l.MaxFetchesPerSegment != 2 || l.ManifestFetches != 1 {
		t.Errorf("%+v: want 3 segment fetches of 2 objects, at most 2 per object, 1 manifest fetch", l)
	}
}

// TestProcTree: a child process is found below this one and its memory counted.
func TestProcTree(t *testing.T) {
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep to start: %v", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if !slices.Contains(descendants(os.Getpid()), cmd.Process.Pid) {
		t.Fatalf("child %d not among the descendants of %d", cmd.Process.Pid, os.Getpid())
	}
	self, err := procTree(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	all, err := procTree(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if self.RSS <= 0 || all.RSS < self.RSS {
		t.Errorf("child RSS %d, tree RSS %d: the tree must hold the child", self.RSS, all.RSS)
	}
	if _, err := procTree(1 << 30); err == nil {
		t.Error("a process that does not exist was read")
	}
	if pp, ok := parentOf("42 (a (b) c) S 7 42 42 0"); !ok || pp != 7 {
		t.Errorf("parent %d %v, want 7 from a command name with spaces and parentheses", pp, ok)
	}
}

func FuzzParseCacheLog(f *testing.F) {
	f.Add(accessLog)
	f.Add(`x "GET" 200`)
	f.Add(`"" cache= upstream=`)
	f.Fuzz(func(t *testing.T, s string) {
		l, err := parseCacheLog(strings.NewReader(s))
		if err == nil && (l.SegmentObjects > l.SegmentFetches || l.MaxFetchesPerSegment > l.SegmentFetches) {
			t.Errorf("%+v: more objects or per-object fetches than fetches", l)
		}
	})
}

func FuzzParseMetrics(f *testing.F) {
	f.Add(metricsText)
	f.Add(`streambed_http_requests_total{} 1`)
	f.Add(`streambed_http_requests_total{kind="a",status="200"}`)
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = parseMetrics(strings.NewReader(s))
	})
}
