package abr

import (
	"math"
	"testing"
	"time"
)

var ladder = []Rendition{{"v240", 300_000}, {"v360", 800_000}, {"v720", 2_500_000}, {"v1080", 5_000_000}}

func TestThroughput(t *testing.T) {
	tests := []struct {
		name       string
		throughput float64
		safety     float64
		want       int
	}{
		{"no estimate yet", 0, 0, 0},
		{"below the lowest", 100_000, 0, 0},
		{"exactly fits with safety", 2_500_000 / 0.9, 0, 2},
		{"just under the safety margin", 2_700_000, 0, 1},
		{"plenty", 50_000_000, 0, 3},
		{"custom safety", 2_600_000, 1.0, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Throughput{Safety: tc.safety}.Choose(State{Renditions: ladder, Current: 1, Throughput: tc.throughput})
			if got != tc.want {
				t.Errorf("Choose = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestBBA(t *testing.T) {
	// Target 30 s: reservoir 6 s, cushion 18 s, so f(B) is linear from 0.3 Mbit/s at 6 s
	// to 5 Mbit/s at 24 s: f(B) = 0.3 + 4.7·(B−6)/18 Mbit/s.
	s := time.Second
	tests := []struct {
		name    string
		buffer  time.Duration
		current int
		want    int
	}{
		{"empty", 0, 3, 0},
		{"in the reservoir", 6 * s, 2, 0},
		{"above reservoir+cushion", 24 * s, 0, 3},
		{"first choice maps directly", 12 * s, -1, 1},               // f = 1.87: highest at or below is v360
		{"stays while f is between the neighbours", 12 * s, 1, 1},   // 0.3 < 1.87 < 2.5
		{"up when f crosses the next rate", 16 * s, 1, 2},           // f = 2.91 ≥ 2.5
		{"up skips to the highest below f", 23 * s, 0, 2},           // f = 4.74: highest below is v720
		{"down when f reaches the next lower", 7 * s, 2, 1},         // f = 0.56 ≤ 0.8: lowest above f is v360
		{"stays above the next lower rate", 9 * s, 2, 2},            // f = 1.08 > 0.8
		{"hysteresis keeps v720 just below its rate", 14 * s, 2, 2}, // f = 2.39, above v360
		{"stays at the top inside the cushion", 20 * s, 3, 3},       // f = 3.96 > 2.5
		{"leaves the top when f falls to v720", 14 * s, 3, 2},       // f = 2.39 ≤ 2.5: lowest above f is v720
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := BBA{}.Choose(State{Renditions: ladder, Current: tc.current, Buffer: tc.buffer, BufferTarget: 30 * s, SegmentDuration: 2 * s})
			if got != tc.want {
				t.Errorf("Choose(buffer %v, current %d) = %d, want %d", tc.buffer, tc.current, got, tc.want)
			}
		})
	}
}

func TestBOLA(t *testing.T) {
	s := time.Second
	tests := []struct {
		name   string
		buffer time.Duration
		target time.Duration
		want   int
	}{
		{"empty buffer", 0, 30 * s, 0},
		{"at the minimum buffer", 10 * s, 30 * s, 0},
		{"at the target", 30 * s, 30 * s, 3},
		{"far above the target", 60 * s, 30 * s, 3},
		// Utilities 1, 1.98, 3.12, 3.81; γp = 1.41, V = 7.11: v720 overtakes v360 at 20.3 s.
		{"just below the v720 threshold", 20 * s, 30 * s, 1},
		{"just above the v720 threshold", 21 * s, 30 * s, 2},
		{"short live buffer, empty", 0, 6 * s, 0},
		{"short live buffer, full", 6 * s, 6 * s, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := BOLA{}.Choose(State{Renditions: ladder, Current: -1, Buffer: tc.buffer, BufferTarget: tc.target})
			if got != tc.want {
				t.Errorf("Choose(buffer %v of %v) = %d, want %d", tc.buffer, tc.target, got, tc.want)
			}
		})
	}
	// Monotone in the buffer level.
	prev := 0
	for b := time.Duration(0); b <= 40*s; b += s / 4 {
		got := BOLA{}.Choose(State{Renditions: ladder, Buffer: b, BufferTarget: 30 * s})
		if got < prev {
			t.Fatalf("BOLA went down from %d to %d as the buffer grew to %v", prev, got, b)
		}
		prev = got
	}
	if got := (BOLA{}).Choose(State{Renditions: ladder[:1], Buffer: 30 * s}); got != 0 {
		t.Errorf("one rendition: %d", got)
	}
}

func TestFixed(t *testing.T) {
	tests := []struct {
		rule Rule
		rs   []Rendition
		want int
	}{
		{Fixed{TrackID: "v720"}, ladder, 2},
		{Fixed{TrackID: "v720"}, []Rendition{{"a64", 64_000}, {"a128", 128_000}}, 0},
		{Fixed{TrackID: "v720", Fallback: Throughput{}}, []Rendition{{"a64", 64_000}, {"a128", 128_000}}, 1},
	}
	for i, tc := range tests {
		if got := tc.rule.Choose(State{Renditions: tc.rs, Throughput: 10_000_000}); got != tc.want {
			t.Errorf("%d: %s chose %d, want %d", i, tc.rule.Name(), got, tc.want)
		}
	}
}

func TestParse(t *testing.T) {
	for spec, name := range map[string]string{"throughput": "throughput", "bba": "bba", "bola": "bola", "fixed:v720": "fixed:v720", "": "throughput"} {
		r, err := Parse(spec)
		if err != nil || r.Name() != name {
			t.Errorf("Parse(%q) = %v, %v", spec, r, err)
		}
	}
	for _, bad := range []string{"fixed", "fixed:", "mpc"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestEstimator(t *testing.T) {
	var e Estimator
	if e.Estimate() != 0 {
		t.Fatal("estimate before any download")
	}
	e.Add(1_000_000, time.Second) // 8 Mbit/s
	if got := e.Estimate(); math.Abs(got-8e6) > 1 {
		t.Errorf("one sample: %v, want 8e6 (zero-bias corrected)", got)
	}
	for range 10 {
		e.Add(1_000_000, time.Second)
	}
	// A sudden drop: the fast average follows, and the minimum takes it.
	e.Add(125_000, time.Second) // 1 Mbit/s
	got := e.Estimate()
	if got >= 8e6*0.9 || got <= 1e6 {
		t.Errorf("after a drop: %v", got)
	}
	// A brief peak is ignored by the slow average.
	var f Estimator
	for range 10 {
		f.Add(250_000, time.Second) // 2 Mbit/s
	}
	f.Add(5_000_000, time.Second) // 40 Mbit/s
	if g := f.Estimate(); g > 10e6 {
		t.Errorf("after a peak: %v", g)
	}
	// Small downloads below MinBytes do not count.
	h := Estimator{MinBytes: 10_000}
	h.Add(500, time.Millisecond)
	if h.Estimate() != 0 {
		t.Errorf("tiny download counted")
	}
}
