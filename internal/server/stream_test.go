package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// The tests of segments served while they are made. They follow events, never the
// wall clock: a chunk is appended, then it must arrive; the times it took are logged,
// not asserted. Every wait is bounded (guard) so a defect fails instead of hanging.

const guard = 10 * time.Second

// protocols are the ways a player reaches the HTTP listener: HTTP/1.1 through
// net/http alone, h2c, and HTTP/1.1 through the lean path in front (h1fast.go).
var protocols = []string{"HTTP/1.1", "h2c", leanProto}

const leanProto = "HTTP/1.1 lean"

// llOrigin is an origin over channel "ll" that the test feeds: one video track "v" at
// timescale 1000, segments of d cut in chunks of d/4, on the real clock (a follower
// waits in real time). Its client speaks proto.
func llOrigin(t *testing.T, d time.Duration, proto string) (*hub.Channel, *httptest.Server, *http.Client) {
	t.Helper()
	c, err := hub.NewChannel(hub.ChannelConfig{
		Info: &media.Stream{Name: "ll", SegmentDuration: d, Tracks: []*media.Track{
			{ID: "v", Kind: media.Video, Codec: "avc1.64001f", Bandwidth: 100000, Width: 320, Height: 180, FrameRate: "25", Timescale: 1000}}},
		Inits:    map[string][]byte{"v": []byte("vinit")},
		Timeline: media.Timeline{AvailabilityStart: time.Now().Add(-time.Minute), SegmentDuration: d, TimeShiftBufferDepth: 10 * d},
	})
	must(t, err)
	h := hub.New()
	must(t, h.AddChannel(context.Background(), c, nil))
	s := New(DefaultConfig(), h, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	ts := httptest.NewUnstartedServer(s.Handler())
	ts.Config.Protocols = new(http.Protocols)
	ts.Config.Protocols.SetHTTP1(true)
	ts.Config.Protocols.SetUnencryptedHTTP2(true)
	if proto == leanProto {
		ctx, cancel := context.WithCancel(context.Background())
		l := newH1Listener(ctx, ts.Listener, ts.Config, s.log, s.metrics.conns, true)
		ts.Listener = l
		t.Cleanup(func() {
			cancel()
			wctx, stop := context.WithTimeout(context.Background(), guard)
			defer stop()
			l.wait(wctx)
		})
	}
	ts.Start()
	t.Cleanup(ts.Close)
	tr := &http.Transport{DisableCompression: true}
	if proto == "h2c" {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return c, ts, &http.Client{Transport: tr}
}

// chunkOf is chunk i of segment n (d ms long, four chunks): recognisable bytes.
func chunkOf(n, i, d uint64) *media.Chunk {
	return &media.Chunk{Data: []byte(strings.Repeat(fmt.Sprintf("s%d-c%d;", n, i), 50)), Start: n*d + i*d/4, Duration: d / 4, Keyframe: i == 0}
}

func appendChunk(t *testing.T, c *hub.Channel, n, i, d uint64) []byte {
	t.Helper()
	ch := chunkOf(n, i, d)
	must(t, c.AppendChunk("v", n, ch, i == 3))
	return ch.Data
}

// readN reads exactly n bytes of body, failing after guard: a response that is not
// flushed chunk by chunk never delivers them.
func readN(t *testing.T, body io.Reader, n int) []byte {
	t.Helper()
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b := make([]byte, n)
		_, err := io.ReadFull(body, b)
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("reading %d bytes: %v", n, r.err)
		}
		return r.b
	case <-time.After(guard):
		t.Fatalf("%d bytes did not arrive within %s: the origin did not flush them", n, guard)
		return nil
	}
}

// readRest reads body to its end, failing after guard.
func readRest(t *testing.T, body io.Reader) ([]byte, error) {
	t.Helper()
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(body)
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		return r.b, r.err
	case <-time.After(guard):
		t.Fatalf("the body did not end within %s", guard)
		return nil, nil
	}
}

// waitUntil polls cond for up to guard.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(guard); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, guard)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func getStream(t *testing.T, ctx context.Context, client *http.Client, url string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	must(t, err)
	resp, err := client.Do(req)
	must(t, err)
	return resp
}

