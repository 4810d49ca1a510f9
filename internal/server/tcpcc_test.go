//go:build linux

package server

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/netutil"
)

// The listeners' connections get the configured congestion control (serve --tcp-cc);
// an unknown one is refused at start with a clear error.
func TestListenTCPCongestion(t *testing.T) {
	cfg := DefaultConfig()
	cfg.HTTP, cfg.HTTPS, cfg.TCPCongestion = "127.0.0.1:0", "", "reno" // reno: in every Linux kernel
	s := New(cfg, hub.New(), slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
	ls, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer ls.HTTP.Close()
	c, err := net.Dial("tcp", ls.HTTP.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, err := ls.HTTP.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if got := netutil.Congestion(a); got != "reno" {
		t.Errorf("accepted connection's congestion control %q, want reno", got)
	}

	cfg.TCPCongestion = "no-such-cc"
	if _, err := New(cfg, hub.New(), slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now).Listen(); err == nil || !strings.Contains(err.Error(), "no-such-cc") {
		t.Errorf("unknown congestion control: err %v, want one naming it", err)
	}
}
