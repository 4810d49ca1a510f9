package pars

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(math.Abs(b), 1e-12) }

func TestSolveRecoversModel(t *testing.T) {
	for _, c := range []float64{1e6, 10e6, 20e6} {
		for _, m := range []float64{0.05, 0.5, 1, 2, 4, 10} {
			x1, x2 := Throughput(1, c, m), Throughput(2, c, m)
			gc, gm, err := Solve(x1, x2)
			if err != nil {
				t.Fatalf("C=%g M=%g: %v", c, m, err)
			}
			if !near(gc, c, 1e-9) || !near(gm, m, 1e-9) {
				t.Fatalf("C=%g M=%g: solved C=%g M=%g", c, m, gc, gm)
			}
		}
	}
}

func TestSolveFieldFormula(t *testing.T) {
	// The study's worked form: C = X1·X2/(2·X1−X2), M = 2(X2−X1)/(2·X1−X2).
	c, m, err := Solve(4, 6)
	if err != nil || c != 12 || m != 2 {
		t.Fatalf("Solve(4, 6) = %v, %v, %v; want 12, 2", c, m, err)
	}
}

func TestSolveInvalidDomain(t *testing.T) {
	tests := []struct {
		name   string
		x1, x2 float64
		want   error
		says   string
	}{
		{"X2 equal X1", 5, 5, ErrNoGain, "X2 ≤ X1"},
		{"X2 below X1", 5, 4, ErrNoGain, "X2 ≤ X1"},
		{"X2 exactly 2·X1", 5, 10, ErrSuperlinear, "X2 ≥ 2·X1"},
		{"X2 above 2·X1", 5, 12, ErrSuperlinear, "X2 ≥ 2·X1"},
		{"no X1", 0, 5, ErrNoThroughput, "no throughput"},
		{"no X2", 5, 0, ErrNoThroughput, "no throughput"},
		{"NaN", math.NaN(), 5, ErrNoThroughput, "no throughput"},
		{"Inf", 5, math.Inf(1), ErrNoThroughput, "no throughput"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, m, err := Solve(tt.x1, tt.x2)
			if !errors.Is(err, tt.want) || c != 0 || m != 0 {
				t.Fatalf("Solve(%g, %g) = %g, %g, %v; want error %v", tt.x1, tt.x2, c, m, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("error %q does not say %q", err, tt.says)
			}
		})
	}
}

func TestChoose(t *testing.T) {
	tests := []struct {
		m     float64
		share float64
		max   int
		want  int
	}{
		{0, 0.8, 8, 1},     // nothing competes: one connection gets all of C
		{0.1, 0.8, 8, 1},   // 1/(1.1) = 91% ≥ 80%
		{0.25, 0.8, 8, 1},  // exactly 80%
		{0.3, 0.8, 8, 2},   // 1/1.3 = 77% < 80%; 2/2.3 = 87%
		{1, 0.8, 8, 4},     // 4/5 = 80%
		{2, 0.8, 8, 8},     // 8/10 = 80%
		{2, 0.9, 8, 8},     // 18 needed: bounded by max
		{4, 0.5, 8, 4},     // 4/8 = 50%
		{1, 0.8, 3, 3},     // bounded
		{1, 0.8, 0, 1},     // max below one means one
		{1, 0, 8, 1},       // no share asked
		{1, 1, 8, 8},       // all of C is never reached: max
		{0.999, 0.8, 8, 4}, // rounding up
	}
	for _, tt := range tests {
		got := Choose(tt.m, tt.share, tt.max)
		if got != tt.want {
			t.Errorf("Choose(M=%g, share=%g, max=%d) = %d, want %d", tt.m, tt.share, tt.max, got, tt.want)
		}
		if got > 1 && got < tt.max && tt.share > 0 && tt.share < 1 {
			// smallest: one fewer does not reach the share
			if float64(got-1)/(float64(got-1)+tt.m) >= tt.share {
				t.Errorf("Choose(M=%g) = %d is not the smallest", tt.m, got)
			}
		}
	}
}

// feed gives the estimator samples from the model with capacity c and m competing
// flows, one second each, for as long as it asks (bounded).
func feed(e *Estimator, c, m float64, samples int) []int {
	var ns []int
	for i := 0; i < samples; i++ {
		n := e.Next()
		ns = append(ns, n)
		bytes := int64(Throughput(n, c, m) / 8)
		e.Observe(n, bytes, time.Second)
	}
	return ns
}

