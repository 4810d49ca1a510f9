package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// fakeAsset writes an asset folder whose segments are recognisable fake bytes: the
// origin serves files, it does not decode them.
func fakeAsset(t testing.TB, root, name string) {
	t.Helper()
	dir := filepath.Join(root, name)
	a := &media.Asset{Version: media.AssetVersion, Name: name, SegmentDurationMS: 2000, DurationMS: 4000, Fingerprint: "x"}
	for _, tr := range []struct {
		id   string
		kind media.Kind
		ts   uint32
	}{{"v1", media.Video, 12800}, {"a1", media.Audio, 48000}} {
		track := &media.Track{ID: tr.id, Kind: tr.kind, Codec: "avc1.64001f", Bandwidth: 100000, Timescale: tr.ts, InitPath: tr.id + "/init.mp4",
			Width: 320, Height: 180, FrameRate: "25"}
		if tr.kind == media.Audio {
			track.Codec, track.Width, track.Height, track.FrameRate, track.SampleRate, track.Channels = "mp4a.40.2", 0, 0, "", 48000, 2
		}
		must(t, os.MkdirAll(filepath.Join(dir, tr.id), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, tr.id, "init.mp4"), []byte("init-"+tr.id), 0o644))
		for n := uint64(1); n <= 2; n++ {
			body := bytes.Repeat([]byte(fmt.Sprintf("%s-seg%d;", tr.id, n)), 100)
			p := fmt.Sprintf("%s/%d.m4s", tr.id, n)
			must(t, os.WriteFile(filepath.Join(dir, p), body, 0o644))
			d := uint64(2 * tr.ts)
			track.Segments = append(track.Segments, media.SegmentRef{Number: n, Start: (n - 1) * d, Duration: d, Size: int64(len(body)), Path: p})
		}
		a.Tracks = append(a.Tracks, track)
	}
	b, _ := json.Marshal(a)
	must(t, os.WriteFile(filepath.Join(dir, media.AssetFile), b, 0o644))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fakeSchedule makes 2 s live segments of fake bytes, timescale 1000, from the
// epoch, with a 10 s window: a hub.OnDemand source, as a looped asset is.
type fakeSchedule struct{}

func (fakeSchedule) Window(now time.Time) (uint64, uint64, bool) {
	el := now.Sub(time.Unix(0, 0))
	if el < 2*time.Second {
		return 0, 0, false
	}
	last := uint64(el/(2*time.Second)) - 1
	return max(last, 4) - 4, last, true
}
func (fakeSchedule) AvailableAt(n uint64) time.Time { return time.Unix(int64(2*(n+1)), 0) }
func (fakeSchedule) Number(_ string, start uint64) (uint64, bool) {
	return start / 2000, start%2000 == 0
}
func (fakeSchedule) Segment(track string, n uint64) (*media.Segment, error) {
	d := uint64(2000)
	data := []byte(fmt.Sprintf("%s-live-%d", track, n))
	return &media.Segment{SegmentRef: media.SegmentRef{Number: n, Start: n * d, Duration: d, Size: int64(len(data))},
		Chunks: []*media.Chunk{{Data: data[:4], Start: n * d, Duration: 1000, Keyframe: true}, {Data: data[4:], Start: n*d + 1000, Duration: 1000}}}, nil
}

// testOrigin is a server over one fake asset "clip" and one channel "ch" whose clock
// is pinned at 100 s after the epoch (segments 0..49 complete; DVR window 10 s).
func testOrigin(t testing.TB) (*Server, *httptest.Server) {
	t.Helper()
	root := t.TempDir()
	fakeAsset(t, root, "clip")
	h := hub.New()
	assets, errs := hub.OpenAssets(root)
	if len(errs) > 0 || len(assets) != 1 {
		t.Fatalf("OpenAssets: %v %v", assets, errs)
	}
	h.AddAsset(assets[0])
	now := time.Unix(100, 0)
	tracks := []*media.Track{
		{ID: "v1", Kind: media.Video, Codec: "avc1.64001f", Bandwidth: 100000, Width: 320, Height: 180, FrameRate: "25", Timescale: 1000},
		{ID: "a1", Kind: media.Audio, Codec: "mp4a.40.2", Bandwidth: 64000, SampleRate: 48000, Channels: 2, Timescale: 1000},
	}
	c, err := hub.NewChannel(hub.ChannelConfig{
		Info:     &media.Stream{Name: "ch", SegmentDuration: 2 * time.Second, Tracks: tracks},
		Inits:    map[string][]byte{"v1": []byte("vinit"), "a1": []byte("ainit")},
		OnDemand: fakeSchedule{},
		Timeline: media.Timeline{AvailabilityStart: time.Unix(0, 0), SegmentDuration: 2 * time.Second, TimeShiftBufferDepth: 10 * time.Second},
		Clock:    func() time.Time { return now },
	})
	must(t, err)
	must(t, h.AddChannel(context.Background(), c, nil))
	cfg := DefaultConfig()
	s := New(cfg, h, slog.New(slog.NewTextHandler(io.Discard, nil)), func() time.Time { return now })
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts
}

