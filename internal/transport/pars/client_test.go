package pars

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player"
)

// testOrigin serves fixed files under /vod/a/v/{n}.m4s like the origin (ranges by
// http.ServeContent), optionally a sidecar index, optionally ignoring Range, and
// lets a test break chosen requests.
type testOrigin struct {
	files   map[string][]byte // path → body
	index   bool
	stale   map[string]int64 // sizes the index gives instead of the true ones
	noRange bool
	// fault may answer a request itself (return true): break it, stall it.
	fault func(w http.ResponseWriter, r *http.Request) bool

	mu   sync.Mutex
	reqs []seen
}

type seen struct {
	method, path, rng, remote string
}

func newTestOrigin(t *testing.T, sizes ...int) (*testOrigin, *httptest.Server) {
	t.Helper()
	o := &testOrigin{files: map[string][]byte{}}
	rnd := rand.New(rand.NewPCG(1, 2))
	for i, n := range sizes {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(rnd.UintN(256))
		}
		o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i+1)] = b
	}
	s := httptest.NewServer(o)
	t.Cleanup(s.Close)
	return o, s
}

func (o *testOrigin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	o.reqs = append(o.reqs, seen{r.Method, r.URL.Path, r.Header.Get("Range"), r.RemoteAddr})
	o.mu.Unlock()
	if o.fault != nil && o.fault(w, r) {
		return
	}
	if path.Base(r.URL.Path) == IndexFile {
		if !o.index {
			http.NotFound(w, r)
			return
		}
		ix := Index{Track: "v"}
		for p, b := range o.files {
			n, _ := strconv.ParseUint(strings.TrimSuffix(path.Base(p), ".m4s"), 10, 64)
			size := int64(len(b))
			if st, ok := o.stale[p]; ok {
				size = st
			}
			ix.Segments = append(ix.Segments, IndexSegment{Number: n, Time: n * 1000, Size: size})
		}
		_ = json.NewEncoder(w).Encode(ix)
		return
	}
	b, ok := o.files[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if o.noRange {
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		if r.Method != http.MethodHead {
			_, _ = w.Write(b)
		}
		return
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
}

// requests returns what the origin saw, filtered by method ("" for all).
func (o *testOrigin) requests(method string) []seen {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []seen
	for _, s := range o.reqs {
		if method == "" || s.method == method {
			out = append(out, s)
		}
	}
	return out
}

func (o *testOrigin) reset() {
	o.mu.Lock()
	o.reqs = nil
	o.mu.Unlock()
}

func newTestClient(t *testing.T, n int, mut ...func(*Options)) *Client {
	t.Helper()
	// One request and one range per connection at a time, the mode most of these
	// tests were written for; the default (pipelined, two ranges per connection) is
	// TestDefaultPipelined's and pipelinedClient's.
	o := Options{Connections: n, MinRange: 1, RangesPerConnection: 1}
	o.Streams, o.StallTimeout = 1, 5*time.Second
	for _, f := range mut {
		f(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func fetchSeg(t *testing.T, c *Client, s *httptest.Server, n int) *player.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.Fetch(ctx, player.SegmentRequest{Kind: player.RequestMedia, URL: fmt.Sprintf("%s/vod/a/v/%d.m4s", s.URL, n), Number: uint64(n), KeepBody: true})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestReassembly(t *testing.T) {
	sizes := []int{1, 1000, 65536 + 7, 300_001}
	for _, n := range []int{1, 2, 3, 4, 8} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			o, s := newTestOrigin(t, sizes...)
			o.index = true
			// One segment at a time, so each segment's requests can be counted
			// (pipelining: pipeline_test.go).
			c := newTestClient(t, n, func(o *Options) { o.NoPipeline = true })
			for i, size := range sizes {
				o.reset()
				resp := fetchSeg(t, c, s, i+1)
				want := o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i+1)]
				if !bytes.Equal(resp.Body, want) || resp.PayloadBytes != int64(size) {
					t.Fatalf("segment %d (%d bytes): reassembled %d bytes, not the resource", i+1, size, len(resp.Body))
				}
				if !resp.OverheadExact || resp.OverheadBytes <= 0 {
					t.Fatalf("overhead %d exact %v", resp.OverheadBytes, resp.OverheadExact)
				}
				gets := o.requests(http.MethodGet)
				var media []seen
				for _, g := range gets {
					if strings.HasSuffix(g.path, ".m4s") {
						media = append(media, g)
					}
				}
				wantReqs := min(n, size)
				if len(media) != wantReqs {
					t.Fatalf("segment %d: %d media requests, want %d: %v", i+1, len(media), wantReqs, media)
				}
				remotes := map[string]bool{}
				for _, g := range media {
					remotes[g.remote] = true
					if n > 1 && size > 1 && g.rng == "" {
						t.Fatalf("segment %d: request without Range: %v", i+1, g)
					}
				}
				if len(remotes) != wantReqs {
					t.Fatalf("segment %d: %d ranges came over %d connections, want one each", i+1, len(media), len(remotes))
				}
			}
			// Persistent: the connections of the last segment are those of the first.
			if rd, wr := c.WireBytes(); rd <= 0 || wr <= 0 {
				t.Fatalf("wire bytes %d/%d", rd, wr)
			}
		})
	}
}