// A GET for a segment in progress gets the chunks stored so far at once, then each
// chunk as it is appended, and ends when the segment completes; the body is the
// complete segment, cacheable as one. Over HTTP/1.1 it is chunked transfer, over h2c
// DATA frames; neither has a Content-Length.
func TestStreamSegmentInProgress(t *testing.T) {
	const d = 1000
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			c, ts, client := llOrigin(t, d*time.Millisecond, proto)
			for i := uint64(0); i < 4; i++ {
				appendChunk(t, c, 0, i, d)
			}
			want := append(appendChunk(t, c, 1, 0, d), appendChunk(t, c, 1, 1, d)...)

			resp := getStream(t, context.Background(), client, ts.URL+"/live/ll/v/1.m4s")
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.ContentLength != -1 || resp.Header.Get("Etag") != "" ||
				resp.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || resp.Header.Get("Content-Type") != "video/mp4" {
				t.Fatalf("status %d, Content-Length %d, headers %v", resp.StatusCode, resp.ContentLength, resp.Header)
			}
			if wantMajor := map[string]int{"HTTP/1.1": 1, "h2c": 2, leanProto: 1}[proto]; resp.ProtoMajor != wantMajor {
				t.Fatalf("answered over %s", resp.Proto)
			}
			if proto != "h2c" && (len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked") {
				t.Errorf("Transfer-Encoding %v, want chunked", resp.TransferEncoding)
			}
			if got := readN(t, resp.Body, len(want)); !bytes.Equal(got, want) {
				t.Fatalf("first bytes %.40q, want the two chunks stored", got)
			}
			// These bytes came before the segment was complete: it is not yet.
			if _, complete, err := c.Partial("v", 1); err != nil || complete {
				t.Fatalf("segment 1 complete=%v err=%v before its last chunks were appended", complete, err)
			}
			body := want
			for i := uint64(2); i < 4; i++ {
				appended := time.Now()
				ch := appendChunk(t, c, 1, i, d)
				var got []byte
				if i < 3 {
					got = readN(t, resp.Body, len(ch))
				} else {
					var err error
					if got, err = readRest(t, resp.Body); err != nil {
						t.Fatalf("the end of the body: %v", err)
					}
				}
				t.Logf("%s: chunk %d arrived %v after it was appended", proto, i, time.Since(appended))
				if !bytes.Equal(got, ch) {
					t.Fatalf("chunk %d: got %.40q, want %.40q", i, got, ch)
				}
				body = append(body, got...)
			}
			seg, err := c.Segment("v", 1, time.Now())
			must(t, err)
			if !bytes.Equal(body, seg.Bytes()) {
				t.Errorf("the streamed body (%d bytes) is not the complete segment (%d bytes)", len(body), seg.Len())
			}
			waitUntil(t, "the follow ends", func() bool { return c.Followers() == 0 })

			// Complete now: the usual response, with its length.
			r2, whole := get(t, ts.URL+"/live/ll/v/1.m4s")
			if r2.StatusCode != http.StatusOK || r2.ContentLength != int64(len(body)) || !bytes.Equal(whole, body) || r2.Header.Get("Etag") == "" {
				t.Errorf("complete segment: %d, Content-Length %d, %d bytes, ETag %q", r2.StatusCode, r2.ContentLength, len(whole), r2.Header.Get("Etag"))
			}
		})
	}
}