func get(t *testing.T, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	tr := &http.Transport{DisableCompression: true}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func TestOriginStatusAndHeaders(t *testing.T) {
	_, ts := testOrigin(t)
	tests := []struct {
		name, path  string
		status      int
		contentType string
		cache       string // substring of Cache-Control
		body        string // substring of the body
	}{
		{"vod segment", "/vod/clip/v1/2.m4s", 200, "video/mp4", "immutable", "v1-seg2;"},
		{"vod audio segment", "/vod/clip/a1/1.m4s", 200, "audio/mp4", "immutable", "a1-seg1;"},
		{"vod segment by time", "/vod/clip/v1/t25600.m4s", 200, "video/mp4", "immutable", "v1-seg2;"},
		{"vod init", "/vod/clip/v1/init.mp4", 200, "video/mp4", "immutable", "init-v1"},
		{"unknown asset", "/vod/nope/manifest.mpd", 404, "application/json", "no-store", `"status":404`},
		{"unknown track", "/vod/clip/v9/1.m4s", 404, "application/json", "", "no track"},
		{"unknown segment", "/vod/clip/v1/3.m4s", 404, "application/json", "", "no segment"},
		{"unknown time", "/vod/clip/v1/t1.m4s", 404, "application/json", "", "no segment"},
		{"malformed segment name", "/vod/clip/v1/abc.m4s", 400, "application/json", "", "not a segment name"},
		{"negative number", "/vod/clip/v1/-1.m4s", 400, "application/json", "", "not a segment name"},
		{"overflowing number", "/vod/clip/v1/99999999999999999999999.m4s", 400, "application/json", "", "not a segment name"},
		{"encoded traversal in track", "/vod/clip/..%2f..%2fetc/passwd", 400, "application/json", "", "not a valid"},
		{"dot name", "/vod/.clip/manifest.mpd", 400, "application/json", "", "not a valid"},
		{"live segment in window", "/live/ch/v1/49.m4s", 200, "video/mp4", "immutable", "v1-live-49"},
		{"live segment by time", "/live/ch/a1/t98000.m4s", 200, "audio/mp4", "", "a1-live-49"},
		// 50 is in progress and 51 the next (both waited for a segment duration:
		// TestStreamSegmentInProgress); 52 is farther ahead, 404 at once.
		{"live segment not yet", "/live/ch/v1/52.m4s", 404, "application/json", "no-cache", "not yet available"},
		{"live segment in progress, pinned clock", "/live/ch/v1/50.m4s?nowMS=100000", 404, "application/json", "no-cache", "not yet available"},
		{"live segment gone", "/live/ch/v1/39.m4s", 410, "application/json", "max-age=60", "DVR window"},
		{"live segment pinned earlier", "/live/ch/v1/39.m4s?nowMS=80000", 200, "video/mp4", "", "v1-live-39"},
		{"live bad nowMS", "/live/ch/v1/39.m4s?nowMS=soon", 400, "application/json", "", "nowMS"},
		{"live init", "/live/ch/a1/init.mp4", 200, "audio/mp4", "", "ainit"},
		{"unknown channel", "/live/nope/manifest.mpd", 404, "application/json", "", "no channel"},
		{"time", "/time?nowMS=1500", 200, "text/plain", "no-store", "1970-01-01T00:00:01.500Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := get(t, ts.URL+tt.path)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tt.status, body)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tt.contentType) {
				t.Errorf("Content-Type %q, want %q", ct, tt.contentType)
			}
			if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, tt.cache) {
				t.Errorf("Cache-Control %q, want it to contain %q", cc, tt.cache)
			}
			if !strings.Contains(string(body), tt.body) {
				t.Errorf("body %.200q does not contain %q", body, tt.body)
			}
			if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
				t.Errorf("no CORS header")
			}
		})
	}
}

