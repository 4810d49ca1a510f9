package fdsp

import (
	"slices"
	"testing"
)

// pathModel is a path for the controller: TCP carries a substream's TCP part in
// time up to maxBP, and UDP loses packets whenever lossy is set.
type pathModel struct {
	maxBP int
	lossy bool
}

// drive plans n substreams and reports each one lag substreams after it was
// planned, as a session does (TCP one ahead, the report after play-out).
func drive(a *adaptiveBP, p pathModel, n, lag int) []int {
	var plans []int
	for k := 0; k < n; k++ {
		plans = append(plans, a.value())
		if j := k - lag; j >= 0 {
			r := Report{Substream: uint32(j), Expected: 1000}
			if j > 0 && plans[j] > p.maxBP { // substream 0's TCP part is the start-up: never late
				r.LateMS = 800
			}
			if p.lossy {
				r.Lost = 4
			}
			a.report(r)
		}
	}
	return plans
}

func TestAdaptiveBPFindsTheHighestBPTCPSustains(t *testing.T) {
	for _, tc := range []struct {
		name string
		path pathModel
		want int // the BP it settles at
	}{
		{"fast TCP, lossy UDP: all I-frame data on TCP", pathModel{100, true}, 100},
		{"TCP keeps up to 75", pathModel{75, true}, 75},
		{"TCP keeps up to 50", pathModel{50, true}, 50},
		{"TCP keeps up to 25", pathModel{25, true}, 25},
		{"TCP late even with headers only", pathModel{-1, true}, 0},
		{"clean UDP: stays where it starts", pathModel{100, false}, bpStart},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a adaptiveBP
			a.init(BPAuto)
			plans := drive(&a, tc.path, 14, 2) // before the first re-probe
			// After the first overshoot is judged, every plan stays at or below
			// what TCP sustains, and the last ones sit at the target.
			tail := plans[len(plans)-3:]
			for _, b := range tail {
				if b != tc.want {
					t.Fatalf("BP plans %v: want the last ones at %d", plans, tc.want)
				}
			}
			late := 0
			for _, b := range plans[1:] { // substream 0 is the start-up
				if b > tc.path.maxBP {
					late++
				}
			}
			if tc.path.maxBP >= 0 && late > 3 {
				t.Errorf("BP plans %v: %d substreams planned above what TCP sustains (%d); want at most 3", plans, late, tc.path.maxBP)
			}
		})
	}
}

func TestAdaptiveBPReprobesAfterOnTimeReports(t *testing.T) {
	var a adaptiveBP
	a.init(BPAuto)
	drive(&a, pathModel{50, true}, 8, 2) // learns the ceiling 75
	if a.ceiling != 75 || a.bp != 50 {
		t.Fatalf("ceiling %d, BP %d: want 75 and 50", a.ceiling, a.bp)
	}
	// The path gets better: after reprobeAfter on-time reports BP climbs again.
	plans := drive(&a, pathModel{100, true}, 3*reprobeAfter, 0)
	if plans[len(plans)-1] != 100 {
		t.Errorf("BP plans on a better path %v: want it back at 100", plans)
	}

	// A path that stays bad is probed ever more rarely: over 100 substreams
	// at most a handful of late ones.
	var b adaptiveBP
	b.init(BPAuto)
	plans = drive(&b, pathModel{25, true}, 100, 2)
	late := 0
	for _, p := range plans[1:] { // substream 0 is the start-up
		if p > 25 {
			late++
		}
	}
	if late > 12 {
		t.Errorf("%d of 100 substreams planned above what TCP sustains: %v", late, plans)
	}
}

func TestAdaptiveBPDoesNotClimbOnTheStartup(t *testing.T) {
	var a adaptiveBP
	a.init(BPAuto)
	a.value()
	a.value()
	a.report(Report{Substream: 0, Lost: 5, Expected: 1000}) // the start-up: on time by definition
	if a.bp != bpStart {
		t.Errorf("BP %d after substream 0's report, want %d", a.bp, bpStart)
	}
	a.report(Report{Substream: 1, Lost: 5, Expected: 1000})
	if a.bp != bpStart+bpStep {
		t.Errorf("BP %d after substream 1's report, want %d", a.bp, bpStart+bpStep)
	}
}

func TestFixedBPIgnoresReports(t *testing.T) {
	var a adaptiveBP
	a.init(25)
	plans := drive(&a, pathModel{0, true}, 6, 1)
	if !slices.Equal(plans, []int{25, 25, 25, 25, 25, 25}) {
		t.Errorf("fixed BP moved: %v", plans)
	}
}

func TestAdaptiveBPJudgesTheBPTheSubstreamHad(t *testing.T) {
	var a adaptiveBP
	a.init(BPAuto)
	a.value()                               // substream 0 at 50
	a.report(Report{Lost: 1, Expected: 10}) // (a report of nothing planned yet)
	a.value()                               // substream 1 at 75
	a.value()                               // substream 2 at 75
	a.report(Report{Substream: 0, LateMS: 100})
	if a.ceiling != 50 || a.bp != 25 {
		t.Errorf("late report of substream 0 (planned at 50): ceiling %d BP %d, want 50 and 25", a.ceiling, a.bp)
	}
	a.report(Report{Substream: 99, LateMS: 100}) // never planned: judged by today's BP
	if a.ceiling != 25 || a.bp != 0 {
		t.Errorf("unknown substream: ceiling %d BP %d, want 25 and 0", a.ceiling, a.bp)
	}
}
