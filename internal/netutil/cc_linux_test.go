package netutil

import (
	"context"
	"net"
	"strings"
	"testing"
)

// An accepted connection inherits the listener's congestion control; "" keeps the
// system's; an unknown name is refused with a clear error.
func TestListenTCPCongestion(t *testing.T) {
	for _, cc := range []string{"reno", ""} { // reno is built into every Linux kernel
		l, err := ListenTCP(context.Background(), "tcp", "127.0.0.1:0", 0, cc)
		if err != nil {
			t.Fatalf("cc %q: %v", cc, err)
		}
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		got := Congestion(s)
		if cc != "" && got != cc || cc == "" && got == "" {
			t.Errorf("cc %q: accepted connection's congestion control %q", cc, got)
		}
		s.Close()
		c.Close()
		l.Close()
	}
	_, err := ListenTCP(context.Background(), "tcp", "127.0.0.1:0", 0, "no-such-cc")
	if err == nil || !strings.Contains(err.Error(), "no-such-cc") {
		t.Errorf("unknown congestion control: err %v, want one naming it", err)
	}
}
