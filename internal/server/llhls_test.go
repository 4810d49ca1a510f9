package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/media"
)

// The LL-HLS tests follow events, as the segment-streaming ones do: a chunk is
// appended, then a held reload or part must be answered; before it, it must not be.
// The channel is llOrigin's shape — one video track, 1 s segments in four 250 ms
// chunks — so PART-TARGET is 250 ms and each chunk is one part: part i of a segment
// is chunk i.

// llhlsOrigin is llOrigin with the Server at hand (its metrics), over HTTP/1.1; with
// audio, the channel also has an audio track "a" cut as the video is.
func llhlsOrigin(t *testing.T, audio ...bool) (*hub.Channel, *Server, *httptest.Server, *http.Client) {
	t.Helper()
	return llhlsOriginOver(t, "HTTP/1.1", len(audio) > 0 && audio[0])
}

// llhlsOriginOver is llhlsOrigin whose client speaks proto (HTTP/1.1 or h2c).
func llhlsOriginOver(t *testing.T, proto string, audio bool) (*hub.Channel, *Server, *httptest.Server, *http.Client) {
	t.Helper()
	const d = time.Second
	tracks := []*media.Track{{ID: "v", Kind: media.Video, Codec: "avc1.64001f", Bandwidth: 100000, Width: 320, Height: 180, FrameRate: "25", Timescale: 1000}}
	if audio {
		tracks = append(tracks, &media.Track{ID: "a", Kind: media.Audio, Codec: "mp4a.40.2", Bandwidth: 64000, SampleRate: 48000, Channels: 2, Timescale: 1000})
	}
	c, err := hub.NewChannel(hub.ChannelConfig{
		Info:     &media.Stream{Name: "ll", SegmentDuration: d, Tracks: tracks},
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
	ts.Start()
	t.Cleanup(ts.Close)
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4096}
	if proto == "h2c" {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return c, s, ts, &http.Client{Transport: tr}
}

// feed appends segment 0 whole (so the channel is known to be made in 250 ms chunks:
// low latency) and the first k chunks of segment 1.
func feed(t *testing.T, c *hub.Channel, k uint64) {
	t.Helper()
	for i := uint64(0); i < 4; i++ {
		appendChunk(t, c, 0, i, 1000)
	}
	for i := uint64(0); i < k; i++ {
		appendChunk(t, c, 1, i, 1000)
	}
}

// answer is one response, read whole.
type answer struct {
	status int
	header http.Header
	body   string
	err    error
}

// getAsync sends a GET and delivers its answer on the returned channel.
func getAsync(ctx context.Context, client *http.Client, u string) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := client.Do(req)
		if err != nil {
			out <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		out <- answer{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
	}()
	return out
}

// await returns the answer, failing after guard.
func await(t *testing.T, ch <-chan answer) answer {
	t.Helper()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("request failed: %v", a.err)
		}
		return a
	case <-time.After(guard):
		t.Fatalf("no answer within %s", guard)
		return answer{}
	}
}

// notYet fails if ch has an answer already.
func notYet(t *testing.T, ch <-chan answer, what string) {
	t.Helper()
	select {
	case a := <-ch:
		t.Fatalf("%s was answered too early: %d %s", what, a.status, a.body)
	default:
	}
}

// blocked is the origin's count of reloads being held.
func blocked(s *Server) int {
	var m dto.Metric
	_ = s.metrics.blocked.Write(&m)
	return int(m.GetGauge().GetValue())
}