func TestConnectionsArePersistent(t *testing.T) {
	o, s := newTestOrigin(t, 200_000, 200_000, 200_000)
	o.index = true
	c := newTestClient(t, 4)
	all := map[string]bool{}
	for i := 1; i <= 3; i++ {
		fetchSeg(t, c, s, i)
	}
	for _, g := range o.requests("") {
		all[g.remote] = true
	}
	if len(all) != 4 {
		t.Fatalf("3 segments over N=4 used %d connections, want 4 kept open", len(all))
	}
}

// TestFailedRangeIsRetriedAlone: a range that breaks half way is asked again from its
// first missing byte; the other ranges are not fetched again.
func TestFailedRangeIsRetriedAlone(t *testing.T) {
	const size = 400_000
	o, s := newTestOrigin(t, size)
	o.index = true
	rs := Split(size, 4, 1)
	victim := rs[2]
	var once sync.Once
	o.fault = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Range") != victim.Header() {
			return false
		}
		broke := false
		once.Do(func() {
			broke = true
			b := o.files[r.URL.Path][victim.Off : victim.Off+1000]
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", victim.Off, victim.End()-1, size))
			w.Header().Set("Content-Length", strconv.FormatInt(victim.Len, 10))
			w.WriteHeader(http.StatusPartialContent)
			_, _ = w.Write(b)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection breaks
		})
		return broke
	}
	c := newTestClient(t, 4)
	resp := fetchSeg(t, c, s, 1)
	if !bytes.Equal(resp.Body, o.files["/vod/a/v/1.m4s"]) {
		t.Fatal("reassembled segment differs from the resource")
	}
	var victimReqs []string
	per := map[string]int{}
	for _, g := range o.requests(http.MethodGet) {
		if !strings.HasSuffix(g.path, ".m4s") {
			continue
		}
		per[g.rng]++
		var from, to int64
		if _, err := fmt.Sscanf(g.rng, "bytes=%d-%d", &from, &to); err != nil {
			t.Fatalf("request %v: %v", g, err)
		}
		if from >= victim.Off && from < victim.End() {
			victimReqs = append(victimReqs, g.rng)
		}
	}
	for _, i := range []int{0, 1, 3} {
		if per[rs[i].Header()] != 1 {
			t.Fatalf("range %s requested %d times, want once: %v", rs[i].Header(), per[rs[i].Header()], per)
		}
	}
	if len(victimReqs) != 2 {
		t.Fatalf("broken range: requests %v, want the original and one retry", victimReqs)
	}
	var from, to int64
	if _, err := fmt.Sscanf(victimReqs[1], "bytes=%d-%d", &from, &to); err != nil {
		t.Fatal(err)
	}
	if from <= victim.Off || from > victim.Off+1000 || to != victim.End()-1 {
		t.Fatalf("retry asked %s, want to resume after the bytes received of %s", victimReqs[1], victim.Header())
	}
	if st := c.Stats(); st.Retries != 1 || st.Ranges != 5 {
		t.Fatalf("stats %+v, want 1 retry, 5 range requests", st)
	}
}

