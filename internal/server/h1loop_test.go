package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/layout"
)

// A burst of pipelined requests larger than the head reader's buffer is answered
// whole and in order: a read that fills the buffer may leave bytes in the socket, so
// the read loop reads again before it waits (it waits at once only after a read that
// emptied the socket, since no readiness event would come for bytes already there).
func TestReadLoopBurstLargerThanBuffer(t *testing.T) {
	s, _ := testOrigin(t)
	addr, lean := leanOrigin(t, s, 10*time.Second)
	const n = 120
	pad := strings.Repeat("p", 60) // each head ~120 bytes: the burst is ~3.5 buffers
	var raw strings.Builder
	want := make([]string, n)
	for i := range n {
		seg := 1 + i%2
		fmt.Fprintf(&raw, "GET /vod/clip/v1/%d.m4s HTTP/1.1\r\nHost: a\r\nX-Pad: %s\r\n\r\n", seg, pad)
		want[i] = fmt.Sprintf("v1-seg%d;", seg)
	}
	if raw.Len() < 3*h1HeadMax {
		t.Fatalf("burst of %d bytes: not larger than the %d-byte buffer", raw.Len(), h1HeadMax)
	}
	c, err := net.Dial("tcp", addr)
	must(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(guard))
	go func() { _, _ = io.WriteString(c, raw.String()) }() // the answers are read meanwhile
	br := bufio.NewReader(c)
	for i := range n {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d of %d: %v", i+1, n, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(string(b), want[i]) {
			t.Fatalf("response %d: %d %.40q, want 200 with %q", i+1, resp.StatusCode, b, want[i])
		}
	}
	if got := lean.served.Load(); got != n || lean.handedOff.Load() != 0 {
		t.Errorf("lean path answered %d and handed on %d; want all %d answered there", got, lean.handedOff.Load(), n)
	}
}