func TestLowLatencyPlaylist(t *testing.T) {
	c, _, ts, _ := llhlsOrigin(t)
	feed(t, c, 2)
	resp, body := get(t, ts.URL+"/live/ll/v/playlist.m3u8")
	pl := string(body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-cache" || resp.Header.Get("Etag") == "" {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	for _, want := range []string{
		"#EXT-X-VERSION:9\n",
		"#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=6.000,PART-HOLD-BACK=0.750\n",
		"#EXT-X-PART-INF:PART-TARGET=0.250\n",
		"#EXT-X-PART:DURATION=0.250,URI=\"0.0.m4s\",INDEPENDENT=YES\n#EXT-X-PART:DURATION=0.250,URI=\"0.1.m4s\"\n",
		"#EXT-X-PART:DURATION=0.250,URI=\"0.3.m4s\"\n#EXTINF:1.000,\n0.m4s\n",
		"#EXT-X-PART:DURATION=0.250,URI=\"1.0.m4s\",INDEPENDENT=YES\n#EXT-X-PART:DURATION=0.250,URI=\"1.1.m4s\"\n#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"1.2.m4s\"\n",
	} {
		if !strings.Contains(pl, want) {
			t.Errorf("playlist lacks %q:\n%s", want, pl)
		}
	}
	// The parts are the segment: each part's bytes are its chunk, and together the
	// parts of a complete segment are the segment.
	var whole []byte
	for i := 0; i < 4; i++ {
		r, b := get(t, ts.URL+layout.Part("ll", "v", 0, i))
		if r.StatusCode != http.StatusOK || r.ContentLength != int64(len(b)) || r.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || r.Header.Get("Etag") == "" {
			t.Fatalf("part 0.%d: status %d, headers %v", i, r.StatusCode, r.Header)
		}
		whole = append(whole, b...)
	}
	if _, seg := get(t, ts.URL+"/live/ll/v/0.m4s"); !bytes.Equal(whole, seg) {
		t.Errorf("the parts of segment 0 (%d bytes) are not the segment (%d bytes)", len(whole), len(seg))
	}
	if r, _ := get(t, ts.URL+"/live/ll/v/0.4.m4s"); r.StatusCode != http.StatusNotFound {
		t.Errorf("part 0.4 of a segment of four: status %d", r.StatusCode)
	}
	for _, bad := range []string{"1.-1.m4s", "1.x.m4s", "1.1.1.m4s", "1..m4s", "1.600001.m4s", "99999999999999999999999.0.m4s", "+1.0.m4s"} {
		if r, b := get(t, ts.URL+"/live/ll/v/"+bad); r.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d %s, want 400", bad, r.StatusCode, b)
		}
	}
	// Part 1.1 exists while its segment is in progress: streamed, then ended.
	if r, b := get(t, ts.URL+"/live/ll/v/1.1.m4s"); r.StatusCode != http.StatusOK || !bytes.Equal(b, chunkOf(1, 1, 1000).Data) {
		t.Errorf("part 1.1 in progress: status %d, %d bytes", r.StatusCode, len(b))
	}
	// A pinned clock gets the plain playlist, as a channel that is not low latency.
	if _, b := get(t, ts.URL+"/live/ll/v/playlist.m3u8?nowMS="+strconv.FormatInt(time.Now().UnixMilli(), 10)); strings.Contains(string(b), "#EXT-X-PART") {
		t.Errorf("a pinned clock got parts:\n%s", b)
	}
}

// A blocked reload is answered when, and only when, the part it asks for is in the
// playlist; the answer is cacheable, and lists that part.
func TestBlockingReload(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) { blockingReload(t, proto) })
	}
}

func blockingReload(t *testing.T, proto string) {
	c, s, ts, client := llhlsOriginOver(t, proto, false)
	feed(t, c, 2)
	base := ts.URL + "/live/ll/v/playlist.m3u8"

	// Parts 1.0 and 1.1 are there: no wait.
	a := await(t, getAsync(context.Background(), client, base+"?_HLS_msn=1&_HLS_part=1"))
	if a.status != http.StatusOK || !strings.Contains(a.body, `URI="1.1.m4s"`) || a.header.Get("Cache-Control") != "public, max-age=6" {
		t.Fatalf("reload of a listed part: %d %v\n%s", a.status, a.header, a.body)
	}

	// Part 1.2 is not: held until chunk 2 is appended.
	held := getAsync(context.Background(), client, base+"?_HLS_msn=1&_HLS_part=2")
	waitUntil(t, "the reload is held", func() bool { return blocked(s) == 1 })
	notYet(t, held, "the reload of part 1.2")
	appendChunk(t, c, 1, 2, 1000)
	a = await(t, held)
	if a.status != http.StatusOK || !strings.Contains(a.body, `URI="1.2.m4s"`) || !strings.Contains(a.body, `PRELOAD-HINT:TYPE=PART,URI="1.3.m4s"`) {
		t.Fatalf("after part 1.2: %d\n%s", a.status, a.body)
	}

	// Segment 1 without a part: held until it is complete; a delta update with it.
	held = getAsync(context.Background(), client, base+"?_HLS_msn=1&_HLS_skip=YES")
	waitUntil(t, "the reload is held", func() bool { return blocked(s) == 1 })
	notYet(t, held, "the reload of segment 1")
	appendChunk(t, c, 1, 3, 1000)
	a = await(t, held)
	if a.status != http.StatusOK || !strings.Contains(a.body, "#EXTINF:1.000,\n1.m4s\n") || !strings.Contains(a.body, `PRELOAD-HINT:TYPE=PART,URI="2.0.m4s"`) {
		t.Fatalf("after segment 1: %d\n%s", a.status, a.body)
	}
	if strings.Contains(a.body, "#EXT-X-SKIP") {
		t.Errorf("a playlist of 2 s was skipped (CAN-SKIP-UNTIL is 6 s):\n%s", a.body)
	}
	// Segments older than the window's end count as there.
	if a := await(t, getAsync(context.Background(), client, base+"?_HLS_msn=0&_HLS_part=9")); a.status != http.StatusOK {
		t.Errorf("reload of an old part: %d %s", a.status, a.body)
	}
	if blocked(s) != 0 {
		t.Errorf("%d reloads still held", blocked(s))
	}
}

