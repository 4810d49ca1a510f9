package load

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestSoakShort is the short soak: every kind of viewer at once against the real
// origin for 40 s, sessions of 3–9 s (so each slot joins and leaves several times),
// a third of them vanishing (TCP reset without a WebSocket close, or in the middle of
// a response), one slot of each kind reading at half the stream's bitrate. It asserts
// what does not depend on the machine's speed: no healthy viewer skipped or failed,
// every kind received segments, and once all viewers left the process (origin and
// viewers: they share it here) is back to its goroutines and descriptors of before,
// within settleSlack; every healthy stall and error is in the time-stamped event log,
// and the once-a-second timeline covers the run. Stalls and response times are
// logged, not asserted.
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("the short soak runs 40 s; skipped with -short")
	}
	addr := origin(t)
	ctx := context.Background()
	target, err := Resolve(ctx, "ws://"+addr+"/ws/live", []string{"v180", "a64"}, false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunSoak(ctx, SoakOptions{
		Target:   target,
		Viewers:  map[string]int{WS: 4, HTTP1: 4, HTTP2: 3, SoakHLS: 3},
		Duration: 40 * time.Second, Ramp: 4 * time.Second, Session: 6 * time.Second,
		Vanish: 0.33, Slow: 0.25, Sample: time.Second, Settle: 30 * time.Second, Seed: 13,
	})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(struct {
		Kinds         []*SoakKind
		Baseline      OriginSample
		After         OriginSample
		Slopes        []Slope
		SettledS      float64
		MinutesLogged int
	}{res.Kinds, res.Baseline, res.After, res.Slopes, res.SettledS, len(res.Minutes)})
	t.Logf("%s", js)
	vanished, slow := 0, 0
	for _, k := range res.Kinds {
		if k.Skips != 0 || k.Errors != 0 {
			t.Errorf("%s: healthy viewers skipped %d, failed %d: %v", k.Kind, k.Skips, k.Errors, k.ErrorLog)
		}
		if k.Segments == 0 || k.Sessions <= k.Viewers {
			t.Errorf("%s: %d segments in %d sessions of %d slots: viewers did not watch, or did not rejoin", k.Kind, k.Segments, k.Sessions, k.Viewers)
		}
		if k.Stalls > 0 {
			t.Logf("%s: %d stalls of healthy viewers (a measurement on a shared machine, not asserted)", k.Kind, k.Stalls)
		}
		vanished += k.Vanished
		slow += k.Slow
	}
	if vanished == 0 || slow == 0 {
		t.Errorf("the mix lacked vanishing (%d) or slow (%d) viewers", vanished, slow)
	}
	if len(res.Kinds) != 4 {
		t.Errorf("%d kinds ran", len(res.Kinds))
	}
	b, a := res.Baseline, res.After
	if a.Goroutines > b.Goroutines+settleSlack || a.OpenFDs > b.OpenFDs+settleSlack {
		t.Errorf("not back to the baseline after every viewer left: goroutines %v → %v, descriptors %v → %v", b.Goroutines, a.Goroutines, b.OpenFDs, a.OpenFDs)
	}
	// Every healthy stall and error is in the event log, time-stamped and classified.
	stalls, errs := 0, 0
	for _, k := range res.Kinds {
		stalls += k.Stalls
		errs += k.Errors
		if k.StallsStarved > k.Stalls {
			t.Errorf("%s: %d of %d stalls starved", k.Kind, k.StallsStarved, k.Stalls)
		}
	}
	evStalls, evErrs := 0, 0
	for _, e := range res.Events {
		switch e.Event {
		case "stall":
			evStalls++
			if e.Cause != CauseViewerStarved && e.Cause != CauseOrigin || e.GapS <= res.StallAfterS {
				t.Errorf("stall event %+v", e)
			}
		case "error":
			evErrs++
		}
		if e.T < 0 || e.T > res.DurationS+60 {
			t.Errorf("event out of the run: %+v", e)
		}
	}
	if evStalls != stalls || evErrs != errs {
		t.Errorf("events: %d stalls, %d errors; counts: %d stalls, %d errors", evStalls, evErrs, stalls, errs)
	}
	if len(res.Pulse) < int(res.DurationS/2) {
		t.Errorf("%d seconds of the timeline in a %v s run", len(res.Pulse), res.DurationS)
	}
	var dials int64
	established := 0
	for _, p := range res.Pulse {
		dials += p.Dials
		if p.Sockets != nil {
			established = max(established, p.Sockets.Established)
		}
	}
	if dials == 0 || established == 0 {
		t.Errorf("the timeline saw %d dials and at most %d established origin sockets", dials, established)
	}
	if len(res.Minutes) == 0 || res.Minutes[0].All.N == 0 {
		t.Errorf("no response times recorded: %+v", res.Minutes)
	}
}

func TestFitLine(t *testing.T) {
	b, mean, r2, ok := fitLine([]float64{0, 1, 2, 3}, []float64{1, 3, 5, 7})
	if !ok || b != 2 || mean != 4 || r2 < 0.999 {
		t.Errorf("fit %v %v %v %v", b, mean, r2, ok)
	}
	if _, _, _, ok := fitLine([]float64{1, 1, 1}, []float64{1, 2, 3}); ok {
		t.Error("a fit with no spread in x")
	}
	sl := slopes([]OriginSample{{T: 0, Phase: "ramp", Goroutines: 99}, {T: 10, Phase: "steady", Goroutines: 10}, {T: 20, Phase: "steady", Goroutines: 10}, {T: 30, Phase: "steady", Goroutines: 10}}, 5, 40)
	if sl[0].Metric != "goroutines" || sl[0].PerHour != 0 || sl[0].Samples != 3 || sl[0].Mean != 10 {
		t.Errorf("slopes %+v", sl[0])
	}
}

func TestPercentiles(t *testing.T) {
	var v []float32
	for i := 1; i <= 100; i++ {
		v = append(v, float32(i))
	}
	p := percentiles(v)
	if p.N != 100 || p.P50 != 51 || p.P99 != 100 || p.Max != 100 {
		t.Errorf("%+v", p)
	}
	if percentiles(nil).N != 0 {
		t.Error("empty")
	}
}