// TestStalledRangeIsRetried: a range that stops sending is abandoned after the stall
// timeout and asked again from where it stopped.
func TestStalledRangeIsRetried(t *testing.T) {
	const size = 300_000
	o, s := newTestOrigin(t, size)
	o.index = true
	rs := Split(size, 3, 1)
	victim := rs[1]
	var once sync.Once
	o.fault = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Range") != victim.Header() {
			return false
		}
		stalled := false
		once.Do(func() {
			stalled = true
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", victim.Off, victim.End()-1, size))
			w.Header().Set("Content-Length", strconv.FormatInt(victim.Len, 10))
			w.WriteHeader(http.StatusPartialContent)
			_, _ = w.Write(o.files[r.URL.Path][victim.Off : victim.Off+500])
			w.(http.Flusher).Flush()
			select { // stall until the client gives up (bounded)
			case <-r.Context().Done():
			case <-time.After(20 * time.Second):
			}
		})
		return stalled
	}
	c := newTestClient(t, 3, func(o *Options) { o.StallTimeout = 200 * time.Millisecond })
	resp := fetchSeg(t, c, s, 1)
	if !bytes.Equal(resp.Body, o.files["/vod/a/v/1.m4s"]) {
		t.Fatal("reassembled segment differs from the resource")
	}
	if st := c.Stats(); st.Retries != 1 || st.Ranges != 4 {
		t.Fatalf("stats %+v, want 1 retry of the stalled range", st)
	}
}

func TestRangeFailsForGood(t *testing.T) {
	o, s := newTestOrigin(t, 100_000)
	o.index = true
	rs := Split(100_000, 2, 1)
	o.fault = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Range") == rs[1].Header() {
			http.Error(w, "no", http.StatusServiceUnavailable)
			return true
		}
		return false
	}
	c := newTestClient(t, 2)
	_, err := c.Fetch(context.Background(), player.SegmentRequest{Kind: player.RequestMedia, URL: s.URL + "/vod/a/v/1.m4s"})
	if !errors.Is(err, media.ErrUnavailable) {
		t.Fatalf("err = %v, want media.ErrUnavailable", err)
	}
	if st := c.Stats(); st.Retries != 0 {
		t.Fatalf("a 503 was retried by the transport (the player retries segments): %+v", st)
	}
	_, err = c.Fetch(context.Background(), player.SegmentRequest{Kind: player.RequestMedia, URL: s.URL + "/vod/a/v/9.m4s"})
	if !errors.Is(err, media.ErrNotFound) {
		t.Fatalf("missing segment: err = %v, want media.ErrNotFound", err)
	}
}

// TestNoRangeServer: a server that answers ranges with 200 and the whole resource is
// detected on the first segment (its body is used as is) and then asked with one GET.
func TestNoRangeServer(t *testing.T) {
	o, s := newTestOrigin(t, 250_000, 250_000)
	o.noRange = true
	c := newTestClient(t, 4)
	resp := fetchSeg(t, c, s, 1)
	if !bytes.Equal(resp.Body, o.files["/vod/a/v/1.m4s"]) {
		t.Fatal("segment from a server without Range differs from the resource")
	}
	if st := c.Stats(); st.Fallbacks != 1 {
		t.Fatalf("stats %+v, want one fallback", st)
	}
	o.reset()
	resp = fetchSeg(t, c, s, 2)
	if !bytes.Equal(resp.Body, o.files["/vod/a/v/2.m4s"]) {
		t.Fatal("second segment differs")
	}
	var reqs []seen // cancelled ranges of segment 1 may still arrive: look at segment 2
	for _, r := range o.requests("") {
		if r.path == "/vod/a/v/2.m4s" {
			reqs = append(reqs, r)
		}
	}
	if len(reqs) != 1 || reqs[0].method != http.MethodGet || reqs[0].rng != "" {
		t.Fatalf("after the fallback: requests %v, want one plain GET", reqs)
	}
}