func TestEstimatorProbesThenChooses(t *testing.T) {
	e := NewEstimator(EstimatorConfig{Share: 0.8, Max: 8, ProbeSamples: 2})
	ns := feed(e, 10e6, 1, 6)
	want := []int{2, 1, 2, 1, 4, 4}
	for i := range want {
		if ns[i] != want[i] {
			t.Fatalf("N sequence %v, want %v", ns, want)
		}
	}
	est := e.Current()
	if !est.Valid || !near(est.Capacity, 10e6, 1e-3) || !near(est.Competing, 1, 1e-3) || est.Connections != 4 {
		t.Fatalf("estimate %+v, want C 10 Mbit/s, M 1, N 4", est)
	}
	if !strings.Contains(est.Reason, "N=4") {
		t.Fatalf("reason %q does not name the choice", est.Reason)
	}
}

func TestEstimatorIgnoresUnaskedN(t *testing.T) {
	e := NewEstimator(EstimatorConfig{ProbeSamples: 1})
	e.Observe(3, 1e6, time.Second) // not asked for: ignored
	e.Observe(1, 1e6, time.Second) // X1 when X2 is due: ignored
	if n := e.Next(); n != 2 {
		t.Fatalf("Next = %d, want still 2", n)
	}
}

func TestEstimatorFallsBack(t *testing.T) {
	t.Run("no gain", func(t *testing.T) {
		e := NewEstimator(EstimatorConfig{ProbeSamples: 1})
		e.Observe(2, 1_000_000, time.Second)
		e.Observe(1, 1_000_000, time.Second) // X2 = X1
		est := e.Current()
		if est.Valid || est.Connections != 1 || !strings.Contains(est.Reason, "X2 ≤ X1") || e.Next() != 1 {
			t.Fatalf("estimate %+v, want invalid, N=1, saying X2 ≤ X1", est)
		}
	})
	t.Run("one connection fills the link", func(t *testing.T) {
		for _, tc := range []struct {
			x2    int64
			wantN int
		}{{1_040_000, 1}, {1_050_000, 1}, {1_200_000, 2}} {
			e := NewEstimator(EstimatorConfig{ProbeSamples: 1})
			e.Observe(2, tc.x2, time.Second)
			e.Observe(1, 1_000_000, time.Second)
			est := e.Current()
			if est.Connections != tc.wantN || e.Next() != tc.wantN {
				t.Errorf("X2 = %d·X1/1e6: estimate %+v, want N=%d", tc.x2, est, tc.wantN)
			}
			if tc.wantN == 1 && (!est.Valid || !strings.Contains(est.Reason, "one connection already fills the link")) {
				t.Errorf("X2 = %d·X1/1e6: estimate %+v, want a valid model that says one connection fills the link", tc.x2, est)
			}
		}
	})
	t.Run("whole segments show one connection fills the link", func(t *testing.T) {
		// After slow start two connections look 15% faster; whole segments 2%.
		e := NewEstimator(EstimatorConfig{ProbeSamples: 1})
		e.ObserveWhole(2, 1_020_000, time.Second)
		e.Observe(2, 1_150_000, time.Second)
		e.ObserveWhole(1, 1_000_000, time.Second)
		e.Observe(1, 1_000_000, time.Second)
		est := e.Current()
		if est.Connections != 1 || !strings.Contains(est.Reason, "whole segments") || est.WholeX2 != 8_160_000 {
			t.Errorf("estimate %+v, want N=1 from whole segments", est)
		}
		// Without whole-segment probes the after-slow-start gain decides: N=2.
		e = NewEstimator(EstimatorConfig{ProbeSamples: 1})
		e.Observe(2, 1_150_000, time.Second)
		e.Observe(1, 1_000_000, time.Second)
		if est := e.Current(); est.Connections == 1 {
			t.Errorf("estimate %+v without whole-segment probes", est)
		}
	})
	t.Run("superlinear, no earlier estimate", func(t *testing.T) {
		e := NewEstimator(EstimatorConfig{ProbeSamples: 1, Fallback: 3})
		e.Observe(2, 3_000_000, time.Second)
		e.Observe(1, 1_000_000, time.Second) // X2 = 3·X1
		est := e.Current()
		if est.Valid || est.Connections != 3 || !strings.Contains(est.Reason, "X2 ≥ 2·X1") || !strings.Contains(est.Reason, "fallback") {
			t.Fatalf("estimate %+v, want invalid, N=3 (fallback), saying X2 ≥ 2·X1", est)
		}
	})
	t.Run("superlinear keeps the last valid N", func(t *testing.T) {
		e := NewEstimator(EstimatorConfig{ProbeSamples: 1, ReprobeEvery: 1, Fallback: 3})
		feed(e, 10e6, 1, 2) // valid: N = 4
		if e.Current().Connections != 4 {
			t.Fatalf("first estimate %+v", e.Current())
		}
		e.Observe(4, int64(Throughput(4, 10e6, 1)/8), time.Second) // one sample: periodic re-probe
		e.Observe(2, 3_000_000, time.Second)
		e.Observe(1, 1_000_000, time.Second)
		est := e.Current()
		if est.Valid || est.Connections != 4 || !strings.Contains(est.Reason, "last valid") || est.Estimates != 2 {
			t.Fatalf("estimate %+v, want invalid, N=4 from the last valid estimate", est)
		}
	})
}