func TestOriginRangesAndConditionals(t *testing.T) {
	_, ts := testOrigin(t)
	for _, base := range []string{"/vod/clip/v1/1.m4s", "/live/ch/v1/49.m4s"} {
		full, whole := get(t, ts.URL+base)
		if full.StatusCode != 200 {
			t.Fatalf("%s: %d", base, full.StatusCode)
		}
		resp, b := get(t, ts.URL+base, "Range", "bytes=2-6")
		if resp.StatusCode != 206 || string(b) != string(whole[2:7]) {
			t.Errorf("%s range 2-6: %d %q, want 206 %q", base, resp.StatusCode, b, whole[2:7])
		}
		if cr := resp.Header.Get("Content-Range"); cr != fmt.Sprintf("bytes 2-6/%d", len(whole)) {
			t.Errorf("%s Content-Range %q", base, cr)
		}
		resp, b = get(t, ts.URL+base, "Range", fmt.Sprintf("bytes=%d-", len(whole)-3))
		if resp.StatusCode != 206 || string(b) != string(whole[len(whole)-3:]) {
			t.Errorf("%s open range: %d %q", base, resp.StatusCode, b)
		}
		resp, _ = get(t, ts.URL+base, "Range", fmt.Sprintf("bytes=%d-", len(whole)+10))
		if resp.StatusCode != 416 {
			t.Errorf("%s unsatisfiable range: %d, want 416", base, resp.StatusCode)
		}
		etag := full.Header.Get("ETag")
		resp, _ = get(t, ts.URL+base, "If-None-Match", etag)
		if etag == "" || resp.StatusCode != 304 {
			t.Errorf("%s If-None-Match %q: %d, want 304", base, etag, resp.StatusCode)
		}
		if full.Header.Get("Last-Modified") == "" {
			t.Errorf("%s: no Last-Modified", base)
		}
		req, _ := http.NewRequest(http.MethodHead, ts.URL+base, nil)
		hr, err := http.DefaultClient.Do(req)
		must(t, err)
		hr.Body.Close()
		if hr.StatusCode != 200 || hr.ContentLength != int64(len(whole)) {
			t.Errorf("%s HEAD: %d length %d, want %d", base, hr.StatusCode, hr.ContentLength, len(whole))
		}
	}
}

func TestOriginCORSPreflight(t *testing.T) {
	_, ts := testOrigin(t)
	req, _ := http.NewRequest(http.MethodOptions, ts.URL+"/vod/clip/v1/1.m4s", nil)
	req.Header.Set("Origin", "https://player.example")
	req.Header.Set("Access-Control-Request-Headers", "range")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 204 || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Range") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestOriginManifests(t *testing.T) {
	_, ts := testOrigin(t)
	for _, path := range []string{
		"/vod/clip/manifest.mpd", "/vod/clip/manifest-timeline.mpd", "/vod/clip/master.m3u8", "/vod/clip/v1/playlist.m3u8",
		"/live/ch/manifest.mpd", "/live/ch/manifest-timeline.mpd", "/live/ch/master.m3u8", "/live/ch/a1/playlist.m3u8",
	} {
		resp, body := get(t, ts.URL+path)
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
			continue
		}
		if resp.Header.Get("ETag") == "" || resp.Header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("%s: ETag %q Vary %q", path, resp.Header.Get("ETag"), resp.Header.Get("Vary"))
		}
		gz, zbody := get(t, ts.URL+path, "Accept-Encoding", "gzip")
		if gz.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("%s: not compressed for a gzip client", path)
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader(zbody))
		must(t, err)
		plain, _ := io.ReadAll(zr)
		if !bytes.Equal(plain, body) {
			t.Errorf("%s: gzip body differs from plain body", path)
		}
	}
	_, mpd := get(t, ts.URL+"/live/ch/manifest.mpd")
	for _, want := range []string{`type="dynamic"`, `availabilityStartTime="1970-01-01T00:00:00Z"`, `startNumber="0"`, ts.URL + "/time", "timeShiftBufferDepth"} {
		if !strings.Contains(string(mpd), want) {
			t.Errorf("live MPD lacks %s:\n%s", want, mpd)
		}
	}
	_, pl := get(t, ts.URL+"/live/ch/v1/playlist.m3u8")
	if !strings.Contains(string(pl), "#EXT-X-MEDIA-SEQUENCE:45") || !strings.Contains(string(pl), "49.m4s") || strings.Contains(string(pl), "ENDLIST") {
		t.Errorf("live playlist window wrong:\n%s", pl)
	}
	_, pinned := get(t, ts.URL+"/live/ch/v1/playlist.m3u8?nowMS=20000")
	if !strings.Contains(string(pinned), "#EXT-X-MEDIA-SEQUENCE:5") || !strings.Contains(string(pinned), "\n9.m4s") {
		t.Errorf("pinned live playlist wrong:\n%s", pinned)
	}
	// Before the first segment: a valid MPD with nothing in it yet, and no HLS.
	resp, body := get(t, ts.URL+"/live/ch/manifest.mpd?nowMS=1000")
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-cache" || strings.Contains(string(body), "AdaptationSet") {
		t.Errorf("MPD before the first segment: %d %q\n%s", resp.StatusCode, resp.Header.Get("Cache-Control"), body)
	}
	resp, _ = get(t, ts.URL+"/live/ch/master.m3u8?nowMS=1000")
	if resp.StatusCode != 404 || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("HLS before the first segment: %d %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
}