func TestSizeFromIndexElseHead(t *testing.T) {
	t.Run("index", func(t *testing.T) {
		o, s := newTestOrigin(t, 50_000, 60_000, 70_000)
		o.index = true
		c := newTestClient(t, 2)
		for i := 1; i <= 3; i++ {
			fetchSeg(t, c, s, i)
		}
		if st := c.Stats(); st.Heads != 0 {
			t.Fatalf("%d HEAD requests with an index", st.Heads)
		}
		n := 0
		for _, g := range o.requests(http.MethodGet) {
			if strings.HasSuffix(g.path, IndexFile) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("index fetched %d times, want once", n)
		}
	})
	t.Run("head", func(t *testing.T) {
		o, s := newTestOrigin(t, 50_000, 60_000, 70_000)
		c := newTestClient(t, 2)
		for i := 1; i <= 3; i++ {
			resp := fetchSeg(t, c, s, i)
			if !bytes.Equal(resp.Body, o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i)]) {
				t.Fatalf("segment %d differs", i)
			}
		}
		if st := c.Stats(); st.Heads != 3 {
			t.Fatalf("%d HEAD requests without an index, want 3", st.Heads)
		}
		fetchSeg(t, c, s, 1) // its size is known now
		if st := c.Stats(); st.Heads != 3 {
			t.Fatalf("size of a segment asked twice: %d HEADs", st.Heads)
		}
	})
	t.Run("no index option", func(t *testing.T) {
		o, s := newTestOrigin(t, 50_000)
		o.index = true
		c := newTestClient(t, 2, func(o *Options) { o.NoIndex = true })
		fetchSeg(t, c, s, 1)
		if st := c.Stats(); st.Heads != 1 {
			t.Fatalf("NoIndex: %d HEADs, want 1", st.Heads)
		}
	})
}

func TestNonMediaIsOneGET(t *testing.T) {
	o, s := newTestOrigin(t, 100_000)
	c := newTestClient(t, 4)
	resp, err := c.Fetch(context.Background(), player.SegmentRequest{Kind: player.RequestInit, URL: s.URL + "/vod/a/v/1.m4s", KeepBody: true})
	if err != nil || !bytes.Equal(resp.Body, o.files["/vod/a/v/1.m4s"]) {
		t.Fatalf("init: %v", err)
	}
	if reqs := o.requests(""); len(reqs) != 1 || reqs[0].rng != "" {
		t.Fatalf("init: requests %v, want one plain GET", reqs)
	}
}

func TestNewRejectsBadN(t *testing.T) {
	for _, n := range []int{-1, 9} {
		if _, err := New(Options{Connections: n}); err == nil {
			t.Errorf("New(Connections: %d) accepted", n)
		}
	}
}

// TestAutoChoosesAndReports: with auto the client probes 2 then 1 connection; on a
// loopback server the model is not expected to be valid, but the client must choose,
// keep working and say why.
func TestAutoChoosesAndReports(t *testing.T) {
	sizes := make([]int, 8)
	for i := range sizes {
		sizes[i] = 200_000
	}
	o, s := newTestOrigin(t, sizes...)
	o.index = true
	c := newTestClient(t, 0, func(o *Options) { o.Auto = true; o.MinRTTs = 0.001; o.SkipRTTs = 0.001 })
	var ns []int
	for i := 1; i <= 8; i++ {
		resp := fetchSeg(t, c, s, i)
		if !bytes.Equal(resp.Body, o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i)]) {
			t.Fatalf("segment %d differs", i)
		}
		ns = append(ns, c.Connections())
	}
	if ns[0] != 2 {
		t.Fatalf("N sequence %v: want to start probing with 2", ns)
	}
	est, ok := c.Estimate()
	if !ok || est.Reason == "" {
		t.Fatalf("estimate %+v", est)
	}
	t.Logf("N sequence %v; estimate: %s", ns, est.Reason)
}

