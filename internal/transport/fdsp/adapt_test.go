package fdsp

import (
	"slices"
	"testing"
	"time"
)

// The controller is driven by synthetic reports in the order a session makes
// them, no clock involved: substream k is planned, then k+1 at once (the TCP
// writer goes on as soon as k is written), and k's TCPReport arrives before k+2 is
// planned; k's play-out Report arrives before k+3 is planned.

// content is a substream's TCP bytes per BP: headers and audio, plus BP % of the
// I-frame data (about the study's fast clip in a 5 s substream).
func content(bp int) int { return 100_000 + bp*15_000 }

const (
	subDur = 5 * time.Second
	window = 5500 * time.Millisecond // from the part's first bytes to its deadline
)

// link is the TCP goodput per substream index (bytes/s) and whether UDP loses packets.
type link struct {
	rate  func(k int) float64
	lossy bool
}

func steady(r float64) func(int) float64 { return func(int) float64 { return r } }

// run plans n substreams over l and returns the plans and how many TCP parts came late.
func run(a *adaptiveBP, l link, n int) (plans []int, late int) {
	tcp := func(k int) TCPReport {
		d := time.Duration(float64(content(plans[k])) / l.rate(k) * float64(time.Second))
		r := TCPReport{Substream: uint32(k), TCPms: uint32(d.Milliseconds())}
		if k > 0 { // the start-up part sets the playout clock: no slack
			r.SlackMS, r.SlackKnown = int32((window - d).Milliseconds()), true
		}
		return r
	}
	for k := 0; k < n; k++ {
		if k >= 2 {
			r := tcp(k - 2)
			a.tcpReport(r)
			if r.SlackKnown && r.SlackMS < 0 {
				late++
			}
		}
		if k >= 3 {
			r := Report{Substream: uint32(k - 3), Expected: 1000}
			if l.lossy {
				r.Lost = 4
			}
			a.report(r)
		}
		plans = append(plans, a.plan(uint32(k), subDur, content))
	}
	return plans, late
}

// best is the BP the set point allows on a steady link of r bytes/s: the TCP
// part within 2/3 of its window.
func best(r float64) int {
	for b := 100; b > 0; b -= bpStep {
		if float64(content(b))/r <= setPoint*window.Seconds() {
			return b
		}
	}
	return 0
}

func TestAdaptiveBPSettlesAtTheHighestBPUnderTheSetPoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate float64 // bytes/s
		want int
	}{
		{"fast TCP: all I-frame data on TCP", 1_000_000, 100},
		{"TCP keeps up to 75", 350_000, 75},
		{"TCP keeps up to 50", 250_000, 50},
		{"TCP keeps up to 25", 150_000, 25},
		{"TCP too slow for any I-frame data", 40_000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if b := best(tc.rate); b != tc.want {
				t.Fatalf("test table: the set point allows %d at %.0f B/s, not %d", b, tc.rate, tc.want)
			}
			var a adaptiveBP
			a.init(BPAuto, false)
			plans, late := run(&a, link{steady(tc.rate), true}, 12)
			if plans[0] != bpStart || plans[1] != bpStart {
				t.Errorf("plans %v: the first two (before any measure) want %d", plans, bpStart)
			}
			for _, b := range plans[len(plans)-6:] {
				if b != tc.want {
					t.Fatalf("plans %v: want the last six at %d", plans, tc.want)
				}
			}
			for k := 2; k < len(plans); k++ { // up one step at a time
				if plans[k] > plans[k-1]+bpStep {
					t.Errorf("plans %v: %d → %d is more than one step up", plans, plans[k-1], plans[k])
				}
			}
			// Only the uninformed first two may be late (at 40 kB/s BP 25 is).
			if maxLate := 0; tc.rate < 100_000 {
				maxLate = 2
				if late > maxLate {
					t.Errorf("plans %v: %d TCP parts late, want at most %d", plans, late, maxLate)
				}
			} else if late > 0 {
				t.Errorf("plans %v: %d TCP parts late, want none", plans, late)
			}
		})
	}
}

func TestAdaptiveBPFollowsAPathThatChanges(t *testing.T) {
	var a adaptiveBP
	a.init(BPAuto, false)
	worse := func(k int) float64 {
		if k < 8 {
			return 1_000_000
		}
		return 150_000
	}
	plans, late := run(&a, link{worse, true}, 16)
	if plans[7] != 100 || plans[len(plans)-1] != 25 {
		t.Fatalf("plans %v: want 100 before the path gets worse at 8, 25 at the end", plans)
	}
	// The drop is one step of feedback late: substreams 8 and 9 were planned
	// before 8's TCPReport, so at most those two are late, and 10 is down.
	if late > 2 || plans[10] != 25 {
		t.Errorf("plans %v: %d late, want at most 2 and BP 25 from substream 10", plans, late)
	}

	var b adaptiveBP
	b.init(BPAuto, false)
	better := func(k int) float64 {
		if k < 6 {
			return 150_000
		}
		return 1_000_000
	}
	plans, late = run(&b, link{better, true}, 14)
	if plans[5] != 25 || plans[len(plans)-1] != 100 || late > 0 {
		t.Errorf("plans %v (%d late): want 25, then back up to 100 with none late", plans, late)
	}
}

