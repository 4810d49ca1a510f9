package pars

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/transport/httppull"
)

// mediaRequests lists the origin's GETs of segments.
func mediaRequests(o *testOrigin) []seen {
	var out []seen
	for _, g := range o.requests(http.MethodGet) {
		if strings.HasSuffix(g.path, ".m4s") {
			out = append(out, g)
		}
	}
	return out
}

// TestPipelineReassembly: segments fetched in order through the pipeline are the
// resources byte for byte, every segment after the second was started before the
// player asked for it (the first has the link to itself: start-up), no range is
// fetched twice and nothing is wasted.
func TestPipelineReassembly(t *testing.T) {
	sizes := []int{200_000, 1000, 65536 + 7, 300_001, 1, 250_000}
	for _, n := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			o, s := newTestOrigin(t, sizes...)
			o.index = true
			c := newTestClient(t, n)
			wantReqs := 0
			for i, size := range sizes {
				resp := fetchSeg(t, c, s, i+1)
				if !bytes.Equal(resp.Body, o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i+1)]) || resp.PayloadBytes != int64(size) {
					t.Fatalf("segment %d (%d bytes): %d bytes, not the resource", i+1, size, len(resp.Body))
				}
				if !resp.OverheadExact || resp.OverheadBytes <= 0 || resp.End.Before(resp.Start) {
					t.Fatalf("segment %d: overhead %d exact %v, %v → %v", i+1, resp.OverheadBytes, resp.OverheadExact, resp.Start, resp.End)
				}
				if n == 1 || size <= 1 {
					wantReqs++
				} else {
					wantReqs += min(n, size)
				}
			}
			st := c.Stats()
			if st.Prefetched != int64(len(sizes)-2) || st.Wasted != 0 || st.Retries != 0 {
				t.Errorf("stats %+v: want %d prefetched, none wasted", st, len(sizes)-2)
			}
			if got := len(mediaRequests(o)); got != wantReqs {
				t.Errorf("%d media requests, want %d (each range once): %v", got, wantReqs, mediaRequests(o))
			}
		})
	}
}

// TestPipelineOverlaps: while one range of segment 1 is held back by the origin, the
// connections that finished theirs already ask for segment 2's ranges — the link does
// not idle waiting for the slowest range. Shown by the order of events at the origin.
func TestPipelineOverlaps(t *testing.T) {
	o, s := newTestOrigin(t, 400_000, 400_000, 400_000, 400_000)
	o.index = true
	release := make(chan struct{})
	sawNext := make(chan struct{}, 8)
	o.fault = func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case r.URL.Path == "/vod/a/v/2.m4s" && strings.HasPrefix(r.Header.Get("Range"), "bytes=0-"):
			<-release // the slow range
		case r.URL.Path == "/vod/a/v/3.m4s":
			sawNext <- struct{}{}
		}
		return false
	}
	c := newTestClient(t, 4)
	fetchSeg(t, c, s, 1) // start-up: the first segment alone
	for _, r := range mediaRequests(o) {
		if r.path != "/vod/a/v/1.m4s" {
			t.Fatalf("%s requested with the first segment: start-up must have the link to itself", r.path)
		}
	}
	done := make(chan *player.Response, 1)
	go func() { done <- fetchSeg(t, c, s, 2) }()
	select {
	case <-sawNext:
	case <-done:
		t.Fatal("segment 2 finished while its first range was held")
	case <-time.After(20 * time.Second):
		close(release)
		t.Fatal("no range of segment 3 was requested while segment 2's slowest range was in flight")
	}
	close(release)
	<-done
	if got := fetchSeg(t, c, s, 3); !bytes.Equal(got.Body, o.files["/vod/a/v/3.m4s"]) {
		t.Fatal("segment 3 differs")
	}
}