// Far ahead is refused at once; garbage is refused with a message naming the
// directive; a reload that is not satisfied in three target durations is 503.
func TestBlockingReloadRefused(t *testing.T) {
	c, s, ts, client := llhlsOrigin(t)
	feed(t, c, 2) // last segment 0, parts 1.0 and 1.1
	base := ts.URL + "/live/ll/v/playlist.m3u8?"
	for q, want := range map[string]string{
		"_HLS_msn=3":                          "more than two segments past",
		"_HLS_msn=1&_HLS_part=14":             "parts past", // the Advance Part Limit is 3 s of 250 ms parts: 12
		"_HLS_msn=2&_HLS_part=11":             "parts past",
		"_HLS_msn=18446744073709551615":       "more than two segments past",
		"_HLS_msn=18446744073709551616":       "out of range",
		"_HLS_msn=-1":                         "_HLS_msn=\\\"-1\\\"",
		"_HLS_msn=1e3":                        "_HLS_msn=\\\"1e3\\\"",
		"_HLS_msn=+1":                         "_HLS_msn=",
		"_HLS_msn=":                           "_HLS_msn=",
		"_HLS_msn=1&_HLS_msn=1":               "given 2 times",
		"_HLS_part=1":                         "without _HLS_msn",
		"_HLS_msn=1&_HLS_part=-1":             "_HLS_part=",
		"_HLS_msn=1&_HLS_part=600001":         "over 600000",
		"_HLS_msn=1&_HLS_part=99999999":       "_HLS_part=",
		"_HLS_skip=yes":                       "neither YES nor v2",
		"_HLS_msn=1&_HLS_part=1&_HLS_skip=NO": "neither YES nor v2",
		"_HLS_msn=%20%201":                    "_HLS_msn=",
		"_HLS_msn=1&_HLS_part=0x1":            "_HLS_part=",
		"_HLS_msn=99999999999999999999999999": "_HLS_msn=",
	} {
		a := await(t, getAsync(context.Background(), client, base+q))
		if a.status != http.StatusBadRequest || !strings.Contains(a.body, want) || a.header.Get("Cache-Control") != "no-store" {
			t.Errorf("?%s: %d %q (Cache-Control %q), want 400 with %q", q, a.status, a.body, a.header.Get("Cache-Control"), want)
		}
	}
	// Unknown directives are ignored, as RFC 8216bis asks of what a server does not know.
	if a := await(t, getAsync(context.Background(), client, base+"_HLS_other=1")); a.status != http.StatusOK {
		t.Errorf("an unknown directive: %d %s", a.status, a.body)
	}
	// The next segment's second part, in range, is held: nobody appends, so 503
	// after three target durations (3 s here; the only wall-clock wait, not timed).
	a := await(t, getAsync(context.Background(), client, base+"_HLS_msn=2&_HLS_part=1"))
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" || !strings.Contains(a.body, "three target durations") {
		t.Errorf("an unsatisfied reload: %d %v %s", a.status, a.header, a.body)
	}
	if blocked(s) != 0 {
		t.Errorf("%d reloads still held", blocked(s))
	}
}

