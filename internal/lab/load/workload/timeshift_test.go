package workload

import (
	"context"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/source/looplive"
)

// lagOf is how many segments behind the live edge a video request was when it
// reached the origin: the newest complete segment at its arrival minus its number.
// The test channel's segment n is complete at the anchor + (n+1)·segment.
func lagOf(v videoRequest) int64 {
	newest := int64(v.at.Sub(looplive.DefaultAvailabilityStart)/segment) - 1
	return newest - int64(v.number)
}

// TestTimeShiftedSessions: with half the sessions time-shifted by up to 20 segments,
// the origin sees requests at each of the five offsets (2, 4, … 10 segments behind the
// edge) beside the live ones, never further behind than the largest offset, and the
// shifted sessions keep a player's mix (two inits, as many audio as video segments).
func TestTimeShiftedSessions(t *testing.T) {
	base, log := origin(t)
	const n = 10
	r, err := Run(context.Background(), Options{Mode: ModeDASH, URL: base + "/live/live/manifest.mpd", Workers: n,
		Duration: 4 * time.Second, TimeShiftShare: 0.5, TimeShift: 20 * segment})
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstOrigin(t, r, log)
	checkMix(t, r, n, 1)
	if r.Sessions.TimeShifted != n/2 {
		t.Errorf("%d time-shifted sessions, want %d", r.Sessions.TimeShifted, n/2)
	}
	if s := r.Settings[0]; s.TimeShiftShare != 0.5 || s.TimeShiftS != (20*segment).Seconds() {
		t.Errorf("settings %+v do not record the time shift", r.Settings)
	}
	log.mu.Lock()
	byLag := map[int64]int{}
	for _, v := range log.video {
		byLag[lagOf(v)]++
	}
	log.mu.Unlock()
	// ±1 segment: a request that crosses a segment boundary on its way is counted
	// against the next edge.
	near := func(k int64) int { return byLag[k-1] + byLag[k] + byLag[k+1] }
	for _, k := range []int64{0, 2, 4, 6, 8, 10} {
		if near(k) == 0 {
			t.Errorf("no video request %d segments behind the edge; requests by lag: %v", k, byLag)
		}
	}
	for lag, c := range byLag {
		if lag > 11 || lag < -1 {
			t.Errorf("%d video requests %d segments behind the edge, outside 0–10 (±1); by lag: %v", c, lag, byLag)
		}
	}
}

// TestTimeShiftKeptInDVRWindow: an offset longer than the DVR window (20 s) starts at
// the oldest segment still listed, not at one already gone (which would be a 410).
func TestTimeShiftKeptInDVRWindow(t *testing.T) {
	base, log := origin(t)
	r, err := Run(context.Background(), Options{Mode: ModeDASH, URL: base + "/live/live/manifest.mpd", Workers: 10,
		Duration: 3 * time.Second, TimeShiftShare: 1, TimeShift: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstOrigin(t, r, log)
	if len(r.Errors) > 0 || r.Sessions.TimeShifted != 10 {
		t.Errorf("errors %v, time-shifted %d: want none and 10", r.Errors, r.Sessions.TimeShifted)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	window := int64(20 * time.Second / segment)
	for _, v := range log.video {
		if lag := lagOf(v); lag >= window {
			t.Errorf("segment %d asked %d segments behind the edge, outside the %d-segment DVR window", v.number, lag, window)
		}
	}
}

func TestShiftOf(t *testing.T) {
	o := Options{TimeShiftShare: 0.25, TimeShift: 10 * time.Second}
	var got []time.Duration
	for i := range 12 {
		got = append(got, o.shiftOf(i))
	}
	// Every fourth session is shifted, the j-th by (j mod 10 + 1)/10 of the offset.
	want := []time.Duration{0, 0, 0, time.Second, 0, 0, 0, 2 * time.Second, 0, 0, 0, 3 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("shifts %v, want %v", got, want)
		}
	}
	if (&Options{}).shiftOf(3) != 0 {
		t.Error("no share: a session was shifted")
	}
}
