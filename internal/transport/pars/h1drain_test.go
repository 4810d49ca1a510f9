package pars

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/player"
)

// scriptOrigin accepts connections and runs serve on each (k counts them from 0), so
// a test decides byte by byte what each connection answers and when.
type scriptOrigin struct {
	ln    net.Listener
	conns atomic.Int32
}

func newScriptOrigin(t *testing.T, serve func(k int, c net.Conn, br *bufio.Reader)) *scriptOrigin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scriptOrigin{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			k := int(s.conns.Add(1)) - 1
			go func() {
				defer c.Close()
				serve(k, c, bufio.NewReader(c))
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

func (s *scriptOrigin) url(path string) string { return "http://" + s.ln.Addr().String() + path }

func answer(body []byte) string {
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// readAt reads n bytes of resp's body, to put it where the test wants it.
func readAt(t *testing.T, resp *http.Response, n int) {
	t.Helper()
	if _, err := io.ReadFull(resp.Body, make([]byte, n)); err != nil {
		t.Fatal(err)
	}
}

// TestPipeConnDrainsSmallRest: a request cancelled in the middle of its body with
// little left (under DrainLimit) does not cost the connection: Do's caller gets the
// cancellation at once, the rest is read and thrown away, the request pipelined
// behind it gets its own answer, and the next request goes on the same connection.
func TestPipeConnDrainsSmallRest(t *testing.T) {
	big := bytes.Repeat([]byte("a"), 100_000)
	gotA := make(chan struct{}) // A's body minus 10 kB sent, and the cancel seen by the client
	bRead := make(chan struct{})
	s := newScriptOrigin(t, func(k int, c net.Conn, br *bufio.Reader) {
		for i := 0; ; i++ {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			switch i {
			case 0: // A: all but the last 10 kB, then wait for the client's cancel
				io.WriteString(c, fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(big)))
				c.Write(big[:90_000])
				if _, err := http.ReadRequest(br); err != nil { // B, pipelined behind A
					return
				}
				close(bRead)
				<-gotA
				c.Write(big[90_000:])
				io.WriteString(c, answer([]byte("B's answer")))
				i++
			default:
				io.WriteString(c, answer([]byte("C's answer")))
			}
		}
	})
	p := newPipeConn(ConnOptions{}.withDefaults(), 2)
	defer p.Close()
	ctxA, cancelA := context.WithCancel(context.Background())
	reqA, _ := http.NewRequestWithContext(ctxA, http.MethodGet, s.url("/a"), nil)
	respA, err := p.Do(reqA)
	if err != nil {
		t.Fatal(err)
	}
	bDone := make(chan string, 1)
	go func() {
		reqB, _ := http.NewRequest(http.MethodGet, s.url("/b"), nil)
		resp, err := p.Do(reqB)
		if err != nil {
			bDone <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		bDone <- fmt.Sprintf("%s %v", b, err)
	}()
	readAt(t, respA, 90_000)
	<-bRead // B is on the wire behind A
	cancelA()
	// The read blocked on the 10 kB the origin holds returns with the cancellation.
	if _, err := io.ReadAll(respA.Body); !errors.Is(err, context.Canceled) {
		t.Fatalf("A's read after its cancel: %v, want context.Canceled", err)
	}
	respA.Body.Close()
	close(gotA)
	if got := <-bDone; got != "B's answer <nil>" {
		t.Fatalf("B: %s", got)
	}
	reqC, _ := http.NewRequest(http.MethodGet, s.url("/c"), nil)
	respC, err := p.Do(reqC)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(respC.Body)
	respC.Body.Close()
	if err != nil || string(b) != "C's answer" {
		t.Fatalf("C: %q %v", b, err)
	}
	if n := s.conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1: the cancelled request cost its connection", n)
	}
	if n := p.drained.Load(); n != 1 {
		t.Errorf("drained %d answers, want 1", n)
	}
}

// TestPipeConnClosesOnLargeRest: with more than DrainLimit left, a cancelled body
// closes the connection; the request pipelined behind it fails with an error and
// the next one dials a new connection.
func TestPipeConnClosesOnLargeRest(t *testing.T) {
	bRead := make(chan struct{})
	s := newScriptOrigin(t, func(k int, c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		if k == 0 {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
			c.Write(make([]byte, 1000))
			if _, err := http.ReadRequest(br); err == nil { // B, pipelined behind A
				close(bRead)
			}
			io.Copy(io.Discard, br) // until the client closes
			return
		}
		io.WriteString(c, answer([]byte("fresh")))
		io.Copy(io.Discard, br)
	})
	p := newPipeConn(ConnOptions{}.withDefaults(), 2)
	defer p.Close()
	ctxA, cancelA := context.WithCancel(context.Background())
	reqA, _ := http.NewRequestWithContext(ctxA, http.MethodGet, s.url("/a"), nil)
	respA, err := p.Do(reqA)
	if err != nil {
		t.Fatal(err)
	}
	readAt(t, respA, 1000)
	bErr := make(chan error, 1)
	go func() {
		reqB, _ := http.NewRequest(http.MethodGet, s.url("/b"), nil)
		resp, err := p.Do(reqB)
		if err == nil {
			resp.Body.Close()
			err = errors.New("answered")
		} else if strings.Contains(err.Error(), "answered") {
			err = fmt.Errorf("unexpected: %w", err)
		}
		bErr <- err
	}()
	<-bRead // B is on the wire behind A
	cancelA()
	io.ReadAll(respA.Body)
	respA.Body.Close()
	if err := <-bErr; err == nil || err.Error() == "answered" {
		t.Fatalf("B behind an abandoned 1 MB answer: %v, want an error", err)
	}
	reqC, _ := http.NewRequest(http.MethodGet, s.url("/c"), nil)
	respC, err := p.Do(reqC)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(respC.Body)
	respC.Body.Close()
	if string(b) != "fresh" || s.conns.Load() != 2 {
		t.Fatalf("C: %q on connection %d, want \"fresh\" on a second one", b, s.conns.Load())
	}
	if n := p.drained.Load(); n != 0 {
		t.Errorf("drained %d", n)
	}
}

// TestPipeConnCancelBeforeTurn: a pipelined request cancelled while the answer before
// it is still arriving returns at once; its own (small) answer is thrown away when
// its turn comes, and the connection carries on.
func TestPipeConnCancelBeforeTurn(t *testing.T) {
	release, bRead := make(chan struct{}), make(chan struct{})
	s := newScriptOrigin(t, func(k int, c net.Conn, br *bufio.Reader) {
		for i := 0; ; i++ {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			switch i {
			case 0:
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nA's")
				if _, err := http.ReadRequest(br); err != nil { // B
					return
				}
				close(bRead)
				<-release
				io.WriteString(c, "!!!")
				io.WriteString(c, answer(bytes.Repeat([]byte("b"), 30_000)))
				i++
			default:
				io.WriteString(c, answer([]byte("C")))
			}
		}
	})
	p := newPipeConn(ConnOptions{}.withDefaults(), 2)
	defer p.Close()
	reqA, _ := http.NewRequest(http.MethodGet, s.url("/a"), nil)
	respA, err := p.Do(reqA)
	if err != nil {
		t.Fatal(err)
	}
	ctxB, cancelB := context.WithCancel(context.Background())
	reqB, _ := http.NewRequestWithContext(ctxB, http.MethodGet, s.url("/b"), nil)
	bErr := make(chan error, 1)
	go func() {
		_, err := p.Do(reqB)
		bErr <- err
	}()
	// B is written (the origin has read it) and waits for A's end, which the origin
	// holds: its cancel must return without waiting for that.
	<-bRead
	cancelB()
	if err := <-bErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("B: %v, want context.Canceled", err)
	}
	close(release)
	if b, err := io.ReadAll(respA.Body); err != nil || string(b) != "A's!!!" {
		t.Fatalf("A: %q %v", b, err)
	}
	respA.Body.Close()
	reqC, _ := http.NewRequest(http.MethodGet, s.url("/c"), nil)
	respC, err := p.Do(reqC)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(respC.Body)
	respC.Body.Close()
	if err != nil || string(b) != "C" || s.conns.Load() != 1 {
		t.Fatalf("C: %q %v on %d connections, want \"C\" on 1", b, err, s.conns.Load())
	}
}

// TestH1PipelineSeekKeepsConnections: a seek while bodies of the segments fetched
// ahead are in flight (the origin holds each one's last byte until the request for
// the segment sought arrives) keeps the connections: the few bytes left are read and
// thrown away, the sought segment's ranges go out behind them on the same
// connections, every segment is the resource byte for byte, no connection ever has
// more than Streams requests outstanding and no connection is opened beyond N (+ the
// index's).
func TestH1PipelineSeekKeepsConnections(t *testing.T) {
	const n = 2
	sizes := make([]int, 12)
	for i := range sizes {
		sizes[i] = 100_000 + i*111 // ranges of ~50 kB: under DrainLimit
	}
	o := newRawOrigin(t, sizes...)
	sought := make(chan struct{})
	held := make(chan struct{}, 64)
	var once sync.Once
	go func() {
		for line := range o.arrived {
			if strings.Contains(line, "/9.m4s") {
				once.Do(func() { close(sought) })
			}
		}
	}()
	o.hold = func(conn int, r *http.Request) {
		if p := r.URL.Path; p != "/vod/a/v/3.m4s" && p != "/vod/a/v/4.m4s" {
			return
		}
		held <- struct{}{}
		select {
		case <-sought:
		case <-time.After(30 * time.Second):
			t.Error("the sought segment was never requested")
		}
	}
	c := pipelinedClient(t, n, 2)
	for _, i := range []int{1, 2} {
		if got := fetchRaw(t, c, o, i); !bytes.Equal(got, o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i)]) {
			t.Fatalf("segment %d: not the resource", i)
		}
	}
	<-held // a body of a segment fetched ahead is in flight, its last byte held
	for _, i := range []int{9, 10, 11} {
		if got := fetchRaw(t, c, o, i); !bytes.Equal(got, o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i)]) {
			t.Fatalf("segment %d: not the resource", i)
		}
	}
	st := c.Stats()
	if st.Wasted == 0 || st.Drained == 0 {
		t.Errorf("stats %+v: want segments wasted by the seek and answers drained", st)
	}
	for conn, m := range o.maxOutstanding() {
		if m > 2 {
			t.Errorf("connection %d had %d requests outstanding, want at most 2", conn, m)
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.conns > n+1 {
		t.Errorf("%d connections for N = %d: the seek closed some", o.conns, n)
	}
}

// TestH1PipelineOriginVanishes: the origin closes every connection and stops
// listening while pipelined ranges are in flight: the segment fails with an error
// that says what happened (no hang), and the client closes cleanly.
func TestH1PipelineOriginVanishes(t *testing.T) {
	sizes := []int{200_000, 200_000, 200_000, 200_000, 200_000}
	o := newRawOrigin(t, sizes...)
	var gone sync.Once
	var mu sync.Mutex
	var open []net.Conn
	o.hold = func(conn int, r *http.Request) {
		if r.URL.Path != "/vod/a/v/3.m4s" {
			return
		}
		gone.Do(func() {
			o.ln.Close()
			mu.Lock()
			for _, c := range open {
				c.Close()
			}
			mu.Unlock()
		})
	}
	// Track the origin's connections by dialling through a recorder.
	c := pipelinedClient(t, 2, 2, func(opt *Options) {
		opt.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			nc, err := d.DialContext(ctx, network, addr)
			if err == nil {
				mu.Lock()
				open = append(open, nc)
				mu.Unlock()
			}
			return nc, err
		}
	})
	if got := fetchRaw(t, c, o, 1); !bytes.Equal(got, o.files["/vod/a/v/1.m4s"]) {
		t.Fatal("segment 1: not the resource")
	}
	// Segment 3's ranges are asked for while segment 2 is fetched (pipelined): the
	// origin vanishes then, so segment 2 or 3 fails, whichever is in flight.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var err error
	for i := 2; i <= len(sizes) && err == nil; i++ {
		_, err = c.Fetch(ctx, player.SegmentRequest{Kind: player.RequestMedia, URL: fmt.Sprintf("%s/vod/a/v/%d.m4s", o.url(), i), Number: uint64(i), KeepBody: true})
	}
	if err == nil {
		t.Fatal("every segment from a vanished origin: no error")
	}
	if ctx.Err() != nil {
		t.Fatalf("a segment hung until the test's deadline: %v", err)
	}
	if !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "attempts") {
		t.Errorf("error %q does not say the origin went away", err)
	}
	t.Logf("error: %v", err)
}