// A client that goes away while its reload is held leaves nothing behind: no handler
// goroutine, no waiter on the channel. A held part request likewise.
func TestBlockingReloadClientGone(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) { blockingReloadClientGone(t, proto) })
	}
}

func blockingReloadClientGone(t *testing.T, proto string) {
	c, s, ts, client := llhlsOriginOver(t, proto, false)
	feed(t, c, 2)
	ctx, cancel := context.WithCancel(context.Background())
	reloads := getAsync(ctx, client, ts.URL+"/live/ll/v/playlist.m3u8?_HLS_msn=1&_HLS_part=3")
	part := getAsync(ctx, client, ts.URL+"/live/ll/v/1.3.m4s")
	waitUntil(t, "both are held", func() bool { return blocked(s) == 1 && c.Followers() == 1 })
	if g := goroutines(); !strings.Contains(g, "awaitReload") || !strings.Contains(g, "followPart") {
		t.Fatal("no goroutine in awaitReload and followPart while held: the check below would prove nothing")
	}
	cancel()
	for _, ch := range []<-chan answer{reloads, part} {
		select {
		case a := <-ch:
			if !errors.Is(a.err, context.Canceled) {
				t.Errorf("the cancelled request ended with %v (status %d)", a.err, a.status)
			}
		case <-time.After(guard):
			t.Fatal("the cancelled request did not end")
		}
	}
	waitUntil(t, "nothing held", func() bool {
		g := goroutines()
		return blocked(s) == 0 && c.Followers() == 0 && !strings.Contains(g, "awaitReload") && !strings.Contains(g, "followPart")
	})
}

// The preload-hinted part is asked for before it exists: the request is held, gets
// the part's chunks as they are appended, and ends with the part (here one chunk).
func TestHintedPart(t *testing.T) {
	c, _, ts, client := llhlsOrigin(t)
	feed(t, c, 4) // segment 1 complete
	held := getAsync(context.Background(), client, ts.URL+"/live/ll/v/2.0.m4s")
	waitUntil(t, "the part is followed", func() bool { return c.Followers() == 1 })
	notYet(t, held, "part 2.0")
	want := appendChunk(t, c, 2, 0, 1000)
	a := await(t, held)
	if a.status != http.StatusOK || a.body != string(want) || a.header.Get("Cache-Control") != "public, max-age=31536000, immutable" || a.header.Get("Content-Length") != "" {
		t.Fatalf("part 2.0: %d %v, %d bytes", a.status, a.header, len(a.body))
	}
	// HEAD and a pinned clock do not follow.
	req, _ := http.NewRequest(http.MethodHead, ts.URL+"/live/ll/v/2.1.m4s", nil)
	resp, err := client.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("HEAD of a part not made: %d", resp.StatusCode)
	}
	// A segment farther ahead than the next is not waited for.
	if a := await(t, getAsync(context.Background(), client, ts.URL+"/live/ll/v/4.0.m4s")); a.status != http.StatusNotFound {
		t.Errorf("a part two segments ahead: %d", a.status)
	}
}

// A channel that is not low latency keeps its playlist and ignores the directives; it
// has no parts.
func TestNotLowLatencyIgnoresDirectives(t *testing.T) {
	c, _, ts, _ := llhlsOrigin(t)
	for n := uint64(0); n < 3; n++ { // whole segments: one chunk each
		must(t, c.AppendChunk("v", n, &media.Chunk{Data: []byte("seg"), Start: n * 1000, Duration: 1000, Keyframe: true}, true))
	}
	_, plain := get(t, ts.URL+"/live/ll/v/playlist.m3u8")
	_, asked := get(t, ts.URL+"/live/ll/v/playlist.m3u8?_HLS_msn=9&_HLS_part=x")
	if !bytes.Equal(plain, asked) || strings.Contains(string(plain), "EXT-X-PART") || strings.Contains(string(plain), "SERVER-CONTROL") {
		t.Errorf("a channel made in whole segments:\n%s\n---\n%s", plain, asked)
	}
	if r, _ := get(t, ts.URL+"/live/ll/v/1.0.m4s"); r.StatusCode != http.StatusNotFound {
		t.Errorf("a part of a channel without parts: %d", r.StatusCode)
	}
}

