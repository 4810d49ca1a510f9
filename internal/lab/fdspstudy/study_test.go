package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streambed/streambed/internal/lab/netem"
	"github.com/streambed/streambed/internal/transport/fdsp"
)

// The tests run in the package folder; the shipped profiles are two levels up.
func TestMain(m *testing.M) {
	if err := os.Chdir("../../.."); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

func TestTable2Links(t *testing.T) {
	for _, tc := range []struct {
		b         int
		link      string
		rate      string // the forward direction's
		wantDelay netem.Duration
	}{
		{1_000_000, "dynamic", "schedule 1.5mbit/2s → 1mbit/2s", 25e6},
		{2_000_000, "dynamic", "schedule 2.5mbit/2s → 2mbit/2s", 25e6},
		{4_000_000, "dynamic", "schedule 6mbit/2s → 4mbit/2s", 25e6},
		{1_000_000, "static", "1.25mbit", 25e6},
		{4_000_000, "static", "5mbit", 25e6},
		{2_000_000, "open", "unlimited", 25e6},
	} {
		p, err := table2Link(tc.link, tc.b)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []netem.Impairment{p.Forward, p.Reverse} {
			got := m.Rate.String()
			if m.Rate.IsZero() {
				got = "unlimited"
			}
			if got != tc.rate {
				t.Errorf("%d %s: rate %q, want %q", tc.b, tc.link, got, tc.rate)
			}
			if m.Delay != tc.wantDelay || m.Loss.MeanLoss() == 0 || m.Corrupt == 0 {
				t.Errorf("%d %s: lost the study's delay or impairments: %s", tc.b, tc.link, m)
			}
		}
	}
	if _, err := table2Link("static", 3_000_000); err == nil {
		t.Error("a bitrate without a study profile: no error")
	}
}

func TestBufferStatsSkipsStartup(t *testing.T) {
	st := fdsp.Stats{Samples: []fdsp.Sample{{T: 0, BufferS: 0, State: "startup"}, {T: 1, BufferS: 4, State: "playing"}, {T: 2, BufferS: 6, State: "playing"}, {T: 3, BufferS: 2, State: "stalled"}}}
	m, sd, lo := bufferStats(st)
	if m != 4 || lo != 2 || sd < 1.63 || sd > 1.64 {
		t.Errorf("mean %v sd %v min %v: want 4, 1.633, 2", m, sd, lo)
	}
	if m, sd, lo := bufferStats(fdsp.Stats{}); m != 0 || sd != 0 || lo != 0 {
		t.Errorf("no samples: %v %v %v", m, sd, lo)
	}
}

func TestTimeChartIsWellFormedSVG(t *testing.T) {
	b := timeChart("buffer <&>", "s", "buffer s", 0, []series{{Name: "tcp", X: []float64{0, 0.5, 31}, Y: []float64{0, 3, 1}}, {Name: "auto"}})
	d := xml.NewDecoder(strings.NewReader(string(b)))
	n := 0
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not XML: %v\n%s", err, b)
			}
			break
		}
		if e, ok := tok.(xml.StartElement); ok && e.Name.Local == "polyline" {
			n++
		}
	}
	if n != 2 || !strings.Contains(string(b), "buffer &lt;&amp;&gt;") {
		t.Errorf("%d polylines (want 2), or the title is not escaped:\n%s", n, b)
	}
}

func TestSummaryMediansAndCuts(t *testing.T) {
	rows := []Row{
		{Table: 1, Clip: "slow", RTTms: 150, Rep: 1, Variant: "tcp", RebufferMS: 10000, RebufferCount: 4},
		{Table: 1, Clip: "slow", RTTms: 150, Rep: 1, Variant: "udp", RebufferMS: 500, RebufferCount: 1, PLR: 0.04},
		{Table: 1, Clip: "slow", RTTms: 150, Rep: 1, Variant: "auto", RebufferMS: 800, RebufferCount: 1, PLR: 0.01, Stats: fdsp.Stats{BPs: []int{50, 50, 75}}},
		{Table: 1, Clip: "slow", RTTms: 150, Rep: 2, Variant: "auto", RebufferMS: 1200, RebufferCount: 2, PLR: 0.02, Stats: fdsp.Stats{BPs: []int{50, 75, 75}}},
		{Table: 1, Clip: "slow", RTTms: 150, Rep: 3, Variant: "auto", RebufferMS: 1000, RebufferCount: 1, PLR: 0.005, Stats: fdsp.Stats{BPs: []int{50, 50, 50}}},
	}
	var b strings.Builder
	summary1(&b, rows)
	want := "| slow | 150 | FDSP auto | 3 | 1000 (800–1200) | 1 (1–2) | 1000 (800–1200) | 90 % | 1.00 (0.50–2.00) | 75 % | — | 0.000 | — | 50,50,75 / 50,75,75 / 50,50,50 |"
	if !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks\n%s\ngot\n%s", want, b.String())
	}
	if _, s := med([]Row{{RebufferMS: 1}, {RebufferMS: 3}}, func(r Row) float64 { return r.RebufferMS }, "%.0f"); s != "2 (1–3)" {
		t.Errorf("median of two: %q", s)
	}
}