func TestAdaptiveBPLateTCPPartMakesACeiling(t *testing.T) {
	var a adaptiveBP
	a.init(BPAuto, false)
	plans, _ := run(&a, link{steady(1_000_000), true}, 6) // up to 100
	if plans[5] != 100 {
		t.Fatalf("plans %v: want 100", plans)
	}
	// Substream 5's part came late although the goodput said it would not
	// (a loss burst): 100 is not planned again for the hold.
	a.tcpReport(TCPReport{Substream: 5, TCPms: 6000, SlackMS: -500, SlackKnown: true})
	for k := 6; k < 6+ceilingHold-1; k++ {
		if b := a.plan(uint32(k), subDur, content); b >= 100 {
			t.Fatalf("substream %d planned at %d under the ceiling 100", k, b)
		}
		a.tcpReport(TCPReport{Substream: uint32(k), TCPms: 1000, SlackMS: 4500, SlackKnown: true})
	}
	last := 0
	for k := 6 + ceilingHold; k < 6+ceilingHold+3; k++ {
		last = a.plan(uint32(k), subDur, content)
		a.tcpReport(TCPReport{Substream: uint32(k), TCPms: 1000, SlackMS: 4500, SlackKnown: true})
	}
	if last != 100 {
		t.Errorf("BP %d after the hold on a fast path: want 100 again", last)
	}
	// Late again soon after the lift: the next hold is twice as long.
	a.tcpReport(TCPReport{Substream: uint32(6 + ceilingHold + 2), TCPms: 7000, SlackMS: -100, SlackKnown: true})
	if a.hold != 2*ceilingHold || a.holdLeft != 2*ceilingHold {
		t.Errorf("hold %d (left %d) after a failed probe: want %d", a.hold, a.holdLeft, 2*ceilingHold)
	}
}

func TestAdaptiveBPDoesNotClimbOnACleanPath(t *testing.T) {
	var a adaptiveBP
	a.init(BPAuto, false)
	plans, _ := run(&a, link{steady(1_000_000), false}, 12)
	// Before the first Report (about three substreams) it climbs on the TCP
	// prediction alone; once Reports say UDP loses nothing it holds.
	for _, b := range plans[5:] {
		if b != plans[4] {
			t.Fatalf("plans %v: want it to hold from substream 4 on a clean path", plans)
		}
	}
	if plans[4] > 75 {
		t.Errorf("plans %v: climbed to %d on a clean path", plans, plans[4])
	}
}

func TestAdaptiveBPWithAClientWithoutTCPReports(t *testing.T) {
	// A client before TCPReports sends only Reports: BP stays at the start and a
	// late TCP part lowers it (the Report's lateness).
	var a adaptiveBP
	a.init(BPAuto, false)
	var plans []int
	for k := 0; k < 6; k++ {
		if k >= 3 {
			r := Report{Substream: uint32(k - 3), Lost: 3, Expected: 100}
			if k == 4 {
				r.LateMS = 300
			}
			a.report(r)
		}
		plans = append(plans, a.plan(uint32(k), subDur, content))
	}
	if !slices.Equal(plans, []int{25, 25, 25, 25, 0, 0}) {
		t.Errorf("plans %v: want 25 until substream 1's late Report, then 0", plans)
	}
}

func TestAdaptiveBPIgnoresReportsOfUnknownSubstreams(t *testing.T) {
	var a adaptiveBP
	a.init(BPAuto, false)
	a.tcpReport(TCPReport{Substream: 99, TCPms: 1, SlackMS: -1000, SlackKnown: true})
	if len(a.rates) != 0 || a.ceiling != noCeiling {
		t.Errorf("a report of a substream never planned moved the controller: rates %v ceiling %d", a.rates, a.ceiling)
	}
	if b := a.plan(0, subDur, content); b != bpStart {
		t.Errorf("BP %d, want %d", b, bpStart)
	}
	a.tcpReport(TCPReport{Substream: 0, TCPms: 0}) // a zero time: no division by zero
	if b := a.plan(1, 0, content); b < 0 || b > 100 {
		t.Errorf("BP %d out of range", b)
	}
}

func TestFixedBPIgnoresReports(t *testing.T) {
	var a adaptiveBP
	a.init(25, false)
	plans, _ := run(&a, link{steady(10_000), true}, 6)
	if !slices.Equal(plans, []int{25, 25, 25, 25, 25, 25}) {
		t.Errorf("fixed BP moved: %v", plans)
	}
}
