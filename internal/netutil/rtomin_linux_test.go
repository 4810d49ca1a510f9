package netutil

import (
	"context"
	"net"
	"testing"
	"time"
)

// An accepted connection inherits the listener's RTO minimum; 0 leaves the kernel's
// (200 ms); out-of-range values are refused with a clear error.
func TestListenRTOMin(t *testing.T) {
	for _, tc := range []struct {
		set, want time.Duration
	}{
		{50 * time.Millisecond, 50 * time.Millisecond},
		{0, 200 * time.Millisecond},
	} {
		l, err := ListenRTOMin(context.Background(), "tcp", "127.0.0.1:0", tc.set)
		if err != nil {
			t.Fatalf("set %s: %v", tc.set, err)
		}
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		// The kernel keeps it in jiffies (4 ms at HZ=250, 10 ms at HZ=100), rounded up.
		if got := RTOMin(s); got < tc.want || got >= tc.want+10*time.Millisecond {
			t.Errorf("set %s: accepted connection's RTO minimum %s, want %s (to a jiffy)", tc.set, got, tc.want)
		}
		s.Close()
		c.Close()
		l.Close()
	}
	for _, bad := range []time.Duration{time.Microsecond, 201 * time.Millisecond} {
		if l, err := ListenRTOMin(context.Background(), "tcp", "127.0.0.1:0", bad); err == nil {
			l.Close()
			t.Errorf("%s: want an error", bad)
		}
	}
}
