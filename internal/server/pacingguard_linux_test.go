//go:build linux

package server

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/netutil"
)

// The pacing guard on a real origin (Serve: the lean path, net/http after a
// hand-off, h2c) and real BBR sockets on loopback. A connection's collapse is made
// with SO_MAX_PACING_RATE on the origin's own socket: set, it lowers the socket's
// pacing rate at once; lifted, the low rate stays until BBR changes it, and an idle
// connection gives BBR nothing to change it with, as after the lab's collapses.
func TestPacingGuardRestartsCollapsedConnection(t *testing.T) {
	needBBRServer(t)
	for _, tc := range []struct {
		name, proto, path string
	}{
		{"HTTP/1.1 part (net/http after the lean path's hand-off)", "HTTP/1.1", "/live/ll/v/1.0.m4s"},
		{"HTTP/1.1 live segment (the lean path)", "HTTP/1.1", "/live/ll/v/0.m4s"},
		{"h2c part", "h2c", "/live/ll/v/1.0.m4s"},
		{"HTTP/1.1 blocking playlist reload", "HTTP/1.1", "/live/ll/v/playlist.m3u8?_HLS_msn=1&_HLS_part=0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := startGuardedOrigin(t, true)
			client := o.client(tc.proto)
			o.get(t, client, tc.path) // the connection's peak: loopback's fast pacing
			sc := o.serverConn(t)
			if n := o.reinits(t); n != 0 {
				t.Fatalf("%g restarts before any collapse", n)
			}
			o.collapse(t, sc)
			o.get(t, client, tc.path)
			if n := o.reinits(t); n != 1 {
				t.Fatalf("restarts after a collapse: %g, want 1", n)
			}
			if cc := netutil.Congestion(sc); cc != "bbr" {
				t.Errorf("congestion control after the restart %q, want bbr", cc)
			}
			if p := pacingOf(t, sc); p.Rate <= collapsedRate*4 {
				t.Errorf("pacing after the restart %d B/s, want far above the collapsed %d", p.Rate, collapsedRate)
			}
			// Collapsed again at once: counted, not restarted (one a second);
			// a second later it is.
			o.collapse(t, sc)
			o.get(t, client, tc.path)
			if r, c := o.reinits(t), o.collapses(t); r != 1 || c != 2 {
				t.Errorf("collapsed again within a second: %g restarts, %g collapses; want 1, 2", r, c)
			}
			o.advance(2 * time.Second)
			o.collapse(t, sc)
			o.get(t, client, tc.path)
			if n := o.reinits(t); n != 2 {
				t.Errorf("restarts a second later: %g, want 2", n)
			}
		})
	}
}

// With the guard off (serve --tcp-pacing-guard=false) a collapsed connection stays
// collapsed and /metrics has no guard counters.
func TestPacingGuardOff(t *testing.T) {
	needBBRServer(t)
	o := startGuardedOrigin(t, false)
	client := o.client("HTTP/1.1")
	o.get(t, client, "/live/ll/v/1.0.m4s")
	sc := o.serverConn(t)
	o.collapse(t, sc)
	o.get(t, client, "/live/ll/v/1.0.m4s")
	if p := pacingOf(t, sc); p.Rate > collapsedRate {
		t.Errorf("pacing with the guard off %d B/s, want the collapsed %d kept", p.Rate, collapsedRate)
	}
	fams, err := o.s.metrics.reg.Gather()
	must(t, err)
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "streambed_tcp_pacing_") {
			t.Errorf("guard off, yet /metrics has %s", f.GetName())
		}
	}
}

// The guard is on by default (serve's default configuration).
func TestPacingGuardDefault(t *testing.T) {
	if !DefaultConfig().TCPPacingGuard {
		t.Error("the pacing guard is off by default")
	}
}

// collapsedRate is the pacing a test collapses a connection to: under an eighth of
// loopback's and under twice the test track's 1.5 Mbit/s.
const collapsedRate = 20_000 // bytes/s

func needBBRServer(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil || !strings.Contains(" "+strings.TrimSpace(string(b))+" ", " bbr ") {
		t.Skipf("this kernel offers no BBR (tcp_available_congestion_control: %q, %v): the guard restarts only BBR", b, err)
	}
}

// guardedOrigin is a served origin whose accepted sockets the test can reach.
type guardedOrigin struct {
	s        *Server
	base     string
	accepted chan net.Conn
	now      atomic.Int64 // the guard's clock, Unix nanoseconds: set by the test, read by the origin
}

func (o *guardedOrigin) advance(d time.Duration) { o.now.Add(int64(d)) }

