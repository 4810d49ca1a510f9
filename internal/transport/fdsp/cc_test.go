package fdsp

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a log sink the server's goroutines write to while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestConfigCongestionControl serves a session with each configured congestion
// control and reads TCP_CONGESTION back from the server's accepted socket (the
// session's log line carries it): empty config means cubic, whatever the machine's
// default (BBR here).
func TestConfigCongestionControl(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("TCP_CONGESTION is Linux's")
	}
	h := testAsset(t)
	for _, tc := range []struct{ cc, want string }{{"", "cubic"}, {"cubic", "cubic"}, {"reno", "reno"}} {
		t.Run("cc="+tc.cc, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var logs syncBuffer
			s := startServer(t, h, Options{Substream: time.Second, Listen: Config{CC: tc.cc}.listen(ctx), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			st, err := Play(ctx, ClientOptions{Addr: s.Addr().String(), Stream: "vod/asset", Mode: ModeTCP, Duration: 1500 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if st.Substreams == 0 {
				t.Fatalf("no substream played: %+v", st)
			}
			if !strings.Contains(logs.String(), "tcp_cc="+tc.want) {
				t.Fatalf("want tcp_cc=%s in the session log:\n%s", tc.want, logs.String())
			}
		})
	}
	if (Config{CC: "system"}).listen(context.Background()) != nil {
		t.Fatal(`cc "system" must keep the kernel's default (no TCP_CONGESTION)`)
	}
}

// TestConfigCongestionControlErrors: an unknown name is a clear error at start,
// and an IPv6 address still listens (serve's --fdsp [::]:9710).
func TestConfigCongestionControlErrors(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("TCP_CONGESTION is Linux's")
	}
	ctx := context.Background()
	if _, err := (Config{CC: "no-such-cc"}).listen(ctx)("tcp", "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "fdsp.cc") {
		t.Fatalf("unknown congestion control: %v", err)
	}
	ln, err := (Config{}).listen(ctx)("tcp", "[::1]:0")
	if err != nil {
		if strings.Contains(err.Error(), "cannot assign") || strings.Contains(err.Error(), "address family") {
			t.Skipf("no IPv6 loopback here: %v", err)
		}
		t.Fatal(err)
	}
	ln.Close()
}
