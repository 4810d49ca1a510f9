package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/fsutil"
)

// A keep-alive connection waiting for its next request has no goroutine of its own
// with the event loops (h1event.go): its socket waits in a loop's epoll set.
func TestEventLoopWaitingConnectionsHaveNoGoroutine(t *testing.T) {
	s, _ := testOrigin(t)
	addr, lean := leanOrigin(t, s, 10*time.Second)
	const n = 200
	before := runtime.NumGoroutine()
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := net.Dial("tcp", addr)
		must(t, err)
		conns = append(conns, c)
		_ = c.SetDeadline(time.Now().Add(guard))
		_, err = io.WriteString(c, "GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\n\r\n")
		must(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		must(t, err)
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || !strings.Contains(string(b), "v1-seg1;") {
			t.Fatalf("%d %.40q", resp.StatusCode, b)
		}
	}
	// A connection's goroutine ends just after its answer: wait for the count to
	// settle (a bound on correctness, not on speed).
	var extra int
	for end := time.Now().Add(guard); ; {
		if extra = runtime.NumGoroutine() - before; extra < n/10 || time.Now().After(end) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if extra >= n/10 {
		t.Errorf("%d more goroutines with %d waiting connections; want none per connection", extra, n)
	}
	if got := lean.served.Load(); got != n || lean.handedOff.Load() != 0 {
		t.Errorf("lean path answered %d, handed on %d; want %d and 0", got, lean.handedOff.Load(), n)
	}
	// And they are still served: a second request on each.
	for i, c := range conns[:20] {
		_, err := io.WriteString(c, "GET /vod/clip/v1/2.m4s HTTP/1.1\r\nHost: a\r\n\r\n")
		must(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("connection %d, second request: %v", i, err)
		}
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || !strings.Contains(string(b), "v1-seg2;") {
			t.Fatalf("connection %d, second request: %d %.40q", i, resp.StatusCode, b)
		}
	}
}

// waitFor waits until cond holds; the bound says it never did, not how fast it did.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(3 * guard); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("waited %v for %s", 3*guard, what)
		}
	}
}

// A request that arrives in pieces is put together, with the event loops and with a
// goroutine per connection alike: the next request after an answer (the head
// buffer was given back, nothing being left), and a request pipelined behind
// another whose rest comes later (the buffer kept, holding its start).
func TestLeanPathRequestSplitAcrossReads(t *testing.T) {
	for _, mode := range []struct {
		name       string
		eventLoops bool
	}{{"event loops", true}, {"goroutine per connection", false}} {
		t.Run(mode.name, func(t *testing.T) {
			s, _ := testOrigin(t)
			addr, lean := leanOriginMode(t, s, 10*time.Second, time.Minute, mode.eventLoops)
			c, err := net.Dial("tcp", addr)
			must(t, err)
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(guard))
			br := bufio.NewReader(c)
			expect := func(seg int) {
				t.Helper()
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("segment %d: %v", seg, err)
				}
				if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || !strings.Contains(string(b), fmt.Sprintf("v1-seg%d;", seg)) {
					t.Fatalf("segment %d: %d %.40q", seg, resp.StatusCode, b)
				}
			}
			send := func(s string) {
				t.Helper()
				_, err := io.WriteString(c, s)
				must(t, err)
			}
			head := func(seg int) string { return fmt.Sprintf("GET /vod/clip/v1/%d.m4s HTTP/1.1\r\nHost: a\r\n\r\n", seg) }

			send(head(1))
			expect(1) // answered: the connection waits with its buffer given back
			h2 := head(2)
			send(h2[:17]) // a new request's first bytes borrow a buffer again
			// Not a synchronisation: the answers hold whether or not the server reads
			// the two parts apart; the pause only makes it likely.
			time.Sleep(20 * time.Millisecond)
			send(h2[17:])
			expect(2)

			h1 := head(1)
			send(head(2) + h1[:30])           // a whole request and the start of the next
			expect(2)                         // the first is answered with the second's start held
			time.Sleep(20 * time.Millisecond) // as above: likely, not needed, apart
			send(h1[30:])
			expect(1)
			if got := lean.served.Load(); got != 4 || lean.handedOff.Load() != 0 {
				t.Errorf("lean path answered %d, handed on %d; want 4 and 0", got, lean.handedOff.Load())
			}
		})
	}
}

