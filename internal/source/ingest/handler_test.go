package ingest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player/dash"
	"github.com/streambed/streambed/internal/player/hls"
	"github.com/streambed/streambed/internal/server"
)

const testToken = "s3cret"

// origin is an origin serving one ingest channel "ch" (2 s segments) and its ingest.
type origin struct {
	URL string
	in  *Ingest
	hub *hub.Hub
	ch  *hub.Channel
}

func newOrigin(t *testing.T, cfg Config) *origin {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	h := hub.New()
	in := New(cfg, log)
	ctx, cancel := context.WithCancel(context.Background())
	c, err := in.AddChannel(ctx, h, ChannelOptions{Name: "ch", Token: testToken, SegmentDuration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.DefaultConfig(), h, log, nil)
	for _, p := range Patterns {
		srv.Handle(p, in)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); cancel(); h.Close() })
	return &origin{URL: ts.URL, in: in, hub: h, ch: c}
}

// post sends body to a track URL with the test token (unless hdr sets
// Authorization) and returns the status and the answer's body.
func (o *origin) post(t *testing.T, path string, body io.Reader, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, o.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "video/mp4")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (o *origin) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(o.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestIngestStatusCodes(t *testing.T) {
	o := newOrigin(t, Config{Limits: Limits{MaxBox: 256 << 10}})
	video := Path("ch", "video", "cmfv")
	big := fragment(t, 1, 0, 1, frameTicks, true, false)
	big = concat(big[:len(big)-100-8], box("mdat", make([]byte, 300<<10))) // an mdat over 256 KiB
	tests := []struct {
		name string
		path string
		body []byte
		hdr  []string
		want int
		says string // in the answer's body
	}{
		{"unknown channel", Path("nope", "video", "cmfv"), videoBody(t, 1), nil, 404, "no ingest channel"},
		{"no token", video, videoBody(t, 1), []string{"Authorization", ""}, 401, "Bearer"},
		{"not a bearer token", video, videoBody(t, 1), []string{"Authorization", "Basic abc"}, 401, "Bearer"},
		{"wrong token", video, videoBody(t, 1), []string{"Authorization", "Bearer guess"}, 403, "wrong ingest token"},
		{"wrong content type", video, videoBody(t, 1), []string{"Content-Type", "text/plain"}, 415, "Content-Type"},
		{"not a Streams() URL", "/ingest/ch/video.mp4", videoBody(t, 1), nil, 404, "Streams("},
		{"media before the header", Path("ch", "v2", "cmfv"), videoChunk(t, 0, 50, true), nil, 412, "before the CMAF header"},
		{"unparsable moov", Path("ch", "v3", "cmfv"), concat(videoHeader(t, 0)[:24], box("moov", box("mvhd", make([]byte, 20)))), nil, 412, "init segment"},
		{"audio header on a video URL", Path("ch", "v4", "cmfv"), audioHeader(t), nil, 412, "names a video track"},
		{"garbage", Path("ch", "v5", "cmfv"), []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), nil, 400, "unexpected box"},
		{"oversize box", Path("ch", "v6", "cmfv"), concat(videoHeader(t, 0), big), nil, 413, "limit"},
		{"empty body (a connection check)", Path("ch", "v7", "cmfv"), nil, nil, 200, ""},
		{"no content type", Path("ch", "v8", "cmfv"), videoBody(t, 1), []string{"Content-Type", ""}, 200, ""},
		{"CMAF segment type", Path("ch", "v9", "cmfv"), videoBody(t, 1), []string{"Content-Type", "video/iso.segment"}, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := o.post(t, tc.path, bytes.NewReader(tc.body), tc.hdr...)
			if status != tc.want || !strings.Contains(body, tc.says) {
				t.Errorf("%d %q, want %d saying %q", status, body, tc.want, tc.says)
			}
		})
	}
	// PUT is the same as POST.
	req, _ := http.NewRequest(http.MethodPut, o.URL+Path("ch", "v10", "cmfv"), bytes.NewReader(videoBody(t, 2)))
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("PUT: %v %v", resp, err)
	}
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestIngestServesWhileThePostIsOpen: each chunk is readable the moment it arrived
// (by Channel.Partial, and over the origin's /live routes: a complete segment whole,
// the one in progress chunk by chunk) while the encoder's POST stays open.
func TestIngestServesWhileThePostIsOpen(t *testing.T) {
	o := newOrigin(t, Config{})
	pr, pw := io.Pipe()
	type answer struct {
		status int
		body   string
	}
	done := make(chan answer, 1)
	go func() {
		s, b := o.post(t, Path("ch", "video", "cmfv"), pr)
		done <- answer{s, b}
	}()
	seg0 := concat(styp(false), videoChunk(t, 0, 50, true))
	seg1a, seg1b := concat(styp(false), videoChunk(t, 50, 25, true)), videoChunk(t, 75, 25, false)
	write := func(b []byte) {
		if _, err := pw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	write(videoHeader(t, 0))
	write(seg0)
	write(seg1a)
	waitFor(t, "segment 1's first chunk", func() bool {
		s, complete, err := o.ch.Partial("video", 1)
		return err == nil && !complete && len(s.Chunks) == 1 && bytes.Equal(s.Chunks[0].Data, seg1a)
	})
	if status, b := o.get(t, "/live/ch/video/0.m4s"); status != 200 || !bytes.Equal(b, seg0) {
		t.Errorf("segment 0 while the POST is open: %d, %d bytes, want %d", status, len(b), len(seg0))
	}
	if status, b := o.get(t, "/live/ch/video/init.mp4"); status != 200 || !bytes.Equal(b, videoHeader(t, 0)) {
		t.Errorf("init: %d, %d bytes", status, len(b))
	}
	if status, b := o.get(t, "/live/ch/manifest.mpd"); status != 200 || !bytes.Contains(b, []byte(`id="video"`)) {
		t.Errorf("MPD while the POST is open: %d %s", status, b)
	}
	// Segment 1 in progress over /live: the chunk that is in at once, the rest as the
	// encoder sends it, and the end when the encoder ends the segment.
	resp, err := http.Get(o.URL + "/live/ch/video/1.m4s")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, len(seg1a))
	if _, err := io.ReadFull(resp.Body, first); resp.StatusCode != 200 || err != nil || !bytes.Equal(first, seg1a) {
		t.Fatalf("segment 1 in progress over /live: %d, %v, first bytes %.40q", resp.StatusCode, err, first)
	}
	write(seg1b)
	pw.Close()
	if a := <-done; a.status != 200 {
		t.Fatalf("POST ended with %d %s", a.status, a.body)
	}
	if rest, err := io.ReadAll(resp.Body); err != nil || !bytes.Equal(rest, seg1b) {
		t.Errorf("segment 1 streamed: then %d bytes, %v; want its second chunk and a clean end", len(rest), err)
	}
	if status, b := o.get(t, "/live/ch/video/1.m4s"); status != 200 || !bytes.Equal(b, concat(seg1a, seg1b)) {
		t.Errorf("segment 1 after the POST ended: %d, %d bytes", status, len(b))
	}
	st, err := o.in.Status("ch")
	if err != nil || len(st) != 1 || st[0].Chunks != 3 || st[0].Connected || st[0].Ended {
		t.Errorf("status %+v %v", st, err)
	}
	tr, _ := o.ch.Info().Track("video")
	if tr.Bandwidth == 0 || tr.FrameRate != "25" || tr.Codec != "avc1.42c00d" || tr.Width != 320 {
		t.Errorf("track %+v: want a measured bandwidth and a frame rate of 25", tr)
	}
}

