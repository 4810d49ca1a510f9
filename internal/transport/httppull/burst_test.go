package httppull

import (
	"testing"
	"time"
)

func TestBurstMeterLeavesOutTheOriginsPauses(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name  string
		reads []struct {
			n    int
			wait time.Duration
		}
		total int64
		want  time.Duration
	}{
		{
			// Chunks of 6000 B made every 40 ms, each arriving as 4 packets 0.5 ms apart
			// on a fast link: the first packet after each pause is left out.
			name: "fast link, paced chunks",
			reads: repeat(10, []struct {
				n    int
				wait time.Duration
			}{{1500, 39 * ms}, {1500, ms / 2}, {1500, ms / 2}, {1500, ms / 2}}),
			total: 60000,
			// 45000 B in 15 ms of bursts: 60000 B take 20 ms at that rate.
			want: 20 * ms,
		},
		{
			// A link slower than the media: packets never pause long.
			name: "slow link",
			reads: repeat(20, []struct {
				n    int
				wait time.Duration
			}{{1500, 12 * ms}}),
			total: 30000,
			want:  240 * ms,
		},
		{
			// Loopback: each chunk in one read after the pause: nothing measured.
			name: "loopback",
			reads: repeat(50, []struct {
				n    int
				wait time.Duration
			}{{6000, 40 * ms}}),
			total: 300000,
			want:  0,
		},
	}
	for _, tc := range tests {
		var m burstMeter
		for _, r := range tc.reads {
			m.add(r.n, r.wait)
		}
		if got := m.busy(tc.total); got != tc.want {
			t.Errorf("%s: busy %v, want %v", tc.name, got, tc.want)
		}
	}
}

func repeat[T any](n int, xs []T) []T {
	var out []T
	for range n {
		out = append(out, xs...)
	}
	return out
}