// TestStaleIndex: an index that gives the wrong size fails that fetch (a segment of
// the wrong length must not reach the player) and the retry uses the server's size.
func TestStaleIndex(t *testing.T) {
	o, s := newTestOrigin(t, 100_000)
	o.index = true
	o.stale = map[string]int64{"/vod/a/v/1.m4s": 90_000}
	real := o.files["/vod/a/v/1.m4s"]
	c := newTestClient(t, 2)
	req := player.SegmentRequest{Kind: player.RequestMedia, URL: s.URL + "/vod/a/v/1.m4s", KeepBody: true}
	if _, err := c.Fetch(context.Background(), req); err == nil || !strings.Contains(err.Error(), "Content-Range") {
		t.Fatalf("fetch with a stale index: err %v, want a Content-Range mismatch", err)
	}
	resp, err := c.Fetch(context.Background(), req)
	if err != nil || !bytes.Equal(resp.Body, real) {
		t.Fatalf("retry: %v", err)
	}
}

func TestNoHEAD(t *testing.T) {
	o, s := newTestOrigin(t, 100_000)
	o.fault = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodHead {
			http.Error(w, "no", http.StatusMethodNotAllowed)
			return true
		}
		return false
	}
	c := newTestClient(t, 4)
	resp := fetchSeg(t, c, s, 1)
	if !bytes.Equal(resp.Body, o.files["/vod/a/v/1.m4s"]) {
		t.Fatal("body differs")
	}
	if gets := o.requests(http.MethodGet); len(gets) != 2 || gets[1].rng != "" { // the index, then one plain GET
		t.Fatalf("requests %v, want the index and one plain GET", gets)
	}
}

// TestConcurrentFetches: the player fetches video and audio at once; each fetch takes
// its own connections and both reassemble correctly.
func TestConcurrentFetches(t *testing.T) {
	o, s := newTestOrigin(t, 300_000, 200_000, 250_000, 150_000)
	o.index = true
	c := newTestClient(t, 3)
	for round := 0; round < 3; round++ {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := 1; i <= 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := c.Fetch(context.Background(), player.SegmentRequest{Kind: player.RequestMedia, URL: fmt.Sprintf("%s/vod/a/v/%d.m4s", s.URL, i), KeepBody: true})
				if err == nil && !bytes.Equal(resp.Body, o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i)]) {
					err = fmt.Errorf("segment %d differs", i)
				}
				errs[i-1] = err
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	remotes := map[string]bool{}
	for _, r := range o.requests("") {
		remotes[r.remote] = true
	}
	if len(remotes) > 12 {
		t.Fatalf("%d connections for 4 concurrent fetches of 3 ranges: connections are not reused", len(remotes))
	}
	if rd, _ := c.WireBytes(); rd < 3*900_000 {
		t.Fatalf("wire bytes read %d, less than the payload", rd)
	}
}

// TestSamples: fixed N gives one throughput sample per segment split into N ranges;
// whole-segment samples are the segment over its download time.
func TestSamples(t *testing.T) {
	o, s := newTestOrigin(t, 400_000, 20_000)
	o.index = true
	c := newTestClient(t, 2, func(o *Options) { o.WholeSegmentSamples = true })
	resp := fetchSeg(t, c, s, 1)
	fetchSeg(t, c, s, 2) // too small for two ranges of 64 KiB: no sample
	st := c.Stats()
	if len(st.Samples) != 1 || st.Samples[0].N != 2 || st.Samples[0].Bytes != 400_000 || st.Samples[0].D != resp.Duration() {
		t.Fatalf("samples %+v, want one of 400000 bytes in %v", st.Samples, resp.Duration())
	}
}
