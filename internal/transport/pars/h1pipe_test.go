package pars

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/transport/httppull"
)

// rawOrigin is an HTTP/1.1 origin written on bare TCP so a test sees what arrives on
// each connection and when: it reads requests as soon as they come (net/http's
// server reads a pipelined request only after answering the one before) and answers
// them in order, segments with ranges and the sidecar index.
type rawOrigin struct {
	t     *testing.T
	ln    net.Listener
	files map[string][]byte
	// hold, if set, runs before the last byte of a body: the test decides when the
	// response may end. conn counts connections from 0.
	hold func(conn int, r *http.Request)
	// accepted is told each connection's number as it is accepted (while it has room).
	accepted chan int

	mu      sync.Mutex
	conns   int
	maxOut  map[int]int // per connection: most requests read and not yet answered
	reqs    []string    // "conn path range", in the order they were read
	arrived chan string // the same, as they are read
}

func newRawOrigin(t *testing.T, sizes ...int) *rawOrigin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &rawOrigin{t: t, ln: ln, files: map[string][]byte{}, maxOut: map[int]int{}, arrived: make(chan string, 1024), accepted: make(chan int, 1024)}
	for i, n := range sizes {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(i*17 + j*3 + j>>9)
		}
		o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i+1)] = b
	}
	go o.serve()
	t.Cleanup(func() { ln.Close() })
	return o
}

func (o *rawOrigin) url() string { return "http://" + o.ln.Addr().String() }

func (o *rawOrigin) serve() {
	for {
		c, err := o.ln.Accept()
		if err != nil {
			return
		}
		o.mu.Lock()
		id := o.conns
		o.conns++
		o.mu.Unlock()
		select {
		case o.accepted <- id:
		default:
		}
		go o.conn(id, c)
	}
}

// conn reads requests into a queue at once and answers them in order.
func (o *rawOrigin) conn(id int, c net.Conn) {
	defer c.Close()
	queue := make(chan *http.Request, 64)
	out := 0 // read and not answered; guarded by o.mu
	go func() {
		defer close(queue)
		br := bufio.NewReader(c)
		for {
			r, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			line := fmt.Sprintf("%d %s %s", id, r.URL.Path, r.Header.Get("Range"))
			o.mu.Lock()
			out++
			o.maxOut[id] = max(o.maxOut[id], out)
			o.reqs = append(o.reqs, line)
			o.mu.Unlock()
			o.arrived <- line
			queue <- r
		}
	}()
	for r := range queue {
		head, body := o.answer(r)
		last := max(len(body)-1, 0)
		if _, err := c.Write(append(head, body[:last]...)); err != nil {
			return
		}
		if o.hold != nil {
			o.hold(id, r)
		}
		// Answered once its last bytes are handed to the socket: the client may read
		// them and send its next request before Write returns here.
		o.mu.Lock()
		out--
		o.mu.Unlock()
		if _, err := c.Write(body[last:]); err != nil {
			return
		}
	}
}

func (o *rawOrigin) answer(r *http.Request) (head, body []byte) {
	status := "200 OK"
	var extra string
	if strings.HasSuffix(r.URL.Path, "/"+IndexFile) {
		ix := Index{Track: "v"}
		for n := 1; ; n++ {
			b, ok := o.files[fmt.Sprintf("/vod/a/v/%d.m4s", n)]
			if !ok {
				break
			}
			ix.Segments = append(ix.Segments, IndexSegment{Number: uint64(n), Time: uint64(n) * 1000, Size: int64(len(b))})
		}
		body, _ = json.Marshal(ix)
	} else if b, ok := o.files[r.URL.Path]; !ok {
		status, body = "404 Not Found", []byte("no")
	} else if rng := r.Header.Get("Range"); rng != "" {
		var a, z int64
		if _, err := fmt.Sscanf(rng, "bytes=%d-%d", &a, &z); err != nil || a > z || z >= int64(len(b)) {
			status, body = "416 Range Not Satisfiable", nil
		} else {
			status, body = "206 Partial Content", b[a:z+1]
			extra = fmt.Sprintf("Content-Range: bytes %d-%d/%d\r\n", a, z, len(b))
		}
	} else {
		body = b
	}
	if r.Method == http.MethodHead {
		return fmt.Appendf(nil, "HTTP/1.1 %s\r\nContent-Length: %d\r\n%s\r\n", status, len(body), extra), nil
	}
	return fmt.Appendf(nil, "HTTP/1.1 %s\r\nContent-Length: %d\r\n%s\r\n", status, len(body), extra), body
}