// A client that does not read its answer fills its socket: its connection leaves
// the event loop (which must never wait for one socket) and finishes on a goroutine,
// while every other connection is answered meanwhile; once the slow client reads,
// it gets its whole answer and the request it pipelined behind it, and its
// connection goes back to waiting in the loop.
func TestEventLoopSlowReaderDoesNotStallOthers(t *testing.T) {
	s, _ := testOrigin(t)
	addr, lean := leanOrigin(t, s, 10*time.Second)
	a, err := s.hub.Asset("clip")
	must(t, err)
	_, path, err := a.SegmentFile("v1", 1)
	must(t, err)
	// Larger than any socket buffers on loopback: the server's writes must wait.
	big := bytes.Repeat([]byte("v1-seg1;"), 32<<20/8)
	must(t, fsutil.WriteFileAtomic(path, big, 0o644))
	s.files.SetValidFor(0)

	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	slow, err := d.Dial("tcp", addr)
	must(t, err)
	defer slow.Close()
	_ = slow.SetDeadline(time.Now().Add(6 * guard))
	br := bufio.NewReader(slow)
	// A first request, answered by the connection's own goroutine (it came with the
	// connection); then the connection waits in its loop, which answers the next.
	_, err = io.WriteString(slow, "GET /vod/clip/v1/2.m4s HTTP/1.1\r\nHost: a\r\n\r\n")
	must(t, err)
	resp, err := http.ReadResponse(br, nil)
	must(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	waitFor(t, "the connection waiting in an event loop", func() bool { return lean.waitingInLoops() == 1 })
	_, err = io.WriteString(slow, "GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\n\r\nGET /vod/clip/v1/2.m4s HTTP/1.1\r\nHost: a\r\n\r\n")
	must(t, err)
	waitFor(t, "the slow client's connection leaving the event loop", func() bool { return lean.detached.Load() == 1 })
	// Others are answered while the slow one's answer waits: enough connections
	// that every loop (one per processor) gets some.
	for i := range 2*runtime.GOMAXPROCS(0) + 2 {
		resp, b := exchange(t, addr, "GET /vod/clip/v1/2.m4s HTTP/1.1\r\nHost: a\r\n\r\n")
		if resp.StatusCode != 200 || !strings.Contains(string(b), "v1-seg2;") {
			t.Fatalf("other client %d: %d %.40q", i, resp.StatusCode, b)
		}
	}
	resp, err = http.ReadResponse(br, nil)
	must(t, err)
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || resp.StatusCode != 200 || n != int64(len(big)) {
		t.Fatalf("slow client: %d, %d of %d bytes, %v", resp.StatusCode, n, len(big), err)
	}
	resp, err = http.ReadResponse(br, nil)
	must(t, err)
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || !strings.Contains(string(b), "v1-seg2;") {
		t.Fatalf("slow client's pipelined request: %d %.40q", resp.StatusCode, b)
	}
	// Back in the loop: a later request on the same connection is answered.
	_, err = io.WriteString(slow, "GET /vod/clip/v1/2.m4s HTTP/1.1\r\nHost: a\r\n\r\n")
	must(t, err)
	resp, err = http.ReadResponse(br, nil)
	must(t, err)
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || !strings.Contains(string(b), "v1-seg2;") {
		t.Fatalf("slow client, later request: %d %.40q", resp.StatusCode, b)
	}
}

// Many clients at once, each doing something else — pipelined bursts, heads in
// pieces, a request handed to net/http, a big answer read slowly, a close in the
// middle of a request or right after one — are all answered correctly, and once the
// clients are gone the server holds no connection and no goroutine for them.
func TestEventLoopMixedClientsLeaveNothing(t *testing.T) {
	s, _ := testOrigin(t)
	addr, lean := leanOrigin(t, s, 10*time.Second)
	a, err := s.hub.Asset("clip")
	must(t, err)
	_, path, err := a.SegmentFile("v1", 1)
	must(t, err)
	big := bytes.Repeat([]byte("v1-seg1;"), 4<<20/8) // larger than a socket's buffers
	must(t, fsutil.WriteFileAtomic(path, big, 0o644))
	s.files.SetValidFor(0)
	before := runtime.NumGoroutine()

	get := func(seg int) string { return fmt.Sprintf("GET /vod/clip/v1/%d.m4s HTTP/1.1\r\nHost: a\r\n\r\n", seg) }
	check := func(br *bufio.Reader, seg int) error {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		want := int64(800) // the other segments' size in testOrigin's asset
		if seg == 1 {
			want = int64(len(big))
		}
		if err != nil || resp.StatusCode != 200 || n != want {
			return fmt.Errorf("segment %d: %d, %d bytes of %d, %v", seg, resp.StatusCode, n, want, err)
		}
		return nil
	}
	kinds := []func(c net.Conn, br *bufio.Reader) error{
		func(c net.Conn, br *bufio.Reader) error { // a pipelined burst
			if _, err := io.WriteString(c, strings.Repeat(get(2), 20)); err != nil {
				return err
			}
			for range 20 {
				if err := check(br, 2); err != nil {
					return err
				}
			}
			return nil
		},
		func(c net.Conn, br *bufio.Reader) error { // heads in pieces, then another
			h := get(2)
			for _, p := range []string{h[:5], h[5:30], h[30:] + h[:10], h[10:]} {
				if _, err := io.WriteString(c, p); err != nil {
					return err
				}
			}
			if err := check(br, 2); err != nil {
				return err
			}
			return check(br, 2)
		},
		func(c net.Conn, br *bufio.Reader) error { // a big answer, read slowly
			if _, err := io.WriteString(c, get(1)+get(2)); err != nil {
				return err
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				return err
			}
			var n int64
			for chunk := make([]byte, 64<<10); ; {
				k, err := resp.Body.Read(chunk)
				n += int64(k)
				if err == io.EOF {
					break
				}
				if err != nil {
					return err
				}
				time.Sleep(time.Millisecond) // slower than the server writes: its socket fills
			}
			if n != int64(len(big)) {
				return fmt.Errorf("big answer: %d of %d bytes", n, len(big))
			}
			return check(br, 2)
		},
		func(c net.Conn, br *bufio.Reader) error { // net/http's: a HEAD, then a lean GET there
			if _, err := io.WriteString(c, "HEAD /vod/clip/v1/2.m4s HTTP/1.1\r\nHost: a\r\n\r\n"+get(2)); err != nil {
				return err
			}
			resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodHead})
			if err != nil {
				return err
			}
			resp.Body.Close()
			return check(br, 2)
		},
		func(c net.Conn, br *bufio.Reader) error { // gone in the middle of a head
			_, err := io.WriteString(c, get(2)[:25])
			return err
		},
		func(c net.Conn, br *bufio.Reader) error { // gone without reading a big answer
			_, err := io.WriteString(c, get(1))
			return err
		},
	}
	const clients = 48
	errs := make(chan error, clients)
	for i := range clients {
		go func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(3 * guard))
			br := bufio.NewReader(c)
			// A first request, so that (most likely) what follows finds the connection
			// waiting in its loop rather than on the goroutine that accepted it.
			if _, err := io.WriteString(c, get(2)); err != nil {
				errs <- err
				return
			}
			if err := check(br, 2); err != nil {
				errs <- fmt.Errorf("client %d, first request: %w", i, err)
				return
			}
			if err := kinds[i%len(kinds)](c, br); err != nil {
				errs <- fmt.Errorf("client %d (kind %d): %w", i, i%len(kinds), err)
				return
			}
			errs <- nil
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d connections left an event loop because their socket filled", lean.detached.Load())
	// Every client has closed: the server sees each close and ends its side.
	waitFor(t, "the server to end every lean connection", func() bool {
		lean.mu.Lock()
		defer lean.mu.Unlock()
		return len(lean.active) == 0
	})
	waitFor(t, "the connections' goroutines to end", func() bool { return runtime.NumGoroutine() <= before+2 })
	for _, lp := range lean.loops {
		if n := lp.waiting(); n != 0 {
			t.Errorf("an event loop still holds %d connections", n)
		}
	}
}