// A head that arrives in pieces is put together across the read loop's waits, and
// its header deadline is set once, when it is first seen incomplete: a client that
// keeps trickling bytes does not move it (slowloris) and is cut off.
func TestReadLoopTrickledHead(t *testing.T) {
	s, _ := testOrigin(t)
	addr, _ := leanOrigin(t, s, 400*time.Millisecond)

	// In three pieces, quickly: answered.
	c, err := net.Dial("tcp", addr)
	must(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(guard))
	br := bufio.NewReader(c)
	for round := 0; round < 2; round++ { // twice: the second on a connection the loop kept
		for _, piece := range []string{"GET /vod/clip/v1/2", ".m4s HTTP/1.1\r\nHo", "st: a\r\n\r\n"} {
			_, err := io.WriteString(c, piece)
			must(t, err)
			time.Sleep(20 * time.Millisecond)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(string(b), "v1-seg2;") {
			t.Fatalf("round %d: %d %.40q, want segment 2", round, resp.StatusCode, b)
		}
	}

	// A byte every 100 ms of a head that would take 6 s: closed without an answer
	// long before it ends (the 400 ms deadline holds however often bytes come).
	slow, err := net.Dial("tcp", addr)
	must(t, err)
	defer slow.Close()
	head := "GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\nX-Slow: " + strings.Repeat("s", 60) + "\r\n\r\n"
	closed := make(chan error, 1)
	go func() {
		_ = slow.SetReadDeadline(time.Now().Add(guard))
		n, err := slow.Read(make([]byte, 1))
		if n > 0 {
			err = fmt.Errorf("read %d bytes of an answer", n)
		}
		closed <- err
	}()
	sent := 0
	for ; sent < len(head); sent++ {
		if _, err := slow.Write([]byte{head[sent]}); err != nil {
			break // the server closed: the write fails
		}
		select {
		case err := <-closed:
			closed <- err
			sent = len(head) + 1 // done
		case <-time.After(100 * time.Millisecond):
		}
	}
	err = <-closed
	if err == nil || isTimeout(err) || strings.Contains(err.Error(), "answer") {
		t.Fatalf("trickled head: %v; want the connection closed by the server without an answer", err)
	}
	if sent == len(head) {
		t.Errorf("the whole trickled head was sent before the server closed: its deadline moved")
	}
}

// streamKeyOf gives what layout's StreamKey gives, for every kind of path.
func TestStreamKeyOf(t *testing.T) {
	for _, p := range []string{
		"/vod/clip/v1/1.m4s", "/live/ch/manifest.mpd", "/live/ch/a1/init.mp4", "/vod/x/master.m3u8",
		"/live/ll/v/playlist.m3u8", "/live/ll/v/3.1.m4s", "/", "/time", "/api/streams", "/vod/", "/vod//x", "/live/a b/1.m4s",
	} {
		res := layout.Parse(p)
		if got, want := streamKeyOf(res, p), res.StreamKey(); got != want {
			t.Errorf("%s: %q, want %q", p, got, want)
		}
	}
}

// A segment file replaced on disk (by rename, as packaging writes) is served as the
// new file once the file cache looks again, by the lean path and by net/http alike:
// its bytes with its own length and validators, never the old file's or a mix.
func TestServeReplacedSegmentFile(t *testing.T) {
	s, ts := testOrigin(t)
	addr, _ := leanOrigin(t, s, 10*time.Second)
	a, err := s.hub.Asset("clip")
	must(t, err)
	_, path, err := a.SegmentFile("v1", 1)
	must(t, err)
	get := "GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\n\r\n"
	before, oldBody := exchange(t, addr, get)
	if !strings.Contains(string(oldBody), "v1-seg1;") {
		t.Fatalf("before: %.40q", oldBody)
	}
	s.files.SetValidFor(0) // look at the path at every request
	newBody := "v1-seg1;replaced, and longer than before"
	must(t, fsutil.WriteFileAtomic(path, []byte(newBody), 0o644))
	for _, server := range []struct{ name, addr string }{{"lean", addr}, {"net/http", strings.TrimPrefix(ts.URL, "http://")}} {
		resp, b := exchange(t, server.addr, get)
		if resp.StatusCode != 200 || string(b) != newBody || resp.ContentLength != int64(len(newBody)) {
			t.Errorf("%s: %d, %d bytes declared, %q; want the new file", server.name, resp.StatusCode, resp.ContentLength, b)
		}
		if resp.Header.Get("Etag") == before.Header.Get("Etag") {
			t.Errorf("%s: the old ETag %s for the new file", server.name, resp.Header.Get("Etag"))
		}
	}
}

// A request still being answered in the read loop when the listener closes ends the
// connection once answered. (Closing a socket waits for the read loop to let go of
// it, so the loop must not close its own socket from inside.)
func TestReadLoopCloseWhileAnswering(t *testing.T) {
	s, _ := testOrigin(t)
	addr, lean := leanOrigin(t, s, 10*time.Second)
	a, err := s.hub.Asset("clip")
	must(t, err)
	_, path, err := a.SegmentFile("v1", 1)
	must(t, err)
	const size = 32 << 20 // more than loopback's socket buffers hold: sendfile waits for the client
	must(t, fsutil.WriteFileAtomic(path, make([]byte, size), 0o644))
	s.files.SetValidFor(0)

	c, err := net.Dial("tcp", addr)
	must(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(guard))
	_, err = io.WriteString(c, "GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\n\r\n")
	must(t, err)
	br := bufio.NewReader(c)
	if _, err := br.Peek(1); err != nil { // the answer has begun
		t.Fatal(err)
	}
	must(t, lean.Close())
	resp, err := http.ReadResponse(br, nil)
	must(t, err)
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || n != size {
		t.Fatalf("answer: %d of %d bytes, %v", n, size, err)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after the answer: %v, want the connection closed (EOF)", err)
	}
}

// An idle keep-alive connection holds no head buffer (as nginx frees an idle
// connection's): the heap per idle lean connection, client side included, stays
// under the 4 KiB such a buffer alone would take.
func TestReadLoopIdleConnectionHoldsNoBuffer(t *testing.T) {
	s, _ := testOrigin(t)
	addr, lean := leanOrigin(t, s, 10*time.Second)
	const n = 300
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	for range n {
		c, err := net.Dial("tcp", addr)
		must(t, err)
		conns = append(conns, c)
		_ = c.SetDeadline(time.Now().Add(guard))
		_, err = io.WriteString(c, "GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\n\r\n")
		must(t, err)
		resp, err := http.ReadResponse(bufio.NewReaderSize(c, 16), nil) // the client keeps no buffer either
		must(t, err)
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || !strings.Contains(string(b), "v1-seg1;") {
			t.Fatalf("%d %.40q", resp.StatusCode, b)
		}
	}
	if got := lean.served.Load(); got != n {
		t.Fatalf("lean path answered %d of %d", got, n)
	}
	per := float64(heap()-before) / n
	t.Logf("%.0f bytes of heap per idle lean connection (both ends)", per)
	if per >= 4096 {
		t.Errorf("%.0f bytes of heap per idle connection: a head buffer is kept while idle", per)
	}
}

// The idle timeout ends a lean connection that sends nothing, before its first
// request and after answered ones (the deadline is moved before each wait for the
// next request, not on waking from it).
func TestReadLoopIdleTimeout(t *testing.T) {
	s, _ := testOrigin(t)
	// No header timeout: only the idle deadline can end a silent connection. The
	// deadline moves at most once a second, so a connection may be closed as early
	// as (idle − 1 s) after its last move: 5 s leaves a loaded machine 4 s for the
	// requests of a case before the server may close it.
	addr, lean := leanOriginIdle(t, s, 0, 5*time.Second)
	t.Run("cases", func(t *testing.T) {
		for _, tc := range []struct {
			name     string
			requests int
			trickle  bool // each head in two writes, so the loop may wake with part of it
		}{{"silent", 0, false}, {"one request", 1, false}, {"three requests", 3, false}, {"heads in pieces", 2, true}} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				c, err := net.Dial("tcp", addr)
				must(t, err)
				defer c.Close()
				br := bufio.NewReader(c)
				for range tc.requests {
					head := "GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\n\r\n"
					if tc.trickle {
						_, err := io.WriteString(c, head[:20])
						must(t, err)
						// Not a synchronisation: the check below holds whether or not the
						// server reads the two parts apart; the pause only makes it likely.
						time.Sleep(20 * time.Millisecond)
						head = head[20:]
					}
					_, err := io.WriteString(c, head)
					must(t, err)
					resp, err := http.ReadResponse(br, nil)
					must(t, err)
					if n, _ := io.Copy(io.Discard, resp.Body); resp.StatusCode != 200 || n != 800 {
						t.Fatalf("status %d, %d bytes", resp.StatusCode, n)
					}
				}
				// Generous: the bound says the server closed the connection, not how fast.
				_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
				if n, err := br.Read(make([]byte, 1)); err != io.EOF {
					t.Errorf("after %d requests and silence: read %d bytes, %v; want the server's close (EOF)", tc.requests, n, err)
				}
			})
		}
	})
	if lean.served.Load() != 6 || lean.handedOff.Load() != 0 {
		t.Errorf("lean path served %d, handed off %d; want 6 and 0", lean.served.Load(), lean.handedOff.Load())
	}
}