func (o *rawOrigin) maxOutstanding() map[int]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := map[int]int{}
	for k, v := range o.maxOut {
		m[k] = v
	}
	return m
}

func pipelinedClient(t *testing.T, n, streams int, mut ...func(*Options)) *Client {
	return newTestClient(t, n, append([]func(*Options){func(o *Options) { o.Streams, o.LaneProtocol = streams, httppull.HTTP1 }}, mut...)...)
}

func fetchRaw(t *testing.T, c *Client, o *rawOrigin, n int) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.Fetch(ctx, player.SegmentRequest{Kind: player.RequestMedia, URL: fmt.Sprintf("%s/vod/a/v/%d.m4s", o.url(), n), Number: uint64(n), KeepBody: true})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Body
}

// TestH1PipelineWritesNextRequestEarly: with two requests per HTTP/1.1 connection,
// the request for segment 3 arrives on the connection while segment 2's body is
// still being sent (the origin holds its last byte until then), so the request's
// round trip overlaps the end of the body before it. N = 1: one connection,
// segments whole.
func TestH1PipelineWritesNextRequestEarly(t *testing.T) {
	o := newRawOrigin(t, 300_000, 300_000, 300_000, 300_000)
	seg3 := make(chan struct{})
	var once sync.Once
	o.hold = func(conn int, r *http.Request) {
		if r.URL.Path != "/vod/a/v/2.m4s" {
			return
		}
		for line := range o.arrived {
			if strings.HasPrefix(line, fmt.Sprintf("%d /vod/a/v/3.m4s", conn)) {
				once.Do(func() { close(seg3) })
				return
			}
		}
	}
	c := pipelinedClient(t, 1, 2)
	for i := 1; i <= 4; i++ {
		if i == 2 {
			go func() {
				select {
				case <-seg3:
				case <-time.After(20 * time.Second):
					t.Error("segment 3 was not requested on the connection while segment 2's last byte was held")
					o.ln.Close()
				}
			}()
		}
		if got := fetchRaw(t, c, o, i); !bytes.Equal(got, o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i)]) {
			t.Fatalf("segment %d: %d bytes, not the resource", i, len(got))
		}
	}
	select {
	case <-seg3:
	default:
		t.Fatal("segment 3's request did not overlap segment 2's body")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.conns > 2 { // + the connection of the index request, which the pool keeps
		t.Errorf("%d connections for N = 1", o.conns)
	}
}

// TestH1PipelineLimitAndReassembly: over N = 1, 2, 4 connections with two requests
// each, every segment is the resource byte for byte, no connection ever had more
// than two requests outstanding at the origin, at most N connections were opened, and
// every range was asked for once.
func TestH1PipelineLimitAndReassembly(t *testing.T) {
	sizes := []int{250_000, 1000, 65536 + 7, 300_001, 1, 250_000, 400_000, 123_457}
	for _, n := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			o := newRawOrigin(t, sizes...)
			c := pipelinedClient(t, n, 2)
			for i := range sizes {
				if got := fetchRaw(t, c, o, i+1); !bytes.Equal(got, o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i+1)]) {
					t.Fatalf("segment %d: %d bytes, not the resource", i+1, len(got))
				}
			}
			for conn, m := range o.maxOutstanding() {
				if m > 2 {
					t.Errorf("connection %d had %d requests outstanding, want at most 2", conn, m)
				}
			}
			o.mu.Lock()
			conns, reqs := o.conns, o.reqs
			o.mu.Unlock()
			if conns > n+1 { // + the connection of the index request, which the pool keeps
				t.Errorf("%d connections for N = %d", conns, n)
			}
			seen := map[string]bool{}
			for _, r := range reqs {
				_, pr, _ := strings.Cut(r, " ")
				if seen[pr] && strings.Contains(pr, ".m4s") {
					t.Errorf("asked twice: %s", pr)
				}
				seen[pr] = true
			}
			if st := c.Stats(); st.Retries != 0 || st.Wasted != 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// TestH1PipelineSeek: a request elsewhere (a seek) while the next segments' ranges
