package server

import (
	"testing"
	"time"

	"github.com/streambed/streambed/internal/netutil"
)

// The collapse rule, a pure function of one TCP_INFO sample, the connection's peak
// and the track's bitrate: both conditions must hold.
func TestPacingCollapsed(t *testing.T) {
	const mbit = 1_000_000 / 8 // bytes/s
	for _, tc := range []struct {
		name  string
		rate  uint64 // pacing, bytes/s
		peak  uint64
		track int // bit/s
		want  bool
	}{
		{"the lab's collapse: 4.2 Mbit/s to 32 kbit/s, a 1.5 Mbit/s part", 32_000 / 8, 42 * mbit / 10, 1_500_000, true},
		{"fell 10x but still twice the track's bitrate", 4 * mbit, 40 * mbit, 1_500_000, false},
		{"under the track's bitrate but never fast (a slow path)", mbit / 2, 2 * mbit, 1_500_000, false},
		{"exactly an eighth of the peak is not under it", 1 * mbit / 8, 1 * mbit, 1_500_000, false},
		{"first sample: no peak yet", 1000, 0, 1_500_000, false},
		{"no pacing rate reported", 0, 40 * mbit, 1_500_000, false},
		{"a track of unknown bitrate", 1000, 40 * mbit, 0, false},
		{"audio: 64 kbit/s needs 16 KB/s, has 10", 10_000, 10 * mbit, 64_000, true},
	} {
		if got := pacingCollapsed(netutil.Pacing{Rate: tc.rate}, tc.peak, tc.track); got != tc.want {
			t.Errorf("%s: collapsed %v, want %v", tc.name, got, tc.want)
		}
	}
}

// decide keeps the peak and restarts a collapsed connection at most once per
// max(8 srtt, 1 s).
func TestPacingDecide(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)
	fast := netutil.Pacing{Rate: 1 << 20, RTT: 50 * time.Millisecond}
	slow := netutil.Pacing{Rate: 4000, RTT: 50 * time.Millisecond}
	var st pacingState
	steps := []struct {
		p                  netutil.Pacing
		at                 time.Duration
		collapsed, restart bool
	}{
		{fast, 0, false, false},
		{slow, 100 * time.Millisecond, true, true},
		{slow, 900 * time.Millisecond, true, false}, // within a second of the restart
		{fast, 1000 * time.Millisecond, false, false},
		{slow, 1100 * time.Millisecond, true, true},
		{netutil.Pacing{Rate: 4000, RTT: 400 * time.Millisecond}, 3 * time.Second, true, false}, // 8 srtt = 3.2 s
		{netutil.Pacing{Rate: 4000, RTT: 400 * time.Millisecond}, 4400 * time.Millisecond, true, true},
	}
	for i, s := range steps {
		c, r := st.decide(s.p, 1_500_000, t0.Add(s.at))
		if c != s.collapsed || r != s.restart {
			t.Errorf("step %d (rate %d at %s): collapsed %v restart %v, want %v %v", i, s.p.Rate, s.at, c, r, s.collapsed, s.restart)
		}
	}
	if st.peak != 1<<20 {
		t.Errorf("peak %d, want the fastest sample's %d", st.peak, 1<<20)
	}
}