// A client that sends the start of a head and closes its side at once is let go
// when its close is seen, not at the header timeout: the end can come with the last
// bytes, in the same readiness event, so a short read must not be taken for an
// empty socket then.
func TestEventLoopPeerClosedMidHead(t *testing.T) {
	s, _ := testOrigin(t)
	addr, lean := leanOriginMode(t, s, time.Hour, time.Hour, true)
	c, err := net.Dial("tcp", addr)
	must(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * guard))
	br := bufio.NewReader(c)
	_, err = io.WriteString(c, "GET /vod/clip/v1/2.m4s HTTP/1.1\r\nHost: a\r\n\r\n")
	must(t, err)
	resp, err := http.ReadResponse(br, nil)
	must(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	waitFor(t, "the connection waiting in an event loop", func() bool { return lean.waitingInLoops() == 1 })
	_, err = io.WriteString(c, "GET /vod/clip/v1/2.m4s HT")
	must(t, err)
	must(t, c.(*net.TCPConn).CloseWrite())
	if n, err := br.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read %d bytes, %v; want the server's close (EOF) long before the hour-long header timeout", n, err)
	}
	waitFor(t, "the server to end the connection", func() bool {
		lean.mu.Lock()
		defer lean.mu.Unlock()
		return len(lean.active) == 0
	})
}