func startGuardedOrigin(t testing.TB, on bool) *guardedOrigin {
	t.Helper()
	const d = time.Second
	tracks := []*media.Track{{ID: "v", Kind: media.Video, Codec: "avc1.64001f", Bandwidth: 1_500_000, Width: 1280, Height: 720, FrameRate: "25", Timescale: 1000}}
	c, err := hub.NewChannel(hub.ChannelConfig{
		Info:     &media.Stream{Name: "ll", SegmentDuration: d, Tracks: tracks},
		Inits:    map[string][]byte{"v": []byte("vinit")},
		Timeline: media.Timeline{AvailabilityStart: time.Now().Add(-time.Minute), SegmentDuration: d, TimeShiftBufferDepth: 10 * d},
	})
	must(t, err)
	h := hub.New()
	must(t, h.AddChannel(context.Background(), c, nil))
	for n := range uint64(2) { // segments 0 and 1 complete, 250 ms parts
		for i := range uint64(4) {
			must(t, c.AppendChunk("v", n, chunkOf(n, i, 1000), i == 3))
		}
	}
	cfg := DefaultConfig()
	cfg.HTTP, cfg.HTTPS, cfg.TCPCongestion, cfg.TCPPacingGuard = "127.0.0.1:0", "", "bbr", on
	o := &guardedOrigin{s: New(cfg, h, slog.New(slog.NewTextHandler(io.Discard, nil)), nil),
		accepted: make(chan net.Conn, 16)}
	o.now.Store(time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC).UnixNano())
	if o.s.pacing != nil {
		o.s.pacing.clock = func() time.Time { return time.Unix(0, o.now.Load()) } // set before serving
	}
	ls, err := o.s.Listen()
	must(t, err)
	o.base = "http://" + ls.HTTP.Addr().String()
	ls.HTTP = &recordingListener{Listener: ls.HTTP, accepted: o.accepted}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.s.Serve(ctx, ls) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return o
}

// client speaks proto over one connection, kept alive.
func (o *guardedOrigin) client(proto string) *http.Client {
	tr := &http.Transport{DisableCompression: true, MaxConnsPerHost: 1}
	if proto == "h2c" {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	return &http.Client{Transport: tr}
}

// get answers path whole with 200.
func (o *guardedOrigin) get(t *testing.T, client *http.Client, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.base+path, nil)
	must(t, err)
	resp, err := client.Do(req)
	must(t, err)
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d, %v", path, resp.StatusCode, err)
	}
}

// serverConn is the origin's side of the one connection the client made.
func (o *guardedOrigin) serverConn(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c := <-o.accepted:
		return c
	case <-time.After(guard):
		t.Fatal("the origin accepted no connection")
		return nil
	}
}

// collapse sets sc's pacing to collapsedRate once every byte sent is acknowledged
// (so no ACK in flight lets BBR raise it again), the cap lifted.
func (o *guardedOrigin) collapse(t *testing.T, sc net.Conn) {
	t.Helper()
	rc := netutil.RawConnOf(sc)
	waitUntil(t, "the origin's bytes acknowledged", func() bool {
		var info *unix.TCPInfo
		must(t, rc.Control(func(fd uintptr) { info, _ = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }))
		return info != nil && info.Unacked == 0
	})
	setMaxPacing(t, rc, collapsedRate)
	setMaxPacing(t, rc, ^uint64(0))
	if p := pacingOf(t, sc); p.Rate > collapsedRate {
		t.Fatalf("pacing %d B/s after the cap: the test's collapse did not take", p.Rate)
	}
}

func setMaxPacing(t *testing.T, rc syscall.RawConn, v uint64) {
	t.Helper()
	var err error
	must(t, rc.Control(func(fd uintptr) { err = unix.SetsockoptUint64(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, v) }))
	must(t, err)
}

func pacingOf(t *testing.T, c net.Conn) netutil.Pacing {
	t.Helper()
	p, err := netutil.ReadPacing(netutil.RawConnOf(c))
	must(t, err)
	return p
}

func (o *guardedOrigin) reinits(t *testing.T) float64 {
	return o.counter(t, "streambed_tcp_pacing_reinit_total")
}

func (o *guardedOrigin) collapses(t *testing.T) float64 {
	return o.counter(t, "streambed_tcp_pacing_collapses_total")
}

func (o *guardedOrigin) counter(t *testing.T, name string) float64 {
	t.Helper()
	fams, err := o.s.metrics.reg.Gather()
	must(t, err)
	for _, f := range fams {
		if f.GetName() == name {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return 0
}

// recordingListener hands each accepted connection, unchanged, to the test too.
type recordingListener struct {
	net.Listener
	accepted chan net.Conn
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted <- c
	}
	return c, err
}

// BenchmarkPacingGuard is the guard's cost per live response: a keep-alive GET of a
// live segment over the lean path on loopback, the client included, with the guard
// on and off (the difference is one getsockopt(TCP_INFO) and a mutex); check alone
// is the guard's own work.
func BenchmarkPacingGuard(b *testing.B) {
	for _, on := range []bool{true, false} {
		name := map[bool]string{true: "on", false: "off"}[on]
		b.Run("LiveSegment/guard-"+name, func(b *testing.B) {
			o := startGuardedOrigin(b, on)
			c, err := net.Dial("tcp", strings.TrimPrefix(o.base, "http://"))
			must(b, err)
			defer c.Close()
			req := []byte("GET /live/ll/v/0.m4s HTTP/1.1\r\nHost: a\r\n\r\n")
			br := bufio.NewReaderSize(c, 64<<10)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("%d, %v", resp.StatusCode, err)
				}
			}
		})
	}
	b.Run("check", func(b *testing.B) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(b, err)
		defer l.Close()
		c, err := net.Dial("tcp", l.Addr().String())
		must(b, err)
		defer c.Close()
		g := newPacingGuard(slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
		ctx := connContext(withPacingGuard(context.Background(), g), c)
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, "/live/ll/v/1.0.m4s", nil)
		must(b, err)
		b.ReportAllocs()
		for b.Loop() {
			g.check(r, 1_500_000)
		}
	})
}