func TestAPIStreamsAndMetrics(t *testing.T) {
	_, ts := testOrigin(t)
	_, body := get(t, ts.URL+"/api/streams")
	var list struct {
		Streams []struct {
			Name   string
			Live   bool
			DASH   string `json:"dash"`
			Tracks []map[string]any
		}
	}
	must(t, json.Unmarshal(body, &list))
	if len(list.Streams) != 2 || !list.Streams[0].Live || list.Streams[0].DASH != "/live/ch/manifest.mpd" || list.Streams[1].DASH != "/vod/clip/manifest.mpd" {
		t.Fatalf("api/streams: %s", body)
	}
	if _, has := list.Streams[1].Tracks[0]["segments"]; has {
		t.Errorf("api/streams leaks segment lists")
	}
	get(t, ts.URL+"/vod/clip/v1/1.m4s")
	get(t, ts.URL+"/vod/clip/v1/9.m4s")
	// A request is counted when its handler returns, which may be just after the
	// client has the whole body (a file segment goes out by sendfile): poll briefly.
	wants := []string{
		`streambed_http_requests_total{kind="segment",status="200"}`,
		`streambed_http_requests_total{kind="segment",status="404"}`,
		`streambed_http_response_bytes_total{kind="segment"}`,
		`streambed_stream_viewers{stream="vod/clip"} 1`,
		"streambed_http_open_connections",
	}
	var missing []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, m := get(t, ts.URL+"/metrics")
		missing = missing[:0]
		for _, want := range wants {
			if !strings.Contains(string(m), want) {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range missing {
		t.Errorf("metrics lack %s", want)
	}
}

// TestListenersServeH2cAndTLS runs the real listeners: HTTP/1.1 and h2c prior
// knowledge on one port, TLS with h2 on the other, and a graceful shutdown.
func TestListenersServeH2cAndTLS(t *testing.T) {
	s, _ := testOrigin(t)
	s.cfg.HTTP, s.cfg.HTTPS, s.cfg.DataDir = "127.0.0.1:0", "127.0.0.1:0", t.TempDir()
	ls, err := s.Listen()
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Serve(ctx, ls) }()

	h2c := &http.Transport{Protocols: new(http.Protocols)}
	h2c.Protocols.SetUnencryptedHTTP2(true)
	tlsTr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
	for _, c := range []struct {
		name, url, proto string
		tr               *http.Transport
	}{
		{"http1", "http://" + ls.HTTP.Addr().String(), "HTTP/1.1", &http.Transport{}},
		{"h2c", "http://" + ls.HTTP.Addr().String(), "HTTP/2.0", h2c},
		{"tls h2", "https://" + ls.HTTPS.Addr().String(), "HTTP/2.0", tlsTr},
	} {
		resp, err := (&http.Client{Transport: c.tr}).Get(c.url + "/vod/clip/v1/1.m4s")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Proto != c.proto || !bytes.Contains(b, []byte("v1-seg1")) {
			t.Errorf("%s: %d %s", c.name, resp.StatusCode, resp.Proto)
		}
		c.tr.CloseIdleConnections()
	}
	// The generated certificate is reused on the next start.
	certFile := filepath.Join(s.cfg.DataDir, "tls", "cert.pem")
	before, err := os.ReadFile(certFile)
	must(t, err)
	if _, err := loadOrCreateCert(s.cfg, s.log); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(certFile)
	if !bytes.Equal(before, after) {
		t.Errorf("certificate regenerated on restart")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no graceful shutdown within 10 s")
	}
}

// A transport's component runs while the origin serves and stops with it; one that
// fails stops the origin with its error.
func TestSupervisedComponents(t *testing.T) {
	s, _ := testOrigin(t)
	s.cfg.HTTP, s.cfg.HTTPS = "127.0.0.1:0", ""
	started, stopped := make(chan struct{}), make(chan struct{})
	s.Supervise("ticker", func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		close(stopped)
		return nil
	})
	ls, err := s.Listen()
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ls) }()
	<-started
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("Serve returned before its component stopped")
	}

	s2, _ := testOrigin(t)
	s2.cfg.HTTP, s2.cfg.HTTPS = "127.0.0.1:0", ""
	s2.Supervise("udp", func(context.Context) error { return fmt.Errorf("port taken") })
	ls2, err := s2.Listen()
	must(t, err)
	if err := s2.Serve(context.Background(), ls2); err == nil || !strings.Contains(err.Error(), "udp: port taken") {
		t.Errorf("Serve with a failing component: %v", err)
	}
}