// TestPipelineBounded: the pipeline runs at most Ahead segments ahead of the player:
// a player that stopped after segment 2 has caused requests for segments 1 to
// 2+Ahead only; a request elsewhere (a seek, a switch) drops what was fetched ahead
// and counts it.
func TestPipelineBounded(t *testing.T) {
	for _, ahead := range []int{1, 2} {
		t.Run(fmt.Sprintf("ahead=%d", ahead), func(t *testing.T) {
			o, s := newTestOrigin(t, 100_000, 100_000, 100_000, 100_000, 100_000, 100_000)
			o.index = true
			last := fmt.Sprintf("/vod/a/v/%d.m4s", 2+ahead)
			seenLast := make(chan struct{}, 8)
			o.fault = func(w http.ResponseWriter, r *http.Request) bool {
				if r.URL.Path == last {
					seenLast <- struct{}{}
				}
				return false
			}
			c := newTestClient(t, 2, func(o *Options) { o.Ahead = ahead })
			fetchSeg(t, c, s, 1)
			fetchSeg(t, c, s, 2)
			for range 2 { // both ranges of the last segment ahead asked for
				select {
				case <-seenLast:
				case <-time.After(20 * time.Second):
					t.Fatalf("%s was not fetched ahead", last)
				}
			}
			for _, r := range mediaRequests(o) {
				n, _ := strconv.Atoi(strings.TrimSuffix(path.Base(r.path), ".m4s"))
				if n > 2+ahead {
					t.Fatalf("requested %s with the player at segment 2: more than %d segments ahead", r.path, ahead)
				}
			}
			// A seek to segment 6: what was fetched ahead was for nothing.
			if got := fetchSeg(t, c, s, 6); !bytes.Equal(got.Body, o.files["/vod/a/v/6.m4s"]) {
				t.Fatal("segment 6 differs")
			}
			if st := c.Stats(); st.Wasted != int64(ahead) || st.Prefetched != 0 {
				t.Errorf("stats %+v: want %d segments counted as wasted, none taken", st, ahead)
			}
		})
	}
}

// TestPipelineLiveFetchesOneAtATime: without an index (a live track) the next
// segment's size is unknown, so nothing is fetched ahead.
func TestPipelineLiveFetchesOneAtATime(t *testing.T) {
	o, s := newTestOrigin(t, 100_000, 100_000)
	c := newTestClient(t, 2)
	fetchSeg(t, c, s, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The ranges of segment 1 and a HEAD for its size, nothing of segment 2.
	if _, err := c.Fetch(ctx, player.SegmentRequest{Kind: player.RequestManifest, URL: s.URL + "/vod/a/v/1.m4s"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range o.requests("") {
		if r.path == "/vod/a/v/2.m4s" {
			t.Fatalf("segment 2 requested ahead without a known size: %v", r)
		}
	}
	if st := c.Stats(); st.Prefetched != 0 || st.Heads != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestStreamsPerConnection: with two streams per connection (h2c on each of the N
// connections) the segments are reassembled, no more than N TCP connections are
// opened, and a connection asks for the next segment while its current one is still
// being sent (shown with N = 1: segment 2 held, segment 3 asked on the same
// connection).
func TestStreamsPerConnection(t *testing.T) {
	o := &testOrigin{files: map[string][]byte{}, index: true}
	for i := 1; i <= 4; i++ {
		b := make([]byte, 200_000+i)
		for j := range b {
			b[j] = byte(i*31 + j*7)
		}
		o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i)] = b
	}
	release := make(chan struct{})
	sawFour := make(chan struct{}, 1)
	o.fault = func(w http.ResponseWriter, r *http.Request) bool {
		switch r.URL.Path {
		case "/vod/a/v/2.m4s":
			<-release // held: only the connection's second stream can go on
		case "/vod/a/v/4.m4s":
			select {
			case sawFour <- struct{}{}:
			default:
			}
		}
		return false
	}
	s := httptest.NewUnstartedServer(o)
	s.Config.Protocols = new(http.Protocols)
	s.Config.Protocols.SetHTTP1(true)
	s.Config.Protocols.SetUnencryptedHTTP2(true)
	s.Start()
	t.Cleanup(s.Close)
	c := newTestClient(t, 1, func(o *Options) { o.Streams, o.LaneProtocol = 2, httppull.H2C })
	fetchSeg(t, c, s, 1)
	done := make(chan *player.Response, 1)
	go func() { done <- fetchSeg(t, c, s, 2) }()
	// Segment 4 is asked for only after segment 3 was received; both while segment 2
	// is held, so on the one connection's second stream.
	select {
	case <-sawFour:
	case <-time.After(20 * time.Second):
		close(release)
		t.Fatal("segments 3 and 4 were not fetched while segment 2 was held on the connection")
	}
	close(release)
	if got := <-done; !bytes.Equal(got.Body, o.files["/vod/a/v/2.m4s"]) || got.Protocol != "HTTP/2.0" {
		t.Fatalf("segment 2: %d bytes over %s", len(got.Body), got.Protocol)
	}
	for i := 3; i <= 4; i++ {
		if got := fetchSeg(t, c, s, i); !bytes.Equal(got.Body, o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i)]) {
			t.Fatalf("segment %d differs", i)
		}
	}
	conns := map[string]bool{}
	for _, r := range mediaRequests(o) {
		conns[r.remote] = true
	}
	if len(conns) != 1 {
		t.Errorf("%d TCP connections for N=1: %v", len(conns), conns)
	}
}

// TestStreamsReassembly: N = 2 and 4 connections with two streams each fetch every
// segment whole and correct, over at most N connections.
func TestStreamsReassembly(t *testing.T) {
	for _, n := range []int{2, 4} {
		o := &testOrigin{files: map[string][]byte{}, index: true}
		for i := 1; i <= 6; i++ {
			b := make([]byte, 100_000*i+i)
			for j := range b {
				b[j] = byte(i*13 + j*5)
			}
			o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i)] = b
		}
		s := httptest.NewUnstartedServer(o)
		s.Config.Protocols = new(http.Protocols)
		s.Config.Protocols.SetUnencryptedHTTP2(true)
		s.Start()
		c := newTestClient(t, n, func(o *Options) { o.Streams, o.LaneProtocol = 2, httppull.H2C })
		for i := 1; i <= 6; i++ {
			if got := fetchSeg(t, c, s, i); !bytes.Equal(got.Body, o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i)]) {
				t.Fatalf("N=%d: segment %d differs", n, i)
			}
		}
		conns := map[string]bool{}
		for _, r := range mediaRequests(o) {
			conns[r.remote] = true
		}
		if len(conns) > n {
			t.Errorf("N=%d: %d TCP connections", n, len(conns))
		}
		c.Close()
		s.Close()
	}
}