// HEAD, a range and a conditional GET of a segment in progress keep their answer: 404.
func TestStreamSegmentOnlyPlainGet(t *testing.T) {
	c, ts, _ := llOrigin(t, time.Second, "HTTP/1.1")
	appendChunk(t, c, 0, 0, 1000)
	for _, tc := range []struct {
		method string
		hdr    []string
	}{{http.MethodHead, nil}, {http.MethodGet, []string{"Range", "bytes=0-9"}}, {http.MethodGet, []string{"If-None-Match", `"x"`}}} {
		req, _ := http.NewRequest(tc.method, ts.URL+"/live/ll/v/0.m4s", nil)
		for i := 0; i+1 < len(tc.hdr); i += 2 {
			req.Header.Set(tc.hdr[i], tc.hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Retry-After") != "1" {
			t.Errorf("%s %v: %d, Retry-After %q; want 404, 1", tc.method, tc.hdr, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	if n := c.Followers(); n != 0 {
		t.Errorf("%d followers", n)
	}
}

// The segment after the newest begun one is waited for: the request is answered when
// its first chunk comes. Not begun within a segment duration, it is 404 with
// Retry-After; a segment farther ahead is 404 without a wait. $Time$ names a segment
// in progress as well as $Number$.
func TestStreamNextSegment(t *testing.T) {
	const d = 400
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			c, ts, client := llOrigin(t, d*time.Millisecond, proto)
			for i := uint64(0); i < 4; i++ {
				appendChunk(t, c, 0, i, d)
			}
			appendChunk(t, c, 1, 0, d)

			type answer struct {
				resp *http.Response
				err  error
			}
			got := make(chan answer, 1)
			go func() {
				req, _ := http.NewRequest(http.MethodGet, ts.URL+"/live/ll/v/2.m4s", nil)
				resp, err := client.Do(req)
				got <- answer{resp, err}
			}()
			waitUntil(t, "the request for segment 2 waits", func() bool { return c.Followers() == 1 })
			first := appendChunk(t, c, 2, 0, d) // ends segment 1 too
			var a answer
			select {
			case a = <-got:
			case <-time.After(guard):
				t.Fatal("no answer after segment 2 began")
			}
			must(t, a.err)
			if a.resp.StatusCode != http.StatusOK {
				t.Fatalf("segment 2: %d", a.resp.StatusCode)
			}
			if b := readN(t, a.resp.Body, len(first)); !bytes.Equal(b, first) {
				t.Fatalf("segment 2 began with %.40q", b)
			}
			for i := uint64(1); i < 4; i++ {
				appendChunk(t, c, 2, i, d)
			}
			rest, err := readRest(t, a.resp.Body)
			a.resp.Body.Close()
			if err != nil || len(first)+len(rest) != int(mustSegment(t, c, 2).Len()) {
				t.Fatalf("segment 2: %d bytes then %v, want %d", len(first)+len(rest), err, mustSegment(t, c, 2).Len())
			}

			// Segment 3 is next and does not begin: a segment duration later, 404.
			asked := time.Now()
			resp := getStream(t, context.Background(), client, ts.URL+"/live/ll/v/3.m4s")
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Logf("%s: segment 3 answered %d after %v", proto, resp.StatusCode, time.Since(asked))
			if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Retry-After") != "1" || resp.Header.Get("Cache-Control") != "no-cache" ||
				!strings.Contains(string(body), "did not begin within") {
				t.Errorf("segment 3, never begun: %d %v %s", resp.StatusCode, resp.Header, body)
			}
			// Segment 5 is farther ahead than the next: 404, and nobody waits for it.
			resp = getStream(t, context.Background(), client, ts.URL+"/live/ll/v/5.m4s")
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "not the next to begin") {
				t.Errorf("segment 5: %d %s", resp.StatusCode, body)
			}

			// $Time$: segment 3 begins, and is asked for by its start time.
			first = appendChunk(t, c, 3, 0, d)
			resp = getStream(t, context.Background(), client, fmt.Sprintf("%s/live/ll/v/t%d.m4s", ts.URL, 3*d))
			defer resp.Body.Close()
			if b := readN(t, resp.Body, len(first)); resp.StatusCode != http.StatusOK || !bytes.Equal(b, first) {
				t.Fatalf("segment 3 by time: %d %.40q", resp.StatusCode, b)
			}
			for i := uint64(1); i < 4; i++ {
				appendChunk(t, c, 3, i, d)
			}
			if rest, err := readRest(t, resp.Body); err != nil || len(first)+len(rest) != int(mustSegment(t, c, 3).Len()) {
				t.Errorf("segment 3 by time: %d bytes, %v", len(first)+len(rest), err)
			}
			waitUntil(t, "no follower left", func() bool { return c.Followers() == 0 })
		})
	}
}

// goroutines is every goroutine's stack.
func goroutines() string {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	return b.String()
}

func mustSegment(t *testing.T, c *hub.Channel, n uint64) *media.Segment {
	t.Helper()
	s, err := c.Segment("v", n, time.Now())
	must(t, err)
	return s
}

