package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/streambed/streambed/internal/fsutil"
)

// corkLog records, per TCP_CORK change on the lean path, what was asked and what the
// kernel then held for the socket (getsockopt), so a test sees the real socket state.
type corkLog struct {
	mu    sync.Mutex
	asked []bool
	held  []int
}

func watchCork(l *h1Listener) *corkLog {
	cl := &corkLog{}
	f := func(fd uintptr, on bool) {
		v, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK)
		if err != nil {
			v = -1
		}
		cl.mu.Lock()
		defer cl.mu.Unlock()
		cl.asked = append(cl.asked, on)
		cl.held = append(cl.held, v)
	}
	l.onCork.Store(&f)
	return cl
}

func (cl *corkLog) snapshot() ([]bool, []int) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return append([]bool(nil), cl.asked...), append([]int(nil), cl.held...)
}

// checkPairs says whether the log is n responses' cork on, then off, with the kernel
// agreeing each time (1 while corked, 0 after).
func (cl *corkLog) checkPairs(t *testing.T, n int) {
	t.Helper()
	asked, held := cl.snapshot()
	if len(asked) != 2*n {
		t.Fatalf("%d cork changes %v, want %d (on and off per response)", len(asked), asked, 2*n)
	}
	for i := range asked {
		wantOn, wantHeld := i%2 == 0, 1-i%2
		if asked[i] != wantOn || held[i] != wantHeld {
			t.Fatalf("cork change %d: asked %v, socket holds %d; want %v and %d (log %v %v)", i, asked[i], held[i], wantOn, wantHeld, asked, held)
		}
	}
}

// A segment sent with sendfile is corked from before its head until the file is
// queued, then uncorked (which sends its tail): with the event loops and with a
// goroutine per connection, on a kept-alive connection.
func TestLeanSegmentCorkedThenPushed(t *testing.T) {
	for _, mode := range []struct {
		name       string
		eventLoops bool
	}{{"event loops", true}, {"goroutine per connection", false}} {
		t.Run(mode.name, func(t *testing.T) {
			s, _ := testOrigin(t)
			addr, lean := leanOriginMode(t, s, 10*time.Second, time.Minute, mode.eventLoops)
			cl := watchCork(lean)
			c, err := net.Dial("tcp", addr)
			must(t, err)
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(guard))
			br := bufio.NewReader(c)
			const n = 3
			for i := range n {
				seg := 1 + i%2 // the fixture has two segments
				_, err := fmt.Fprintf(c, "GET /vod/clip/v1/%d.m4s HTTP/1.1\r\nHost: a\r\n\r\n", seg)
				must(t, err)
				resp, err := http.ReadResponse(br, nil)
				must(t, err)
				if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || !strings.Contains(string(b), fmt.Sprintf("v1-seg%d;", seg)) {
					t.Fatalf("segment %d: %d %.40q", seg, resp.StatusCode, b)
				}
			}
			// The uncork comes just after the tail is pushed: wait for its note.
			waitFor(t, "the last uncork", func() bool { a, _ := cl.snapshot(); return len(a) >= 2*n })
			cl.checkPairs(t, n)
			// A manifest (bytes, one writev) is not corked.
			_, err = io.WriteString(c, "GET /vod/clip/manifest.mpd HTTP/1.1\r\nHost: a\r\n\r\n")
			must(t, err)
			resp, err := http.ReadResponse(br, nil)
			must(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("manifest: %d", resp.StatusCode)
			}
			cl.checkPairs(t, n)
		})
	}
}

// A segment larger than the socket takes, read slowly, waits for room while corked
// (on the event loop it leaves the loop first), and is uncorked once, at its end; a
// client that goes away mid-segment leaves the socket uncorked too.
func TestLeanSegmentCorkThroughFullSocket(t *testing.T) {
	s, _ := testOrigin(t)
	addr, lean := leanOrigin(t, s, 10*time.Second)
	a, err := s.hub.Asset("clip")
	must(t, err)
	_, path, err := a.SegmentFile("v1", 1)
	must(t, err)
	big := bytes.Repeat([]byte("v1-seg1;"), 8<<20/8) // larger than any socket buffers on loopback
	must(t, fsutil.WriteFileAtomic(path, big, 0o644))
	s.files.SetValidFor(0)
	cl := watchCork(lean)

	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	slow, err := d.Dial("tcp", addr)
	must(t, err)
	defer slow.Close()
	_ = slow.SetDeadline(time.Now().Add(6 * guard))
	br := bufio.NewReader(slow)
	for i := range 2 { // the first on the connection's goroutine, the second from its loop
		if i == 1 {
			waitFor(t, "the connection waiting in an event loop", func() bool { return lean.waitingInLoops() == 1 })
		}
		_, err = io.WriteString(slow, "GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\n\r\n")
		must(t, err)
		resp, err := http.ReadResponse(br, nil)
		must(t, err)
		// Read in small pieces: the server finds the socket full many times.
		var got int64
		buf := make([]byte, 16<<10)
		for {
			k, err := resp.Body.Read(buf)
			got += int64(k)
			if err == io.EOF {
				break
			}
			must(t, err)
		}
		if resp.StatusCode != 200 || got != int64(len(big)) {
			t.Fatalf("%d, %d of %d bytes", resp.StatusCode, got, len(big))
		}
	}
	waitFor(t, "the last uncork", func() bool { a, _ := cl.snapshot(); return len(a) >= 4 })
	cl.checkPairs(t, 2)
	if lean.detached.Load() == 0 {
		t.Errorf("no connection left its event loop: the socket never filled, so the wait while corked was not tested")
	}

	// A client that goes away in the middle: the failed sendfile still uncorks.
	gone, err := d.Dial("tcp", addr)
	must(t, err)
	_, err = io.WriteString(gone, "GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\n\r\n")
	must(t, err)
	_ = gone.SetReadDeadline(time.Now().Add(guard))
	_, err = io.ReadFull(gone, make([]byte, 4096)) // the response has started
	must(t, err)
	must(t, gone.Close())
	waitFor(t, "the uncork after the client went", func() bool { a, _ := cl.snapshot(); return len(a) >= 6 })
	cl.checkPairs(t, 3)
}
