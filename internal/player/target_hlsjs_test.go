package player

import (
	"testing"
	"time"

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
