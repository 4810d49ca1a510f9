package pushclient

import (
	"testing"
	"time"
)

func TestBusyScalesTheBurstsToTheBody(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name        string
		body, bytes int
		burst, want time.Duration
	}{
		{"bursts of 45000 B in 15 ms, a 60000 B body", 60000, 45000, 15 * ms, 20 * ms},
		{"too few bytes in bursts", 60000, 4000, 5 * ms, 0},
		{"no burst time", 60000, 45000, 0, 0},
	}
	for _, tc := range tests {
		s := &Stream{Body: make([]byte, tc.body), burstBytes: int64(tc.bytes), burstTime: int64(tc.burst)}
		if got := s.Busy(); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