// Thousands of blocked reloads stay within a stated memory bound, and all of them are
// answered by the one append that satisfies them. The clients are another process
// (this test binary again, as TestHelperReloadClients), so the heap and goroutines
// measured here are the origin's own. The figures are logged; the bound asserted is
// loose (a buffer or a goroutine per waiter per chunk would pass it by far) and holds
// with -race too.
func TestBlockedReloadsBound(t *testing.T) {
	if testing.Short() {
		t.Skip("2000 connections from a helper process: skipped with -short")
	}
	const n = 2000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < n+500 {
		// Go raises the soft limit to the hard one at start; below this, the origin
		// cannot hold n connections here.
		t.Skipf("RLIMIT_NOFILE is %d: too few open files for %d connections", lim.Cur, n)
	}
	c, s, ts, _ := llhlsOrigin(t, true)
	// 2000 connections from another process can take longer than the spec's three
	// target durations (3 s here) to be held on a loaded machine; what is measured
	// is the cost of holding them, so they are held longer than any set-up.
	s.reloadHold.Store(int64(10 * guard))
	feed(t, c, 2)
	// Audio in chunks of 125 ms: two make a 250 ms part, so every other chunk moves
	// nothing a reload waits for. Segment 0 whole, segment 1's part 0.
	for i := uint64(0); i < 8; i++ {
		must(t, c.AppendChunk("a", 0, audioChunk(0, i), i == 7))
	}
	for i := uint64(0); i < 2; i++ {
		must(t, c.AppendChunk("a", 1, audioChunk(1, i), false))
	}
	before := heapInUse()
	g0 := runtime.NumGoroutine()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperReloadClients$", "-test.v")
	cmd.Env = append(os.Environ(), "STREAMBED_RELOAD_CLIENTS_URL="+ts.URL+"/live/ll/a/playlist.m3u8?_HLS_msn=1&_HLS_part=2",
		"STREAMBED_RELOAD_CLIENTS_N="+strconv.Itoa(n))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	waitUntil(t, "all reloads held", func() bool { return blocked(s) == n })
	held := heapInUse()
	g1 := runtime.NumGoroutine()
	perReload := float64(held-before) / n
	t.Logf("%d blocked reloads: the origin's heap and stacks %.1f MiB more (%.1f KiB per reload), %d more goroutines (%.1f per reload)",
		n, float64(held-before)/(1<<20), perReload/1024, g1-g0, float64(g1-g0)/n)
	if perReload > 48<<10 {
		t.Errorf("%.1f KiB of heap and stacks per blocked reload, over 48 KiB", perReload/1024)
	}
	if per := float64(g1-g0) / n; per > 2.1 {
		t.Errorf("%.1f goroutines per blocked reload: more than the connection's two", per)
	}
	// The reloads wait for audio part 1.2 (chunks 4 and 5). What each step costs the
	// origin is logged (CPU time over a short settle, not asserted): a video chunk
	// wakes none of them (each track has its own broadcast); audio chunk 2 opens part
	// 1.1 and moves nothing, so only the watch's leader looks; chunk 3 completes part
	// 1.1, short of theirs, so every reload looks once. Then chunks 4 and 5 complete
	// part 1.2 and release them all.
	for _, step := range []struct {
		what   string
		append func()
	}{
		{"a video chunk", func() { appendChunk(t, c, 1, 2, 1000) }},
		{"an audio chunk that completes no part", func() { must(t, c.AppendChunk("a", 1, audioChunk(1, 2), false)) }},
		{"an audio chunk that completes part 1.1", func() { must(t, c.AppendChunk("a", 1, audioChunk(1, 3), false)) }},
	} {
		cpu0 := cpuTime()
		step.append()
		time.Sleep(300 * time.Millisecond)
		t.Logf("%s, %d reloads held for audio part 1.2: %.1f ms of the origin's CPU", step.what, n, float64(cpuTime()-cpu0)/1e6)
		if blocked(s) != n {
			t.Fatalf("%s released %d reloads", step.what, n-blocked(s))
		}
	}
	cpu0 := cpuTime()
	must(t, c.AppendChunk("a", 1, audioChunk(1, 4), false))
	must(t, c.AppendChunk("a", 1, audioChunk(1, 5), false))
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the clients: %v\n%s", err, out.String())
		}
	case <-time.After(3 * guard):
		_ = cmd.Process.Kill()
		t.Fatalf("the clients did not finish:\n%s", out.String())
	}
	t.Logf("the part that releases %d reloads, until every one is answered: %.1f ms of the origin's CPU", n, float64(cpuTime()-cpu0)/1e6)
	if blocked(s) != 0 {
		t.Errorf("%d reloads still held", blocked(s))
	}
}