// TestIngestTruncatedBody: a body cut inside a box keeps the chunks that arrived
// whole, ends the open segment and answers 400; a client that vanishes mid-body
// (its connection closed during a chunked body) does the same.
func TestIngestTruncatedBody(t *testing.T) {
	o := newOrigin(t, Config{})
	body := concat(videoBody(t, 2), videoChunk(t, 100, 50, true)[:500])
	status, msg := o.post(t, Path("ch", "video", "cmfv"), bytes.NewReader(body))
	if status != 400 || !strings.Contains(msg, "ends inside") {
		t.Errorf("truncated body: %d %s", status, msg)
	}
	for n := uint64(0); n < 2; n++ {
		if _, complete, err := o.ch.Partial("video", n); err != nil || !complete {
			t.Errorf("segment %d: complete %v, %v", n, complete, err)
		}
	}
	if _, _, err := o.ch.Partial("video", 2); err == nil {
		t.Error("the partial chunk was stored")
	}

	// A raw client: a chunked POST that stops mid-chunk and hangs up.
	conn, err := net.Dial("tcp", strings.TrimPrefix(o.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(conn)
	fmt.Fprintf(w, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nTransfer-Encoding: chunked\r\n\r\n", Path("ch", "audio", "cmfa"), testToken)
	for _, part := range [][]byte{audioHeader(t), audioChunk(t, 0, 94), audioChunk(t, 94, 94), audioChunk(t, 188, 94)[:300]} {
		fmt.Fprintf(w, "%x\r\n%s\r\n", len(part), part)
	}
	w.Flush()
	waitFor(t, "the audio chunks", func() bool {
		s, _, err := o.ch.Partial("audio", 1)
		return err == nil && len(s.Chunks) == 1
	})
	conn.Close()
	waitFor(t, "the open audio segment to end", func() bool {
		_, complete, err := o.ch.Partial("audio", 1)
		return err == nil && complete
	})
	waitFor(t, "the track to be released", func() bool {
		st, _ := o.in.Status("ch")
		return len(st) == 2 && !st[0].Connected && !st[1].Connected
	})
}

// TestIngestLastSegmentAndTakeover: lmsg ends a track cleanly; a second request for
// a track that is being fed takes it over (the first answers 409), and duplicates it
// resends are dropped.
// An encoder that reconnects while its old connection still looks open simply
// continues: the two requests merge, what is sent again is dropped, and the old one
// ends normally when its body does.
func TestIngestReconnectWhileTheOldRequestIsOpen(t *testing.T) {
	o := newOrigin(t, Config{})
	pr, pw := io.Pipe()
	first := make(chan int, 1)
	go func() {
		s, _ := o.post(t, Path("ch", "video", "cmfv"), pr)
		first <- s
	}()
	if _, err := pw.Write(videoBody(t, 2)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "segment 1", func() bool { _, _, err := o.ch.Partial("video", 1); return err == nil })
	// The encoder reconnects: it resends segment 1, then segment 2 and its last one.
	body := concat(videoHeader(t, 0), videoChunk(t, 50, 50, true), videoChunk(t, 100, 50, true), styp(true), videoChunk(t, 150, 50, true))
	status, msg := o.post(t, Path("ch", "video", "cmfv"), bytes.NewReader(body))
	if status != 200 {
		t.Fatalf("the reconnected encoder: %d %s", status, msg)
	}
	st, _ := o.in.Status("ch")
	if len(st) != 1 || !st[0].Connected {
		t.Errorf("status %+v: the first request still feeds the track", st)
	}
	pw.Close()
	if s := <-first; s != http.StatusOK {
		t.Errorf("the first request answered %d, want 200", s)
	}
	st, _ = o.in.Status("ch")
	if len(st) != 1 || !st[0].Ended || st[0].Dropped != 1 || st[0].Chunks != 4 || st[0].Connected {
		t.Errorf("status %+v: want ended, 1 duplicate dropped, 4 chunks, none connected", st)
	}
	if _, complete, err := o.ch.Partial("video", 3); err != nil || !complete {
		t.Errorf("the last segment: complete %v, %v", complete, err)
	}
}

// Two redundant encoders post the same track with the same timing at once: every
// chunk is stored once (the first arrival wins) and the segments are those one
// encoder alone makes.
func TestIngestRedundantEncodersMerge(t *testing.T) {
	alone := newOrigin(t, Config{})
	if s, msg := alone.post(t, Path("ch", "video", "cmfv"), bytes.NewReader(videoBody(t, 4))); s != 200 {
		t.Fatalf("one encoder: %d %s", s, msg)
	}
	o := newOrigin(t, Config{})
	var wg sync.WaitGroup
	var pws [2]*io.PipeWriter
	for i := range pws {
		pr, pw := io.Pipe()
		pws[i] = pw
		wg.Add(1)
		go func() {
			defer wg.Done()
			if s, msg := o.post(t, Path("ch", "video", "cmfv"), pr); s != 200 {
				t.Errorf("a redundant encoder: %d %s", s, msg)
			}
		}()
	}
	// The two encoders run in step, as live encoders do: each segment goes to both,
	// now one first, now the other, before the next one is encoded.
	write := func(i int, b []byte) {
		if _, err := pws[i].Write(b); err != nil {
			t.Fatal(err)
		}
	}
	hdr := videoHeader(t, 0)
	write(0, hdr)
	write(1, hdr)
	for k := 0; k < 4; k++ {
		seg := videoChunk(t, k*50, 50, true)
		write(k%2, seg)
		write(1-k%2, seg)
		waitFor(t, "segment stored", func() bool { _, _, err := o.ch.Partial("video", uint64(k)); return err == nil })
	}
	pws[0].Close()
	pws[1].Close()
	wg.Wait()
	st, _ := o.in.Status("ch")
	one, _ := alone.in.Status("ch")
	if len(st) != 1 || st[0].Chunks != one[0].Chunks || st[0].Dropped != one[0].Chunks+one[0].Dropped {
		t.Errorf("two encoders: %+v; one encoder: %+v (want the same chunks stored, the other copy dropped)", st, one)
	}
	for n := uint64(0); n < 4; n++ {
		a, _, err1 := alone.ch.Partial("video", n)
		b, _, err2 := o.ch.Partial("video", n)
		if err1 != nil || err2 != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("segment %d differs from one encoder's: %v %v", n, err1, err2)
		}
	}
}

// TestIngestAlignedTracks: video and audio arrive on two concurrent requests, one of
// them stalled for a while (it must not hold the other up). Their segments share
// numbers; the MPDs validate against the DASH schema and the HLS playlists parse.
func TestIngestAlignedTracks(t *testing.T) {
	o := newOrigin(t, Config{})
	pr, pw := io.Pipe()
	videoDone := make(chan int, 1)
	go func() {
		s, _ := o.post(t, Path("ch", "video", "cmfv"), pr)
		videoDone <- s
	}()
	if _, err := pw.Write(concat(videoHeader(t, 600_000), videoChunk(t, 0, 50, true))); err != nil {
		t.Fatal(err)
	}
	// Audio in chunks of 10 AAC frames (213 ms) while the video stalls.
	audio := audioHeader(t)
	for f := 0; f < 400; f += 10 {
		audio = append(audio, audioChunk(t, f, 10)...)
	}
	if status, msg := o.post(t, Path("ch", "audio", "cmfa"), bytes.NewReader(audio), "Content-Type", "audio/mp4"); status != 200 {
		t.Fatalf("audio: %d %s", status, msg)
	}
	for f := 50; f < 250; f += 50 {
		if _, err := pw.Write(videoChunk(t, f, 50, true)); err != nil {
			t.Fatal(err)
		}
	}
	pw.Close()
	if s := <-videoDone; s != 200 {
		t.Fatalf("video: %d", s)
	}
	w, err := o.ch.Window(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(w["video"]) != 5 || len(w["audio"]) != 5 {
		t.Fatalf("window: %d video and %d audio segments, want 5 each", len(w["video"]), len(w["audio"]))
	}
	for i, v := range w["video"] {
		a := w["audio"][i]
		vs, as := time.Duration(v.Start)*time.Second/videoTimescale, time.Duration(a.Start)*time.Second/audioTimescale
		if a.Number != v.Number || as < vs || as-vs > 250*time.Millisecond {
			t.Errorf("segment %d: video %d at %v, audio %d at %v", i, v.Number, vs, a.Number, as)
		}
	}
	tr, _ := o.ch.Info().Track("video")
	if tr.Bandwidth != 600_000 {
		t.Errorf("video bandwidth %d, want the btrt's 600000", tr.Bandwidth)
	}
	checkManifests(t, o.URL, "ch", []string{"video", "audio"})
}

// checkManifests fetches a live channel's MPDs (schema-validated with xmllint) and
// HLS playlists (parsed) and checks they list every track.
func checkManifests(t *testing.T, base, channel string, tracks []string) {
	t.Helper()
	get := func(path string) []byte {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return b
	}
	for _, name := range []string{"manifest.mpd", "manifest-timeline.mpd"} {
		u := base + "/live/" + channel + "/" + name
		b := get("/live/" + channel + "/" + name)
		validateMPD(t, name, b)
		m, err := dash.Parse(b, u, time.Now())
		if err != nil {
			t.Errorf("%s: %v\n%s", name, err, b)
			continue
		}
		reps := 0
		for _, set := range m.Sets {
			reps += len(set.Representations)
		}
		if !m.Live || reps != len(tracks) {
			t.Errorf("%s: live %v, %d representations, want %d", name, m.Live, reps, len(tracks))
		}
	}
	master := get("/live/" + channel + "/master.m3u8")
	mv, err := hls.ParseMultivariant(master, base+"/live/"+channel+"/master.m3u8")
	if err != nil || mv == nil || len(mv.Variants) == 0 {
		t.Fatalf("master playlist: %v\n%s", err, master)
	}
	for _, id := range tracks {
		p := "/live/" + channel + "/" + id + "/playlist.m3u8"
		mp, err := hls.ParseMedia(get(p), base+p)
		if err != nil || len(mp.Segments) == 0 || mp.Map == "" {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// validateMPD checks an MPD against the MPEG DASH schema, found in a parent folder
// at shared/conformance/dash-schema (CI has it beside the repo); skipped without it.
func validateMPD(t *testing.T, name string, mpd []byte) {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Fatal("xmllint not found: install libxml2-utils to validate MPDs")
	}
	schema := ""
	for dir, _ := os.Getwd(); schema == ""; dir = filepath.Dir(dir) {
		if p := filepath.Join(dir, "shared/conformance/dash-schema/DASH-MPD.xsd"); fileExists(p) {
			schema = p
		} else if dir == filepath.Dir(dir) {
			t.Logf("the DASH schema is not in any parent folder: %s not validated", name)
			return
		}
	}
	f := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(f, mpd, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(xmllint, "--noout", "--nonet", "--schema", schema, f).CombinedOutput(); err != nil {
		t.Errorf("%s does not validate: %v\n%s\n%s", name, err, out, mpd)
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestChannelWaits: before an encoder connects the channel has no tracks, its MPDs
// are valid and empty (schema-checked), its HLS playlist answers 404 "no encoder
// connected", and removing it ends its requests.
func TestChannelWaits(t *testing.T) {
	o := newOrigin(t, Config{})
	if status, b := o.get(t, "/live/ch/master.m3u8"); status != 404 || !strings.Contains(string(b), "no encoder connected") {
		t.Errorf("HLS without encoder: %d %s", status, b)
	}
	for _, m := range []string{"manifest.mpd", "manifest-timeline.mpd"} {
		status, b := o.get(t, "/live/ch/"+m)
		if status != 200 {
			t.Errorf("%s without encoder: %d %s", m, status, b)
		}
		validateMPD(t, "waiting-"+m, b)
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	done := make(chan int, 1)
	go func() {
		s, _ := o.post(t, Path("ch", "video", "cmfv"), pr)
		done <- s
	}()
	if _, err := pw.Write(videoBody(t, 1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "segment 0", func() bool { _, _, err := o.ch.Partial("video", 0); return err == nil })
	if err := o.hub.RemoveChannel("ch"); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-done:
		if s != http.StatusServiceUnavailable {
			t.Errorf("a removed channel's request answered %d, want 503", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("removing the channel did not end its request")
	}
	if _, err := o.in.Status("ch"); err == nil {
		t.Error("a removed channel is still an ingest channel")
	}
}

// An encoder whose clock restarts (its media time begins again at 0): the channel's
// timeline continues at the next segment boundary, numbered on, with the chunks'
// decode times rewritten. With restart_on_encoder_reconnect that is all; without it
// the restart is also a new period: a second DASH Period (schema-valid, its
// presentationTimeOffset its start) and an HLS EXT-X-DISCONTINUITY.
func TestIngestEncoderClockRestart(t *testing.T) {
	o := newOrigin(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	re, err := o.in.AddChannel(ctx, o.hub, ChannelOptions{Name: "re", Token: testToken, SegmentDuration: 2 * time.Second, RestartOnReconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	// Ten segments from media time 0, then the encoder restarts at 0 with four more.
	first := videoBody(t, 10)
	again := videoBody(t, 4)
	for _, ch := range []string{"re", "ch"} {
		if s, msg := o.post(t, Path(ch, "video", "cmfv"), bytes.NewReader(first)); s != 200 {
			t.Fatalf("%s: first run: %d %s", ch, s, msg)
		}
		if s, msg := o.post(t, Path(ch, "video", "cmfv"), bytes.NewReader(again)); s != 200 {
			t.Fatalf("%s: restart: %d %s", ch, s, msg)
		}
	}
	// Segments 0..9, then the restarted encoder's four as 10..13, contiguous, each
	// chunk's tfdt where the timeline says; in period 1 only without the option.
	for name, c := range map[string]*hub.Channel{"re": re, "ch": o.ch} {
		var prev *media.Segment
		for n := uint64(0); n < 14; n++ {
			seg, _, err := c.Partial("video", n)
			if err != nil {
				t.Fatalf("%s: segment %d: %v", name, n, err)
			}
			if prev != nil && seg.Start != prev.End() {
				t.Errorf("%s: segment %d starts at %d, the previous ended at %d", name, n, seg.Start, prev.End())
			}
			frags, err := cmaf.ParseFragments(seg.Bytes())
			if err != nil || len(frags) == 0 || frags[0].BaseMediaDecodeTime != seg.Start {
				t.Errorf("%s: segment %d: tfdt %v, want %d (%v)", name, n, frags, seg.Start, err)
			}
			want := uint32(0)
			if name == "ch" && n >= 10 {
				want = 1
			}
			if seg.Period != want {
				t.Errorf("%s: segment %d in period %d, want %d", name, n, seg.Period, want)
			}
			prev = seg
		}
		if _, _, err := c.Partial("video", 14); err == nil {
			t.Errorf("%s: a fifteenth segment appeared", name)
		}
	}
	if p := re.Periods(); len(p) != 0 {
		t.Errorf("with restart_on_encoder_reconnect: periods %v, want none", p)
	}
	if p := o.ch.Periods(); len(p) != 1 || p[0].Index != 1 || p[0].Start != 20*time.Second {
		t.Errorf("without it: periods %v, want period 1 at 20s", p)
	}

	// The manifests. Pinned to a time when the whole window is available.
	now := fmt.Sprintf("?nowMS=%d", o.ch.Timeline().AvailabilityStart.Add(29*time.Second).UnixMilli())
	for _, tc := range []struct{ ch, file string }{{"ch", "manifest.mpd"}, {"ch", "manifest-timeline.mpd"}, {"re", "manifest-timeline.mpd"}} {
		code, mpd := o.get(t, "/live/"+tc.ch+"/"+tc.file+now)
		if code != 200 {
			t.Fatalf("%s/%s: %d %s", tc.ch, tc.file, code, mpd)
		}
		validateMPD(t, tc.ch+"-"+tc.file, mpd)
		periods := strings.Count(string(mpd), "<Period ")
		switch {
		case tc.ch == "re" && periods != 1:
			t.Errorf("%s/%s: %d Periods, want 1:\n%s", tc.ch, tc.file, periods, mpd)
		case tc.ch == "ch" && (periods != 2 || !strings.Contains(string(mpd), `<Period id="1" start="PT20S">`) ||
			!strings.Contains(string(mpd), `presentationTimeOffset="`)):
			t.Errorf("%s/%s: want Periods 0 and 1 (at 20 s, with its presentationTimeOffset):\n%s", tc.ch, tc.file, mpd)
		}
	}
	if code, pl := o.get(t, "/live/ch/video/playlist.m3u8"+now); code != 200 || strings.Count(string(pl), "#EXT-X-DISCONTINUITY\n") != 1 {
		t.Errorf("HLS playlist %d, want one EXT-X-DISCONTINUITY:\n%s", code, pl)
	}
	if _, pl := o.get(t, "/live/re/video/playlist.m3u8"+now); strings.Contains(string(pl), "DISCONTINUITY") {
		t.Errorf("HLS playlist with the timeline continued has a discontinuity:\n%s", pl)
	}
}

// A rung whose keyframes (segment boundaries) fall elsewhere than the other rungs'
// cannot be switched to: it is reported and kept out of the manifests, while the
// aligned rung plays on.
func TestIngestMisalignedRungIsKeptOut(t *testing.T) {
	o := newOrigin(t, Config{})
	if s, msg := o.post(t, Path("ch", "v1", "cmfv"), bytes.NewReader(videoBody(t, 4))); s != 200 {
		t.Fatalf("v1: %d %s", s, msg)
	}
	// v2's GOPs start 1 s later: segment 1 begins at 3 s instead of 2 s.
	off := concat(videoHeader(t, 0), videoChunk(t, 0, 75, true), videoChunk(t, 75, 50, true), videoChunk(t, 125, 50, true))
	if s, msg := o.post(t, Path("ch", "v2", "cmfv"), bytes.NewReader(off)); s != 200 {
		t.Fatalf("v2: %d %s", s, msg)
	}
	for _, tr := range o.ch.Info().Tracks {
		if tr.ID == "v2" {
			t.Error("the misaligned rung is still in the channel's description")
		}
	}
	st, _ := o.in.Status("ch")
	if len(st) != 2 || st[1].ID != "v2" || !strings.Contains(st[1].Misaligned, "segment") || st[0].Misaligned != "" {
		t.Errorf("status %+v", st)
	}
	code, mpd := o.get(t, "/live/ch/manifest-timeline.mpd")
	if code != 200 || strings.Contains(string(mpd), `id="v2"`) || !strings.Contains(string(mpd), `id="v1"`) {
		t.Errorf("MPD %d:\n%s", code, mpd)
	}
}

// Out-of-order and lost fragments: a fragment from the past is a duplicate and is
// dropped; a gap (a fragment missing) ends the segment there and the track resumes
// at its next keyframe; the request still succeeds and nothing stored is torn.
func TestIngestOutOfOrderAndGaps(t *testing.T) {
	o := newOrigin(t, Config{})
	body := concat(videoHeader(t, 0),
		videoChunk(t, 0, 25, true), videoChunk(t, 25, 25, false), // segment 0
		videoChunk(t, 50, 25, true), videoChunk(t, 25, 25, false), // segment 1 begins; an old fragment again
		videoChunk(t, 90, 10, false),  // frames 75..89 never came: a gap
		videoChunk(t, 100, 25, false), // still before the next keyframe: dropped
		videoChunk(t, 150, 50, true))  // segment 3 (at 6 s) resumes
	if s, msg := o.post(t, Path("ch", "video", "cmfv"), bytes.NewReader(body)); s != 200 {
		t.Fatalf("%d %s", s, msg)
	}
	for n, want := range map[uint64]uint64{0: 50 * frameTicks, 1: 25 * frameTicks, 3: 50 * frameTicks} {
		seg, complete, err := o.ch.Partial("video", n)
		if err != nil || !complete || seg.Duration != want {
			t.Errorf("segment %d: %v complete %v, duration %v want %d", n, err, complete, seg, want)
		}
	}
	if _, _, err := o.ch.Partial("video", 2); err == nil {
		t.Error("a segment was made of the fragments after the gap")
	}
	if st, _ := o.in.Status("ch"); len(st) != 1 || st[0].Dropped != 3 || st[0].Chunks != 4 {
		t.Errorf("status %+v: want 4 stored, 3 dropped", st)
	}
}

// A slow encoder never holds up another channel: while one channel's request
// trickles, another channel's encoder posts and is served completely.
func TestIngestSlowEncoderBlocksNoOne(t *testing.T) {
	o := newOrigin(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	other, err := o.in.AddChannel(ctx, o.hub, ChannelOptions{Name: "other", Token: testToken, SegmentDuration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	slow := make(chan int, 1)
	go func() {
		s, _ := o.post(t, Path("ch", "video", "cmfv"), pr)
		slow <- s
	}()
	hdr := videoHeader(t, 0)
	if _, err := pw.Write(hdr[:len(hdr)/2]); err != nil { // half a header, then silence
		t.Fatal(err)
	}
	if s, msg := o.post(t, Path("other", "video", "cmfv"), bytes.NewReader(videoBody(t, 3))); s != 200 {
		t.Fatalf("the other channel's encoder: %d %s", s, msg)
	}
	if _, complete, err := other.Partial("video", 2); err != nil || !complete {
		t.Errorf("the other channel's last segment: %v %v", complete, err)
	}
	select {
	case s := <-slow:
		t.Fatalf("the slow request ended early: %d", s)
	default:
	}
	pw.Close()
	if s := <-slow; s != http.StatusBadRequest {
		t.Errorf("the slow request, its header cut short: %d, want 400 (a body cut short)", s)
	}
}