// TestNoFetchAheadWhileProbing: while the estimator measures X1 and X2, each probe
// segment has the link to itself — nothing is fetched ahead — so a one-connection
// sample is not taken while a two-connection fetch shares the link.
func TestNoFetchAheadWhileProbing(t *testing.T) {
	o, s := newTestOrigin(t, 100_000, 100_000, 100_000, 100_000, 100_000)
	o.index = true
	c := newTestClient(t, 0, func(o *Options) { o.Auto, o.Estimator.ProbeSamples = true, 1000 })
	for i := 1; i <= 5; i++ {
		fetchSeg(t, c, s, i)
	}
	if st := c.Stats(); st.Prefetched != 0 || st.Wasted != 0 {
		t.Errorf("stats %+v: fetched ahead while probing", st)
	}
	for _, r := range mediaRequests(o) {
		if r.path == "/vod/a/v/6.m4s" {
			t.Errorf("segment 6 requested")
		}
	}
}

// TestPipelineFewerConnections: when N drops (the estimator chose N = 1 after a probe
// at N = 2), the chain gives its surplus connection back: the segments fetched with
// N = 1 never run on two connections at once. Before, a pipelined chain (two requests
// per HTTP/1.1 connection) kept both connections busy with consecutive segments, so
// "N = 1" moved two segments at once and each one's sample was about half the link
// (the lab's BBR runs: 4.7 and 5.3 Mbit/s at N = 1 on a link one connection fills).
func TestPipelineFewerConnections(t *testing.T) {
	sizes := make([]int, 12)
	for i := range sizes {
		sizes[i] = 200_000
	}
	o, s := newTestOrigin(t, sizes...)
	o.index = true // sizes known: segments are fetched ahead
	var mu sync.Mutex
	var units []UnitTrace
	c := pipelinedClient(t, 2, 2, func(o *Options) {
		o.Trace = func(u UnitTrace) { mu.Lock(); units = append(units, u); mu.Unlock() }
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 1; i <= len(sizes); i++ {
		n := 2
		if i >= 3 {
			n = 1
		}
		req := player.SegmentRequest{Kind: player.RequestMedia, URL: fmt.Sprintf("%s/vod/a/v/%d.m4s", s.URL, i), Number: uint64(i)}
		if _, _, ok, err := c.fetchPipelined(ctx, req, n); !ok || err != nil {
			t.Fatalf("segment %d: pipelined %v, %v", i, ok, err)
		}
	}
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	// Segments 3 and 4 were fetched ahead with N = 2; from 5 on every job has N = 1.
	var one []UnitTrace
	for _, u := range units {
		if u.Segment >= 5 && !u.Err {
			one = append(one, u)
		}
	}
	if len(one) < len(sizes)-4 {
		t.Fatalf("%d units of segments 5..%d traced: %+v", len(one), len(sizes), one)
	}
	for i, a := range one {
		for _, b := range one[i+1:] {
			if a.Lane != b.Lane && a.Picked.Before(b.Done) && b.Picked.Before(a.Done) {
				t.Errorf("N = 1, yet segment %d (connection %d, %v–%v) and segment %d (connection %d, %v–%v) ran at once",
					a.Segment, a.Lane, a.Picked.Format("15:04:05.000000"), a.Done.Format("15:04:05.000000"),
					b.Segment, b.Lane, b.Picked.Format("15:04:05.000000"), b.Done.Format("15:04:05.000000"))
			}
		}
	}
}