func TestEstimatorReestimatesWhenNetworkChanges(t *testing.T) {
	e := NewEstimator(EstimatorConfig{ProbeSamples: 1, ReprobeEvery: 1000, Tolerance: 0.3})
	feed(e, 10e6, 1, 2+3)
	if est := e.Current(); est.Connections != 4 || est.Estimates != 1 {
		t.Fatalf("first estimate %+v", est)
	}
	// Three more competing flows arrive: throughput at N=4 drops from 8 to 5 Mbit/s.
	ns := feed(e, 10e6, 4, 2+2+2)
	est := e.Current()
	if est.Estimates != 2 || !near(est.Competing, 4, 1e-3) || est.Connections != 8 {
		t.Fatalf("after the change: N sequence %v, estimate %+v; want a second estimate with M 4, N 8", ns, est)
	}
	// Within tolerance nothing changes.
	feed(e, 10e6, 4, 10)
	if e.Current().Estimates != 2 {
		t.Fatalf("re-estimated without a change: %+v", e.Current())
	}
}

func TestEstimatorMaxOne(t *testing.T) {
	e := NewEstimator(EstimatorConfig{Max: 1})
	if n := e.Next(); n != 1 {
		t.Fatalf("Next = %d with Max 1", n)
	}
}

// noisyProbe feeds an estimator with ProbeSamples probes model throughputs (C 10 Mbit/s,
// M 2) scaled by a noise factor per sample and N, until its first estimate.
//
// The factors average to exactly 1 per N over four samples, and nothing short of that
// average recovers the model: the first one, two or three samples of each N give
// X2 ≥ 2·X1 (invalid) or M ≈ 3.8, the last one, two or three M ≈ 0.1–0.7, and the
// median M ≈ 1.5. The ratio X2/X1 carries the noise (M depends only on it), so an
// estimator that took any single sample, a subset, or the median would fail.
func noisyProbe(probeSamples int) Estimate {
	noise := map[int][]float64{2: {1.3, 1.1, 0.8, 0.8}, 1: {0.8, 0.9, 1.2, 1.1}}
	e := NewEstimator(EstimatorConfig{ProbeSamples: probeSamples})
	seen := map[int]int{}
	for i := 0; e.Current().Estimates == 0 && i < 16; i++ {
		n := e.Next()
		x := Throughput(n, 10e6, 2) * noise[n][seen[n]%4]
		seen[n]++
		e.Observe(n, int64(x/8), time.Second)
	}
	return e.Current()
}

// TestEstimatorNoisy: the estimator averages its probe samples — with four samples
// per N it recovers C and M from noise that only the average of all four cancels.
func TestEstimatorNoisy(t *testing.T) {
	est := noisyProbe(4)
	if !est.Valid || !near(est.Capacity, 10e6, 1e-3) || !near(est.Competing, 2, 1e-3) {
		t.Fatalf("estimate %+v, want C = 10 Mbit/s, M = 2 (the average of four samples per N)", est)
	}
	// The noise must keep telling averaging from not: fewer samples miss the model.
	for k := 1; k < 4; k++ {
		if e := noisyProbe(k); e.Valid && near(e.Competing, 2, 0.25) {
			t.Errorf("with %d sample(s) per N the estimate %+v is already near M = 2: the noise no longer tests averaging", k, e)
		}
	}
}