// TestDefaultPipelined: ParS as by default pipelines two requests per HTTP/1.1
// connection and cuts each segment after the first into two ranges per connection;
// Streams = 1 and RangesPerConnection = 1 turn both off. Shown at the origin: the
// range requests per segment and the requests outstanding per connection.
func TestDefaultPipelined(t *testing.T) {
	sizes := []int{300_000, 300_001, 299_999, 250_000}
	for _, tc := range []struct {
		name             string
		streams, ranges  int
		perSeg, maxQueue int
	}{
		{"default", 0, 0, 8, 2},
		{"off", 1, 1, 4, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newRawOrigin(t, sizes...)
			opts := Options{Connections: 4, RangesPerConnection: tc.ranges}
			opts.Streams = tc.streams
			c, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, pipelined := c.pool.opts.withDefaults(), c.pipelinedH1(); pipelined != (tc.maxQueue == 2) {
				t.Fatalf("pipelined HTTP/1.1 %v with Streams %d", pipelined, c.opts.Streams)
			}
			for i := range sizes {
				if got := fetchRaw(t, c, o, i+1); !bytes.Equal(got, o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i+1)]) {
					t.Fatalf("segment %d: not the resource", i+1)
				}
			}
			o.mu.Lock()
			defer o.mu.Unlock()
			perSeg := map[string]int{}
			for _, r := range o.reqs {
				if f := strings.Fields(r); len(f) == 3 && strings.HasSuffix(f[1], ".m4s") {
					perSeg[f[1]]++
				}
			}
			for i := range sizes {
				want := tc.perSeg
				if i == 0 {
					want = 4 // a rendition's first segment: one range per connection
				}
				if got := perSeg[fmt.Sprintf("/vod/a/v/%d.m4s", i+1)]; got != want {
					t.Errorf("segment %d: %d range requests, want %d", i+1, got, want)
				}
			}
			for conn, m := range o.maxOut {
				if m > tc.maxQueue {
					t.Errorf("connection %d had %d requests outstanding, want at most %d", conn, m, tc.maxQueue)
				}
			}
		})
	}
}

