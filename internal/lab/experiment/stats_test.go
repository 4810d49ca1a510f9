package experiment

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		in   []float64
		want Summary
	}{
		{nil, Summary{}},
		{[]float64{3}, Summary{N: 1, Mean: 3, Median: 3, Min: 3, Max: 3}},
		{[]float64{4, 1, 3, 2}, Summary{N: 4, Mean: 2.5, Median: 2.5, Min: 1, Max: 4, Stddev: math.Sqrt(5.0 / 3)}},
	}
	for _, tt := range tests {
		got := Summarize(tt.in)
		if math.Abs(got.Stddev-tt.want.Stddev) > 1e-12 {
			t.Errorf("Summarize(%v).Stddev = %v, want %v", tt.in, got.Stddev, tt.want.Stddev)
		}
		got.Stddev = tt.want.Stddev
		if got != tt.want {
			t.Errorf("Summarize(%v) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

const testScenario = `
name: t
title: test
content: {synthetic: 8s, ladder: "180p:100k"}
network: {rate: 2mbit, loss: 0.1}
matrix:
  transport: [http1, h2]
  segment_duration: [1s, 2s]
  rtt: [0ms, 100ms]
repetitions: 2
plot: {x: rtt, series: transport}
published:
  - {metric: link_utilisation, where: {transport: http1, rtt: 0ms}, value: 0.602, source: "Table 5-8"}
`

func parseScenario(t *testing.T, text string) *Scenario {
	t.Helper()
	var s Scenario
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	return &s
}

func TestScenarioCellsAndProfiles(t *testing.T) {
	s := parseScenario(t, testScenario)
	cells := s.Cells()
	if len(cells) != 8 {
		t.Fatalf("%d cells, want 8", len(cells))
	}
	if k := s.Key(cells[0]); k != "transport=http1 segment_duration=1s rtt=0ms" {
		t.Errorf("first key %q", k)
	}
	if k := s.Key(cells[7]); k != "transport=h2 segment_duration=2s rtt=100ms" {
		t.Errorf("last key %q", k)
	}
	p, err := s.CellProfile(cells[7])
	if err != nil {
		t.Fatal(err)
	}
	if p.Forward.Delay.D() != 50*time.Millisecond || p.Reverse.Delay.D() != 50*time.Millisecond {
		t.Errorf("rtt 100ms gave delays %v/%v, want 50ms each way", p.Forward.Delay.D(), p.Reverse.Delay.D())
	}
	if p.Forward.Rate.IsZero() || p.Reverse.Loss.IsZero() {
		t.Errorf("base rate/loss lost: %+v", p)
	}
	if u := s.playURL("10.0.0.2", cells[7]); u != "https://10.0.0.2:8443/vod/seg-2s/manifest.mpd" {
		t.Errorf("h2 URL %q", u)
	}
	if u := s.playURL("10.0.0.2", cells[0]); u != "http://10.0.0.2:8080/vod/seg-1s/manifest.mpd" {
		t.Errorf("http1 URL %q", u)
	}
	if r := s.CellRate(cells[0]); r != "2mbit" {
		t.Errorf("rate %q", r)
	}
	durs, _ := s.SegmentDurations()
	if len(durs) != 2 || durs[1] != 2*time.Second {
		t.Errorf("segment durations %v", durs)
	}
}

func TestScenarioErrors(t *testing.T) {
	for _, bad := range []string{
		"name: t\ncontent: {synthetic: 8s}\nmatrix: {bandwith: [1]}\n", // typo in a parameter
		"name: t\ncontent: {}\n", // no content
		"name: t\ncontent: {synthetic: 8s}\nmatrix: {rtt: [0ms]}\nplot: {x: loss}\n", // plot on a non-parameter
	} {
		var s Scenario
		if err := yaml.Unmarshal([]byte(bad), &s); err != nil {
			continue
		}
		if err := s.Validate(); err == nil {
			t.Errorf("scenario accepted:\n%s", bad)
		}
	}
}

func TestReportRendersTablesPlotsAndPublished(t *testing.T) {
	s := parseScenario(t, testScenario)
	s.Metrics = []string{"link_utilisation", "startup_delay_ms"}
	r := &Results{Scenario: s, Started: time.Unix(0, 0), Finished: time.Unix(60, 0), Backend: "userspace"}
	for i, c := range s.Cells() {
		for rep := 1; rep <= 2; rep++ {
			r.Runs = append(r.Runs, Run{Key: s.Key(c), Cell: c, Rep: rep, Metrics: map[string]any{
				"link_utilisation": 0.5 + float64(i)/100, "startup_delay_ms": float64(100 * rep),
				"samples": []any{map[string]any{"t": 0.0, "buffer_s": 0.0, "bitrate_kbps": 400.0}, map[string]any{"t": 1.0, "buffer_s": 2.0, "bitrate_kbps": 800.0}},
			}})
		}
	}
	r.Runs = append(r.Runs, Run{Key: "transport=h2 segment_duration=2s rtt=100ms", Cell: s.Cells()[7], Rep: 3, Error: "boom <script>"})
	html, err := r.HTML()
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	for _, want := range []string{
		"<svg", "published (http1)", "0.602 (Table 5-8)", "0.83", // 0.5 median ÷ 0.602
		"segment_duration=1s", "boom &lt;script&gt;", "(1 failed)", "Buffer and bitrate over time",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") {
		t.Error("report does not escape run errors")
	}
	dir := t.TempDir()
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	csvb, _ := os.ReadFile(filepath.Join(dir, "results.csv"))
	if lines := strings.Count(string(csvb), "\n"); lines != 1+17 {
		t.Errorf("CSV has %d lines, want header + 17 runs", lines)
	}
}