// A transport's endpoint of each stream is listed beside the origin's own keys.
func TestAdvertisedEndpoints(t *testing.T) {
	s, ts := testOrigin(t)
	s.Advertise("ws", func(st hub.Stream) string {
		if st.Live() {
			return "/ws/" + st.Info().Name
		}
		return ""
	})
	_, body := get(t, ts.URL+"/api/streams")
	var list struct{ Streams []map[string]any }
	must(t, json.Unmarshal(body, &list))
	if list.Streams[0]["ws"] != "/ws/ch" || list.Streams[0]["dash"] != "/live/ch/manifest.mpd" {
		t.Errorf("channel entry %v", list.Streams[0])
	}
	if _, has := list.Streams[1]["ws"]; has {
		t.Errorf("asset entry lists an endpoint the transport did not give: %v", list.Streams[1])
	}
}

// Live manifests say until when they may be kept as an absolute Expires (the clock
// plus half a segment, rounded down to the second) under a Cache-Control without
// max-age, so that cache tiers without Age headers cannot stack their lifetimes; a
// life shorter than what HTTP dates can say is no-cache. On-demand manifests keep
// their max-age.
func TestLiveManifestExpiresAbsolute(t *testing.T) {
	s, ts := testOrigin(t) // clock at 100 s, 2 s segments
	for _, path := range []string{"/live/ch/manifest.mpd", "/live/ch/master.m3u8", "/live/ch/v1/playlist.m3u8"} {
		resp, _ := get(t, ts.URL+path)
		if cc, exp := resp.Header.Get("Cache-Control"), resp.Header.Get("Expires"); cc != "public" || exp != "Thu, 01 Jan 1970 00:01:41 GMT" {
			t.Errorf("%s: Cache-Control %q, Expires %q; want public and 101 s", path, cc, exp)
		}
	}
	if resp, _ := get(t, ts.URL+"/vod/clip/manifest.mpd"); resp.Header.Get("Cache-Control") != "public, max-age=60" || resp.Header.Get("Expires") != "" {
		t.Errorf("VOD manifest: Cache-Control %q, Expires %q", resp.Header.Get("Cache-Control"), resp.Header.Get("Expires"))
	}
	s.cfg.Cache.LiveManifestMaxAge = 300 * time.Millisecond // 100.3 s rounds down to now
	if resp, _ := get(t, ts.URL+"/live/ch/manifest.mpd"); resp.Header.Get("Cache-Control") != "no-cache" || resp.Header.Get("Expires") != "" {
		t.Errorf("sub-second life: Cache-Control %q, Expires %q; want no-cache", resp.Header.Get("Cache-Control"), resp.Header.Get("Expires"))
	}
}

// With a TLS listener open, /api/streams says its port, so that a page loaded over
// plain HTTP can play LL-HLS over HTTP/2 (browsers speak HTTP/2 only over TLS); with
// none (or before Listen), it says nothing.
func TestAPIStreamsListsHTTPSPort(t *testing.T) {
	s, ts := testOrigin(t)
	var doc map[string]any
	_, body := get(t, ts.URL+"/api/streams")
	must(t, json.Unmarshal(body, &doc))
	if _, has := doc["https_port"]; has {
		t.Fatalf("https_port listed before a TLS listener was opened: %s", body)
	}
	s.cfg.HTTP, s.cfg.HTTPS = "", "127.0.0.1:0"
	ls, err := s.Listen()
	must(t, err)
	defer ls.HTTPS.Close()
	want := ls.HTTPS.Addr().(*net.TCPAddr).Port
	_, body = get(t, ts.URL+"/api/streams")
	doc = nil
	must(t, json.Unmarshal(body, &doc))
	if got, ok := doc["https_port"].(float64); !ok || int(got) != want {
		t.Errorf("https_port = %v, want %d: %s", doc["https_port"], want, body)
	}
}