// A client that goes away in the middle of a segment ends the work for it at once:
// no follower, subscription or goroutine is left behind.
func TestStreamSegmentClientGone(t *testing.T) {
	const d = 1000
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			c, ts, client := llOrigin(t, d*time.Millisecond, proto)
			appendChunk(t, c, 0, 0, d)
			before := runtime.NumGoroutine()
			ctx, cancel := context.WithCancel(context.Background())
			resp := getStream(t, ctx, client, ts.URL+"/live/ll/v/0.m4s")
			readN(t, resp.Body, len(chunkOf(0, 0, d).Data))
			if n := c.Followers(); n != 1 {
				t.Fatalf("%d followers while streaming, want 1", n)
			}
			if !strings.Contains(goroutines(), "streamSegment") {
				t.Fatal("no goroutine in streamSegment while streaming: the check below would prove nothing")
			}
			cancel()
			resp.Body.Close()
			client.Transport.(*http.Transport).CloseIdleConnections()
			waitUntil(t, "the follow ends when the client goes", func() bool { return c.Followers() == 0 })
			if n := c.Subscribers(); n != 0 {
				t.Errorf("%d subscriptions left", n)
			}
			// No goroutine is left in the handler. (An HTTP/2 connection outlives
			// its reset stream with its own goroutines, so they are not counted.)
			for deadline := time.Now().Add(guard); ; time.Sleep(10 * time.Millisecond) {
				g := goroutines()
				if !strings.Contains(g, "streamSegment") && !strings.Contains(g, "hub.(*Channel).Follow") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a goroutine is still serving the segment:\n%s", g)
				}
			}
			if proto != "h2c" {
				// Over HTTP/1.1 going away closes the connection: every goroutine of
				// the request is gone.
				for deadline := time.Now().Add(guard); runtime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						var b strings.Builder
						_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
						t.Fatalf("%d goroutines, %d before the request:\n%s", runtime.NumGoroutine(), before, b.String())
					}
				}
			}
			// The channel goes on; the segment completes with nobody following.
			for i := uint64(1); i < 4; i++ {
				appendChunk(t, c, 0, i, d)
			}
		})
	}
}

// A channel that ends while a segment is streamed completes the segment with what it
// has, and the body ends cleanly with exactly that. A source that stalls for a
// segment duration cuts the response short: it is aborted, so the client (and a
// cache) sees an error, never a clean end of a partial segment.
func TestStreamSegmentEnds(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto+"/channel ends", func(t *testing.T) {
			const d = 1000
			c, ts, client := llOrigin(t, d*time.Millisecond, proto)
			want := append(appendChunk(t, c, 0, 0, d), appendChunk(t, c, 0, 1, d)...)
			resp := getStream(t, context.Background(), client, ts.URL+"/live/ll/v/0.m4s")
			defer resp.Body.Close()
			readN(t, resp.Body, len(want))
			c.EndStream()
			rest, err := readRest(t, resp.Body)
			if err != nil || len(rest) != 0 {
				t.Fatalf("after the channel ended: %d more bytes, %v; want a clean end", len(rest), err)
			}
			if seg := mustSegment(t, c, 0); !bytes.Equal(seg.Bytes(), want) {
				t.Errorf("the ended segment has %d bytes, the body %d", seg.Len(), len(want))
			}
			waitUntil(t, "no follower left", func() bool { return c.Followers() == 0 })
		})
		t.Run(proto+"/source stalls", func(t *testing.T) {
			const d = 300
			c, ts, client := llOrigin(t, d*time.Millisecond, proto)
			first := appendChunk(t, c, 0, 0, d)
			resp := getStream(t, context.Background(), client, ts.URL+"/live/ll/v/0.m4s")
			defer resp.Body.Close()
			readN(t, resp.Body, len(first))
			rest, err := readRest(t, resp.Body)
			if err == nil {
				t.Fatalf("a segment cut short ended cleanly after %d more bytes: a cache would keep it as the segment", len(rest))
			}
			t.Logf("%s: cut short: %v", proto, err)
			waitUntil(t, "no follower left", func() bool { return c.Followers() == 0 })
		})
	}
}