func TestOptimalRange(t *testing.T) {
	rows := []Row{
		{Variant: "tcp", RebufferMS: 9000, StartupMS: 3000},
		{Variant: "bp0", PLR: 0.040, RebufferMS: 300, StartupMS: 300},
		{Variant: "bp25", PLR: 0.004, RebufferMS: 500, StartupMS: 500},
		{Variant: "bp50", PLR: 0.003, RebufferMS: 700, StartupMS: 700},
		{Variant: "bp75", PLR: 0.002, RebufferMS: 2500, StartupMS: 900}, // TCP fell behind
		{Variant: "bp100", PLR: 0.002, RebufferMS: 5000, StartupMS: 1200},
		{Variant: "auto", Stats: fdsp.Stats{BPs: []int{50, 50, 50, 75}}},
	}
	vs := groupBy(rows, func(r Row) string { return r.Variant })
	if got := optimalRange(vs, func(r Row) float64 { return r.PLR }); !slices.Equal(got, []int{25, 50}) {
		t.Errorf("optimal range %v, want [25 50] (75 and 100 rebuffer after start-up, 0's PLR is over 1.5x 50's)", got)
	}
	// Receive-buffer drops left out: 0.1 % of 25's PLR was drops.
	ten, sixty := int64(10), int64(60)
	rows[2].RcvbufErrors, rows[2].Stats.Packets = &ten, 10000
	vs = groupBy(rows, func(r Row) string { return r.Variant })
	if got := optimalRange(vs, linkPLR); !slices.Equal(got, []int{25, 50}) {
		t.Errorf("link optimal range %v, want [25 50]", got)
	}
	rows[2].PLR, rows[2].RcvbufErrors = 0.009, &sixty // 0.6 % of it drops: link PLR 0.003
	vs = groupBy(rows, func(r Row) string { return r.Variant })
	if got := optimalRange(vs, func(r Row) float64 { return r.PLR }); !slices.Equal(got, []int{50}) {
		t.Errorf("optimal range %v, want [50]", got)
	}
	if got := optimalRange(vs, linkPLR); !slices.Equal(got, []int{25, 50}) {
		t.Errorf("link optimal range %v, want [25 50]", got)
	}
	for i := range rows {
		rows[i].Clip, rows[i].RTTms = "fast", 150
	}
	var b strings.Builder
	ranges(&b, rows)
	if !strings.Contains(b.String(), "| fast | 150 | 50 | 25, 50 | 75 | 0 of 1 / 0 of 1 |") {
		t.Errorf("ranges:\n%s", b.String())
	}
}

func TestSummarizeLeavesOutAnotherControllersAdaptiveRows(t *testing.T) {
	dir := t.TempDir()
	old, cur := filepath.Join(dir, "old.json"), filepath.Join(dir, "new.json")
	write := func(f string, rows []Row) {
		b, err := json.Marshal(rows)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(old, []Row{
		{Table: 1, Clip: "slow", RTTms: 250, Variant: "bp25", PLR: 0.004},
		{Table: 1, Clip: "slow", RTTms: 250, Variant: "auto", PLR: 0.004, Stats: fdsp.Stats{BPs: []int{25, 50, 75}}},
	})
	write(cur, []Row{{Table: 1, Clip: "slow", RTTms: 250, Variant: "auto", PLR: 0.004, Stats: fdsp.Stats{BPs: []int{25, 0, 0}}}})
	var b strings.Builder
	if err := summarize(&b, []string{old, cur}, old); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| slow | 250 | FDSP auto | 1 |") || strings.Contains(b.String(), "25,50,75") {
		t.Errorf("want only the new file's adaptive row:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "| slow | 250 | FDSP 25 | 1 |") {
		t.Errorf("the old file's fixed row is missing:\n%s", b.String())
	}
}