// TestFirstSegmentDialsWhileIndexLoads: the connections of a rendition's first
// segment are dialled while the sidecar index is fetched, not after it: the origin
// holds the index's last byte until all N connections are open, which would never
// happen if they waited for the index.
func TestFirstSegmentDialsWhileIndexLoads(t *testing.T) {
	const n = 4
	o := newRawOrigin(t, 300_000, 300_000)
	o.hold = func(conn int, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, IndexFile) {
			return
		}
		timeout := time.After(20 * time.Second)
		for open := 0; open < n; { // the index's own connection among them
			select {
			case <-o.accepted:
				open++
			case <-timeout:
				t.Errorf("only %d of %d connections open while the index was held", open, n)
				return
			}
		}
	}
	c, err := New(Options{Connections: n})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 1; i <= 2; i++ {
		if got := fetchRaw(t, c, o, i); !bytes.Equal(got, o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i)]) {
			t.Fatalf("segment %d: not the resource", i)
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.conns != n {
		t.Errorf("%d connections for N = %d: %q", o.conns, n, o.reqs)
	}
}

// TestNoIndexKeepsNConnections: without an index (a live track: every size by HEAD,
// no fetching ahead) ParS as by default opens N connections, not N more per
// segment: only a rendition's first segment dials its connections ahead.
func TestNoIndexKeepsNConnections(t *testing.T) {
	const n = 4
	o := newRawOrigin(t, 300_000, 300_001, 299_999, 300_000, 250_000)
	c, err := New(Options{Connections: n, NoIndex: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 1; i <= 5; i++ {
		if got := fetchRaw(t, c, o, i); !bytes.Equal(got, o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i)]) {
			t.Fatalf("segment %d: not the resource", i)
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.conns > n+1 { // + one for the HEADs while the chain holds its N
		t.Errorf("%d connections for N = %d over 5 segments", o.conns, n)
	}
}