func TestOneFillsRatio(t *testing.T) {
	for _, tc := range []struct{ share, want float64 }{{0.8, 10.0 / 9}, {0.5, 4.0 / 3}, {0, 1}, {1, 1}} {
		if got := OneFillsRatio(tc.share); !near(got, tc.want, 1e-9) {
			t.Errorf("OneFillsRatio(%v) = %v, want %v", tc.share, got, tc.want)
		}
		// At the ratio the model's own choice is one connection.
		if tc.share > 0 && tc.share < 1 {
			_, m, err := Solve(1, OneFillsRatio(tc.share)-1e-9)
			if err != nil || Choose(m, tc.share, 8) != 1 {
				t.Errorf("share %v: at X2/X1 = OneFillsRatio the model chooses %d (M %v, %v)", tc.share, Choose(m, tc.share, 8), m, err)
			}
		}
	}
}

// The estimator's decision from the probes the lab saw (docs/results/pars.md, 10
// Mbit/s, 50 ms, 1% loss), as its default samples (after slow start, Observe) and
// whole-segment throughput of the same segments (ObserveWhole), two of each:
//   - BBR sender: after slow start two connections look 15–50% faster than one, whole
//     segments come at 0.85–1.12× one connection's: one connection fills the link;
//     the estimator must use N = 1 and say so.
//   - CUBIC sender: two connections more than double one after slow start (the
//     model has no solution: fall back to 4) and add 40–60% on whole segments: one
//     connection does not fill the link.
func TestEstimatorDecisionBBRandCUBIC(t *testing.T) {
	type probe struct{ x1, x2, w1, w2 float64 } // kbit/s
	for _, tc := range []struct {
		name   string
		probes []probe // one per probe pair (N = 2, then N = 1)
		wantN  int
		reason string
	}{
		{"BBR, whole ×0.96", []probe{{9000, 10400, 8700, 8300}, {9200, 10800, 8300, 8000}}, 1, "one connection already fills the link: whole segments"},
		{"BBR, whole ×1.03, steady ×1.5", []probe{{6000, 9000, 8400, 8650}, {6100, 9100, 8390, 8660}}, 1, "one connection already fills the link: whole segments"},
		{"BBR, whole ×1.10", []probe{{8000, 9600, 8000, 8800}, {8000, 9600, 8000, 8800}}, 1, "one connection already fills the link: whole segments"},
		{"CUBIC, steady ×2.2, whole ×1.45", []probe{{2800, 6200, 2400, 3500}, {3000, 6500, 2500, 3600}}, 4, "X2 ≥ 2·X1"},
		{"CUBIC, steady ×1.3, whole ×1.6", []probe{{3000, 3900, 2500, 4000}, {3000, 3900, 2500, 4000}}, 4, "C "},
		// Above the model's bar (×1.11 at 80%) the model decides, not the bar.
		{"whole ×1.2, steady ×1.2", []probe{{5000, 6000, 5000, 6000}, {5000, 6000, 5000, 6000}}, 2, "C "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEstimator(EstimatorConfig{}) // the defaults: 80%, at most 8, fallback 4, 2 probes each
			for _, p := range tc.probes {
				for _, s := range []struct {
					n             int
					steady, whole float64
				}{{2, p.x2, p.w2}, {1, p.x1, p.w1}} {
					if n := e.Next(); n != s.n {
						t.Fatalf("probe asks N=%d, want %d", n, s.n)
					}
					// ObserveWhole first, as the client does; one second each.
					e.ObserveWhole(s.n, int64(s.whole*1000/8), time.Second)
					e.Observe(s.n, int64(s.steady*1000/8), time.Second)
				}
			}
			est := e.Current()
			if e.Probing() || est.Connections != tc.wantN || e.Next() != tc.wantN || !strings.Contains(est.Reason, tc.reason) {
				t.Fatalf("estimate N=%d (%q), want N=%d saying %q", est.Connections, est.Reason, tc.wantN, tc.reason)
			}
		})
	}
}
