package fdsp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rawSession opens a session by hand: Hello, Session; the caller binds.
func rawSession(t *testing.T, s *Server, mode Mode) (net.Conn, *bufio.Reader, Session) {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := WriteFrame(c, FrameHello, Hello{Mode: mode, BP: 50, Stream: "vod/asset"}.Marshal()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	typ, p, err := ReadFrame(br)
	if err != nil || typ != FrameSession {
		t.Fatalf("want a session frame: %v %d %s", err, typ, p)
	}
	ss, err := ParseSession(p)
	if err != nil {
		t.Fatal(err)
	}
	return c, br, ss
}

func udpFrom(t *testing.T, local string, s *Server) *net.UDPConn {
	t.Helper()
	la, _ := net.ResolveUDPAddr("udp", local)
	u, err := net.DialUDP("udp", la, s.UDPAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	return u
}

// waitFor polls cond (the server's state changes on its own goroutines).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestBadDatagramsAndBinding: malformed, truncated and unknown-token datagrams are
// dropped and counted; a bind from another address than the TCP peer's, or from a
// second port once bound, is never accepted; the session still streams.
func TestBadDatagramsAndBinding(t *testing.T) {
	s := startServer(t, testAsset(t), Options{Substream: 2 * time.Second})
	c, br, ss := rawSession(t, s, ModeFDSP)
	junk := udpFrom(t, "127.0.0.1:0", s)
	bind := AppendBind(nil, ss.Token)
	for _, d := range [][]byte{{}, {1}, bind[:10], append(bind, 0), AppendBind(nil, Token{9}), seedDatagrams()[0]} {
		_, _ = junk.Write(d)
	}
	// 127.0.0.2 is loopback too, but not the TCP peer's address.
	_, _ = udpFrom(t, "127.0.0.2:0", s).Write(bind)
	waitFor(t, "7 rejected datagrams", func() bool { return s.Rejected.Load() == 7 })
	if s.Bound.Load() != 0 {
		t.Fatal("a bad datagram bound the session")
	}
	good := udpFrom(t, "127.0.0.1:0", s)
	_, _ = good.Write(bind)
	if typ, _, err := ReadFrame(br); err != nil || typ != FrameBound {
		t.Fatalf("want bound: %v %d", err, typ)
	}
	_, _ = junk.Write(bind) // same address, another port: refused
	waitFor(t, "the second port's bind refused", func() bool { return s.Rejected.Load() == 8 })
	// The session streams to the bound peer only.
	_ = good.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2048)
	n, err := good.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := ParseRTP(buf[:n]); err != nil || f.SSRC != ss.SSRC {
		t.Fatalf("first datagram: %v (SSRC %x, want %x)", err, f.SSRC, ss.SSRC)
	}
	c.Close()
}

// TestRefusedHellos: an unknown token, an unknown stream and garbage get an error
// frame, not a session.
func TestRefusedHellos(t *testing.T) {
	s := startServer(t, testAsset(t), Options{})
	for name, h := range map[string][]byte{
		"unknown token":  Hello{Token: Token{1}, Stream: "vod/asset"}.Marshal(),
		"unknown stream": Hello{Stream: "vod/nope"}.Marshal(),
		"bad path":       Hello{Stream: "asset"}.Marshal(),
		"garbage":        []byte("GET / HTTP/1.1\r\n\r\n"),
	} {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = WriteFrame(c, FrameHello, h)
		typ, p, err := ReadFrame(bufio.NewReader(c))
		c.Close()
		if err != nil || typ != FrameError {
			t.Fatalf("%s: %v type %d", name, err, typ)
		}
		t.Logf("%s: %s", name, p)
	}
	if s.Sessions() != 0 {
		t.Fatalf("%d sessions kept", s.Sessions())
	}
}

// cutConn drops the connection after it has read limit bytes, once.
type cutConn struct {
	net.Conn
	left int
}

func (c *cutConn) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.Conn.Close()
		return 0, errors.New("cut by the test")
	}
	if len(p) > c.left {
		p = p[:c.left]
	}
	n, err := c.Conn.Read(p)
	c.left -= n
	return n, err
}

// TestTCPDropResumes cuts the TCP path in the middle of the second substream's
// TCP part: the client reconnects with its token, the server resumes at the next
// substream on the same UDP peer, and the stream still plays and decodes.
func TestTCPDropResumes(t *testing.T) {
	s := startServer(t, testAsset(t), Options{Substream: 2 * time.Second})
	var dials atomic.Int32
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil && dials.Add(1) == 1 {
			return &cutConn{Conn: c, left: 60000}, nil // the first part is ~45 kB
		}
		return c, err
	}
	var out bytes.Buffer
	st, err := Play(context.Background(), ClientOptions{Addr: s.Addr().String(), Stream: "vod/asset", Mode: ModeFDSP, BP: 50, Output: &out, Dial: dial})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", st)
	if st.Reconnects != 1 || st.Skipped != 1 || st.Substreams != 3 || st.EndReason != "ended" {
		t.Fatalf("reconnects %d, skipped %d, played %d substreams (want 1, 1, 3)", st.Reconnects, st.Skipped, st.Substreams)
	}
	if s.Bound.Load() != 1 {
		t.Fatalf("%d UDP binds (the resumed session keeps its peer)", s.Bound.Load())
	}
	frames, log := ffmpegFrames(t, out.Bytes())
	if frames != st.AUs {
		t.Fatalf("decoded %d of %d frames:\n%s", frames, st.AUs, log)
	}
}

// TestClientNeverReads: a client that opens a pure-TCP session and never reads
// loses its connection to the write timeout, while another client plays to the
// end; afterwards no session goroutine is left.
func TestClientNeverReads(t *testing.T) {
	before := runtime.NumGoroutine()
	s := startServer(t, testAsset(t), Options{Substream: 2 * time.Second, WriteTimeout: 500 * time.Millisecond, ResumeWindow: 100 * time.Millisecond})
	var stuck []net.Conn
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(4096)
		}
		_ = WriteFrame(c, FrameHello, Hello{Mode: ModeTCP, Stream: "vod/asset"}.Marshal())
		stuck = append(stuck, c)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	var st Stats
	var err error
	go func() {
		defer wg.Done()
		st, err = Play(context.Background(), ClientOptions{Addr: s.Addr().String(), Stream: "vod/asset", Mode: ModeFDSP, BP: 100})
	}()
	wg.Wait()
	if err != nil || st.EndReason != "ended" || st.AUs != 200 {
		t.Fatalf("the reading client: %v %+v", err, st)
	}
	waitFor(t, "stuck sessions to end", func() bool { return s.Active.Load() == 0 && s.Sessions() == 0 })
	for _, c := range stuck {
		c.Close()
	}
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before+4 })
}