// TestHelperReloadClients is TestBlockedReloadsBound's other process: it sends N
// blocking reloads at once and checks that each is answered with the part asked for.
func TestHelperReloadClients(t *testing.T) {
	u, n := os.Getenv("STREAMBED_RELOAD_CLIENTS_URL"), os.Getenv("STREAMBED_RELOAD_CLIENTS_N")
	if u == "" {
		t.Skip("the client process of TestBlockedReloadsBound, run only by it")
	}
	k, err := strconv.Atoi(n)
	must(t, err)
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: k}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	answers := make([]<-chan answer, k)
	for i := range answers {
		answers[i] = getAsync(context.Background(), client, u)
	}
	for _, ch := range answers {
		select {
		case a := <-ch:
			if a.err != nil || a.status != http.StatusOK || !strings.Contains(a.body, `"1.2.m4s"`) {
				t.Fatalf("a released reload: %v %d", a.err, a.status)
			}
		case <-time.After(3 * guard):
			t.Fatal("a reload was not answered")
		}
	}
}

// audioChunk is chunk i of audio segment n: 125 ms at timescale 1000.
func audioChunk(n, i uint64) *media.Chunk {
	return &media.Chunk{Data: []byte(fmt.Sprintf("a%d-%d;", n, i)), Start: n*1000 + i*125, Duration: 125, Keyframe: true}
}

// cpuTime is this process's user and system CPU time, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// heapInUse is the heap and the goroutine stacks in use, after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// The reloads held on a track share a watch whose leader looks at the edge on every
// chunk: when the leader's client goes away, another reload takes the lead and is
// still answered when its part comes; when all are gone, the watch is dropped.
func TestBlockingReloadLeaderLeaves(t *testing.T) {
	c, s, ts, client := llhlsOrigin(t)
	feed(t, c, 2)
	base := ts.URL + "/live/ll/v/playlist.m3u8"
	ctx, cancel := context.WithCancel(context.Background())
	first := getAsync(ctx, client, base+"?_HLS_msn=1&_HLS_part=2") // the first to wait leads
	waitUntil(t, "the first reload is held", func() bool { return blocked(s) == 1 })
	second := getAsync(context.Background(), client, base+"?_HLS_msn=1&_HLS_part=3")
	waitUntil(t, "both reloads are held", func() bool { return blocked(s) == 2 })
	cancel()
	if a := <-first; !errors.Is(a.err, context.Canceled) {
		t.Fatalf("the cancelled reload: %v %d", a.err, a.status)
	}
	waitUntil(t, "the leader is gone", func() bool { return blocked(s) == 1 })
	appendChunk(t, c, 1, 2, 1000)
	notYet(t, second, "the reload of part 1.3 after part 1.2")
	appendChunk(t, c, 1, 3, 1000)
	if a := await(t, second); a.status != http.StatusOK || !strings.Contains(a.body, `"1.3.m4s"`) {
		t.Fatalf("the second reload: %d\n%s", a.status, a.body)
	}
	s.watches.mu.Lock()
	left := len(s.watches.m)
	s.watches.mu.Unlock()
	if left != 0 {
		t.Errorf("%d watches left with no reload held", left)
	}
}

// The configured PART-HOLD-BACK reaches the playlists of a channel fed chunk by chunk
// (as an encoder's is), and a value under two of its part targets (250 ms here, known
// only once its chunks arrive) is raised to two, the spec's floor.
func TestLowLatencyPlaylistPartHoldBack(t *testing.T) {
	for _, tc := range []struct {
		hold time.Duration
		want string
	}{
		{time.Second, "PART-HOLD-BACK=1.000"},
		{400 * time.Millisecond, "PART-HOLD-BACK=0.500"},
	} {
		c, s, ts, _ := llhlsOrigin(t)
		s.cfg.LLHLSPartHoldBack = tc.hold // before the first request
		feed(t, c, 2)
		resp, body := get(t, ts.URL+"/live/ll/v/playlist.m3u8")
		if want := "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=6.000," + tc.want + "\n"; resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("%s: status %d, playlist lacks %q:\n%s", tc.hold, resp.StatusCode, want, body)
		}
	}
}