// are pipelined on the connections drops them (Stats.Wasted); the segment sought and
// the ones after it are still the resources byte for byte.
func TestH1PipelineSeek(t *testing.T) {
	sizes := make([]int, 12)
	for i := range sizes {
		sizes[i] = 200_000 + i*1111
	}
	o := newRawOrigin(t, sizes...)
	c := pipelinedClient(t, 2, 2)
	for _, i := range []int{1, 2, 9, 10, 11, 3} {
		if got := fetchRaw(t, c, o, i); !bytes.Equal(got, o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i)]) {
			t.Fatalf("segment %d: %d bytes, not the resource", i, len(got))
		}
	}
	if st := c.Stats(); st.Wasted == 0 {
		t.Errorf("stats %+v: the seek wasted nothing", st)
	}
	for conn, m := range o.maxOutstanding() {
		if m > 2 {
			t.Errorf("connection %d had %d requests outstanding", conn, m)
		}
	}
}

// TestPipeConnBrokenResponse: a server that closes the connection in the middle of a
// body makes the request fail with an error (and the one pipelined behind it too),
// never hang; the next request dials again and succeeds.
func TestPipeConnBrokenResponse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for k := 0; ; k++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					if _, err := http.ReadRequest(br); err != nil {
						return
					}
					if k == 0 { // the first connection carries two requests and breaks half way
						if _, err := http.ReadRequest(br); err != nil {
							return
						}
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf")
						return
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nwhol")
				}
			}()
		}
	}()
	p := newPipeConn(ConnOptions{}.withDefaults(), 2)
	defer p.Close()
	u := "http://" + ln.Addr().String() + "/x"
	get := func() (string, error) {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		resp, err := p.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() { _, err := get(); errs <- err }()
	}
	for range 2 {
		if err := <-errs; err == nil {
			t.Error("a request on the broken connection succeeded")
		}
	}
	if b, err := get(); err != nil || b != "whol" {
		t.Fatalf("after the break: %q, %v", b, err)
	}
}

// TestRangesPerConnection: with two ranges per connection each segment after the
// first (start-up: one range per connection) is asked for as 2·N ranges, spread over at most N connections with at most
// two requests outstanding on each, and reassembled byte for byte.
func TestRangesPerConnection(t *testing.T) {
	sizes := []int{300_000, 300_001, 299_999, 250_000, 400_000}
	o := newRawOrigin(t, sizes...)
	c := pipelinedClient(t, 2, 2, func(o *Options) { o.RangesPerConnection = 2 })
	for i := range sizes {
		if got := fetchRaw(t, c, o, i+1); !bytes.Equal(got, o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i+1)]) {
			t.Fatalf("segment %d: %d bytes, not the resource", i+1, len(got))
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	perSeg := map[string]int{}
	for _, r := range o.reqs {
		f := strings.Fields(r)
		if len(f) == 3 && strings.HasSuffix(f[1], ".m4s") {
			perSeg[f[1]]++
		}
	}
	for i := range sizes {
		want := 4
		if i == 0 {
			want = 2
		}
		if got := perSeg[fmt.Sprintf("/vod/a/v/%d.m4s", i+1)]; got != want {
			t.Errorf("segment %d: %d range requests, want %d", i+1, got, want)
		}
	}
	for conn, m := range o.maxOut {
		if m > 2 {
			t.Errorf("connection %d had %d requests outstanding", conn, m)
		}
	}
	if o.conns > 3 { // N + the index request's
		t.Errorf("%d connections", o.conns)
	}
}

// TestPipeConnInterimResponse: an interim 1xx answer before a final one is skipped,
// so the responses still pair with their requests in order.
func TestPipeConnInterimResponse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		for _, answer := range []string{
			"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst",
			"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecond",
		} {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			io.WriteString(c, answer)
		}
		io.Copy(io.Discard, br)
	}()
	p := newPipeConn(ConnOptions{}.withDefaults(), 2)
	defer p.Close()
	for _, want := range []string{"first", "second"} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/x", nil)
		resp, err := p.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || string(b) != want {
			t.Fatalf("%s %q %v, want 200 %q", resp.Status, b, err, want)
		}
	}
}