// A channel whose chunks are shorter than its segments (as observed: an encoder's)
// has a low-latency $Number$ MPD and says its chunk duration in /api/streams; its
// SegmentTimeline MPD, which lists complete segments only, stays as it was. A channel
// whose segments come whole has neither.
func TestLowLatencyManifest(t *testing.T) {
	c, ts, _ := llOrigin(t, time.Second, "HTTP/1.1")
	for i := uint64(0); i < 4; i++ {
		appendChunk(t, c, 0, i, 1000)
	}
	_, mpd := get(t, ts.URL+"/live/ll/manifest.mpd")
	for _, want := range []string{`availabilityTimeOffset="0.75"`, `availabilityTimeComplete="false"`, `<ServiceDescription id="0">`,
		`<Latency referenceId="0" target="1750" min="1250" max="2750"/>`, `<PlaybackRate min="0.96" max="1.04"/>`, `<ProducerReferenceTime id="0" type="encoder"`} {
		if !strings.Contains(string(mpd), want) {
			t.Errorf("manifest.mpd has no %s:\n%s", want, mpd)
		}
	}
	_, timeline := get(t, ts.URL+"/live/ll/manifest-timeline.mpd")
	if strings.Contains(string(timeline), "availabilityTime") || strings.Contains(string(timeline), "ServiceDescription") {
		t.Errorf("manifest-timeline.mpd is low latency:\n%s", timeline)
	}
	if _, list := get(t, ts.URL+"/api/streams"); !strings.Contains(string(list), `"chunk_duration_ms":250`) {
		t.Errorf("/api/streams: %s", list)
	}

	whole, wts, _ := llOrigin(t, time.Second, "HTTP/1.1")
	must(t, whole.AppendChunk("v", 0, &media.Chunk{Data: []byte("whole"), Start: 0, Duration: 1000, Keyframe: true}, true))
	if _, mpd := get(t, wts.URL+"/live/ll/manifest.mpd"); strings.Contains(string(mpd), "availabilityTime") || strings.Contains(string(mpd), "ServiceDescription") {
		t.Errorf("a channel of whole segments has a low-latency MPD:\n%s", mpd)
	}
	if _, list := get(t, wts.URL+"/api/streams"); strings.Contains(string(list), "chunk_duration_ms") {
		t.Errorf("/api/streams of a channel of whole segments: %s", list)
	}
}

// The next segment begins when its first chunk is complete, which may be a segment
// duration and a chunk after a request made early in the current segment: a request
// for it is answered when that chunk comes later than one segment duration (here
// 2.1 s of 2 s segments in 500 ms chunks), not with a 404.
func TestStreamNextSegmentWaitsForItsFirstChunk(t *testing.T) {
	const d = 2000
	c, ts, client := llOrigin(t, d*time.Millisecond, "HTTP/1.1")
	for i := uint64(0); i < 4; i++ {
		appendChunk(t, c, 0, i, d)
	}
	appendChunk(t, c, 1, 0, d)
	type answer struct {
		resp *http.Response
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/live/ll/v/2.m4s", nil)
		resp, err := client.Do(req)
		got <- answer{resp, err}
	}()
	waitUntil(t, "the request for segment 2 waits", func() bool { return c.Followers() == 1 })
	time.Sleep(2100 * time.Millisecond) // longer than a segment: the old bound said 404 here
	for i := uint64(1); i < 4; i++ {
		appendChunk(t, c, 1, i, d)
	}
	first := appendChunk(t, c, 2, 0, d)
	var a answer
	select {
	case a = <-got:
	case <-time.After(guard):
		t.Fatal("no answer after segment 2 began")
	}
	must(t, a.err)
	defer a.resp.Body.Close()
	if a.resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(a.resp.Body)
		t.Fatalf("segment 2, begun a chunk after a segment duration: %d %s", a.resp.StatusCode, b)
	}
	if b := readN(t, a.resp.Body, len(first)); !bytes.Equal(b, first) {
		t.Fatalf("segment 2 began with %.40q", b)
	}
	for i := uint64(1); i < 4; i++ {
		appendChunk(t, c, 2, i, d)
	}
	waitUntil(t, "no follower left", func() bool { return c.Followers() == 0 })
}
