package player

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player/qoe"
)

// hlsjsPlayer is a player in the middle of an LL-HLS session: the playlist, loaded at
// clock time loaded, lists parts up to edge; the playhead is at pos with buffered media
// ahead of it.
func hlsjsPlayer(loaded time.Time, edge, pos, buffered time.Duration) *Player {
	p := &Player{
		manifest: &Manifest{ListedEdge: edge, PartTarget: 200 * time.Millisecond, MaxSegmentDuration: 2 * time.Second},
		ll:       &lowLatency{target: 600 * time.Millisecond, minRate: 0.95, maxRate: 1.1, hlsjs: true},
		lastLoad: loaded, playhead: pos, state: statePlaying, rate: 1,
		rec: qoe.NewRecorder(loaded, qoe.Options{}),
	}
	p.streams = []*stream{{end: pos + buffered}}
	return p
}

func TestHLSJSStart(t *testing.T) {
	loaded := t0
	tests := []struct {
		name      string
		since     time.Duration // since the playlist was loaded
		edge      time.Duration
		wantStart time.Duration
	}{
		{"just loaded: PART-HOLD-BACK behind the listed end", 0, 100 * time.Second, 100*time.Second - 600*time.Millisecond},
		{"loaded 250 ms ago: the edge moved on", 250 * time.Millisecond, 100 * time.Second, 100*time.Second - 350*time.Millisecond},
		{"long ago: one part before the listed end at most", 2 * time.Second, 100 * time.Second, 100*time.Second - 200*time.Millisecond},
	}
	for _, tc := range tests {
		clock := NewSimClock(loaded.Add(tc.since))
		p := hlsjsPlayer(loaded, tc.edge, 0, 0)
		p.clock = clock
		if got := p.hlsjsStart(); got != tc.wantStart {
			t.Errorf("%s: start %v, want %v", tc.name, got, tc.wantStart)
		}
	}
}

// TestHLSJSRate: hls.js never plays slower than real time, and faster only while
// behind its target with more than a second buffered, within a target duration.
func TestHLSJSRate(t *testing.T) {
	const edge = 100 * time.Second
	tests := []struct {
		name     string
		latency  time.Duration // the edge estimate minus the playhead
		buffered time.Duration
		want     float64
	}{
		{"on target", 600 * time.Millisecond, 300 * time.Millisecond, 1},
		{"ahead of it: no slowing down", 300 * time.Millisecond, 200 * time.Millisecond, 1},
		{"behind, little buffered", 1200 * time.Millisecond, 900 * time.Millisecond, 1},
		{"behind with more than 1 s buffered", 1800 * time.Millisecond, 1500 * time.Millisecond, 1.1},
		{"0.1 s behind with 1.1 s buffered: round(20 · 2/(1+e^-0.075))/20", 700 * time.Millisecond, 1100 * time.Millisecond, 1.05},
		{"beyond a target duration: DVR, not live", 3400 * time.Millisecond, 3 * time.Second, 1},
	}
	for _, tc := range tests {
		p := hlsjsPlayer(t0, edge, edge-tc.latency, tc.buffered)
		p.steerHLSJS(t0)
		if p.rate != tc.want {
			t.Errorf("%s: rate %v, want %v", tc.name, p.rate, tc.want)
		}
	}
}

// TestBlockingReloadsBackOffAfterFailures: reloads that block at the origin run back
// to back, but not after a failure: an origin that refuses them (down for a moment)
// is asked again after the usual back-off, not every few milliseconds, so the session
// outlives a short outage.
func TestBlockingReloadsBackOffAfterFailures(t *testing.T) {
	clock := NewSimClock(t0)
	m := manifest(2*time.Second, 0, true, rep{"v1", media.Video, 1_000_000})
	m.AvailabilityStart = clock.Now().Add(-100 * time.Second)
	m.BlockingReload, m.MinimumUpdatePeriod = true, 10*time.Millisecond
	for _, set := range m.Sets {
		for _, r := range set.Representations {
			r.InitURL, r.Index.AvailabilityStart = "", m.AvailabilityStart
		}
	}
	var loads int
	load := func(ctx context.Context, fetch FetcherFunc, u string, now time.Time) (*Manifest, error) {
		loads++
		if loads > 1 {
			return nil, fmt.Errorf("playlist: HTTP 503: %w", media.ErrUnavailable)
		}
		c := *m
		return &c, nil
	}
	n := &chunkedNet{clock: clock, chunk: 200 * time.Millisecond, rtt: 10 * time.Millisecond, m: m}
	rep, err := run(t, Config{URL: m.URL, Fetcher: n.fetcher(), Load: load, Clock: clock, Duration: 2 * time.Second})
	if err != nil {
		t.Fatalf("the session gave up within 2 s of refused reloads (%d loads): %v", loads, err)
	}
	// Back-off 100, 200, 300, 400, 500 ms...: five or six reloads in 2 s, not 200.
	if loads > 10 {
		t.Errorf("%d loads in 2 s of refused reloads: no back-off", loads)
	}
	t.Logf("%d loads, end %s", loads, rep.EndReason)
}

func TestIndependent(t *testing.T) {
	ix := &SegmentIndex{Timescale: 1000, List: []Segment{
		{URL: "9", Start: 0, Duration: 2 * time.Second},
		{URL: "10.0", Start: 2 * time.Second, Duration: 200 * time.Millisecond},
		{URL: "10.1", Start: 2200 * time.Millisecond, Duration: 200 * time.Millisecond, Dependent: true},
		{URL: "10.2", Start: 2400 * time.Millisecond, Duration: 200 * time.Millisecond, Dependent: true},
	}}
	for _, tc := range []struct{ at, want string }{{"10.2", "10.0"}, {"10.1", "10.0"}, {"10.0", "10.0"}, {"9", "9"}} {
		var seg Segment
		for _, s := range ix.List {
			if s.URL == tc.at {
				seg = s
			}
		}
		if got := ix.Independent(seg); got.URL != tc.want {
			t.Errorf("from %s: %s, want %s", tc.at, got.URL, tc.want)
		}
	}
}
