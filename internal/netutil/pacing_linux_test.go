package netutil

import (
	"context"
	"io"
	"net"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// needBBR skips where the kernel has no BBR (a kernel module, not a package the
// Makefile could install), saying so.
func needBBR(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil || !strings.Contains(" "+strings.TrimSpace(string(b))+" ", " bbr ") {
		t.Skipf("this kernel offers no BBR (tcp_available_congestion_control: %q, %v): the re-init's effect on BBR cannot be shown", b, err)
	}
}

// A BBR sender whose pacing was held low (its estimate learnt under a pacing cap,
// as a collapsed estimate is) paces far faster once its congestion control is
// re-initialised, and keeps its algorithm: the pacing guard's premise, on a real
// socket. SO_MAX_PACING_RATE caps the rate while BBR learns; raising the cap again
// does not raise sk_pacing_rate (the kernel only lowers it there), so the low rate
// stands until BBR itself changes it: as after a collapse.
func TestReinitCongestionRestartsBBRPacing(t *testing.T) {
	needBBR(t)
	l, err := ListenTCP(context.Background(), "tcp", "127.0.0.1:0", 0, "bbr")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	const sent = 1 << 20 // half a second at the cap
	received := make(chan error, 1)
	go func() {
		_, err := io.CopyN(io.Discard, client, sent)
		received <- err
	}()

	rc := RawConnOf(server)
	if rc == nil {
		t.Fatal("no raw connection beneath a TCP connection")
	}
	const capRate = 2 << 20 // bytes/s
	setMaxPacing := func(v uint64) {
		t.Helper()
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptUint64(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, v)
		}); err != nil || serr != nil {
			t.Fatalf("SO_MAX_PACING_RATE: %v %v", err, serr)
		}
	}
	setMaxPacing(capRate)
	if _, err := server.Write(make([]byte, sent)); err != nil {
		t.Fatal(err)
	}
	if err := <-received; err != nil { // all delivered: the connection is idle
		t.Fatal(err)
	}
	setMaxPacing(^uint64(0)) // no cap: the rate BBR learnt stays until it changes it
	before, err := ReadPacing(rc)
	if err != nil {
		t.Fatal(err)
	}
	if before.Rate == 0 || before.Rate > capRate {
		t.Fatalf("pacing before the re-init %d B/s: want 0 < rate <= the cap %d", before.Rate, capRate)
	}
	if name, done, err := ReinitCongestion(rc, "cubic"); err != nil || done || name != "bbr" {
		t.Fatalf("re-init of cubic only: name %q, done %v, err %v; want bbr left alone", name, done, err)
	}
	name, done, err := ReinitCongestion(rc, "bbr")
	if err != nil || !done {
		t.Fatalf("re-init: done %v, err %v", done, err)
	}
	after, err := ReadPacing(rc)
	if err != nil {
		t.Fatal(err)
	}
	if name != "bbr" || Congestion(server) != "bbr" {
		t.Errorf("congestion control after the re-init %q (read back %q), want bbr", name, Congestion(server))
	}
	// bbr_init paces at 2.89 × cwnd × mss / srtt: on loopback (srtt well under a
	// millisecond, 64 KiB segments) far above the cap the estimate was learnt under.
	if after.Rate < 4*before.Rate {
		t.Errorf("pacing %d B/s before the re-init, %d after (cwnd %d, mss %d, rtt %s): want a restart at BBR's high gain, at least 4× faster",
			before.Rate, after.Rate, after.Cwnd, after.MSS, after.RTT)
	}
	t.Logf("pacing %d → %d B/s (cwnd %d, mss %d, srtt %s)", before.Rate, after.Rate, after.Cwnd, after.MSS, after.RTT)
}

// A connection that is not a socket has nothing to read; a wrapper's NetConn is
// looked through.
func TestRawConnOf(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if RawConnOf(a) != nil {
		t.Error("net.Pipe has a raw connection?")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if RawConnOf(wrapped{c}) == nil {
		t.Error("no raw connection through NetConn")
	}
}

type wrapped struct{ net.Conn }

func (w wrapped) NetConn() net.Conn { return w.Conn }
