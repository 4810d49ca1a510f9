package hls_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/player/hls"
	"github.com/streambed/streambed/internal/server"
	"github.com/streambed/streambed/internal/source/looplive"
	"github.com/streambed/streambed/internal/testmedia"
	"github.com/streambed/streambed/internal/transport/httppull"
)

// llOrigin serves the test asset looped live as channel "ll" in one-frame (40 ms)
// chunks, so its playlists are LL-HLS (200 ms parts, blocking reloads). It returns
// the origin's base URL.
func llOrigin(t *testing.T) string {
	t.Helper()
	return llOriginHolding(t, 0)
}

// llOriginHolding is llOrigin announcing PART-HOLD-BACK hold (serve
// --ll-hls-part-hold-back; 0: the default, three part targets).
func llOriginHolding(t *testing.T, hold time.Duration) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "test")
	if err := os.Symlink(testmedia.Asset(t), dir); err != nil {
		t.Fatal(err)
	}
	a, err := hub.OpenAsset(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New()
	h.AddAsset(a)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); h.Close() })
	if _, err := looplive.AddChannel(ctx, h, a, looplive.ChannelOptions{Name: "ll", ChunkDuration: 40 * time.Millisecond, DVRWindow: 20 * time.Second, AvailabilityStart: looplive.DefaultAvailabilityStart}); err != nil {
		t.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.HTTP, cfg.HTTPS, cfg.DataDir = "127.0.0.1:0", "", t.TempDir()
	cfg.LLHLSPartHoldBack = hold
	srv := server.New(cfg, h, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	ls, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, ls); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + ls.HTTP.Addr().(*net.TCPAddr).String()
}

// event is a request the player made (ask) or a playlist it received (got), in order.
type event struct {
	ask  bool
	kind player.RequestKind
	url  string
	body string // playlists
}

// recorder is the HTTP client with every request and playlist noted in order.
type recorder struct {
	*httppull.Client
	mu     sync.Mutex
	events []event
}

func (r *recorder) note(e event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) Fetch(ctx context.Context, req player.SegmentRequest) (*player.Response, error) {
	r.note(event{ask: true, kind: req.Kind, url: req.URL})
	resp, err := r.Client.Fetch(ctx, req)
	if err == nil && req.Kind == player.RequestManifest {
		r.note(event{kind: req.Kind, url: req.URL, body: string(resp.Body)})
	}
	return resp, err
}

var (
	partLine     = regexp.MustCompile(`#EXT-X-PART:[^\n]*URI="([^"]+)"`)
	partName     = regexp.MustCompile(`/(\w+)/(\d+)\.(\d+)\.m4s$`)
	playlistName = regexp.MustCompile(`/(\w+)/playlist\.m3u8`)
)

// TestPlayLLHLSByParts plays the LL-HLS channel for a few seconds as hls.js does and
// checks the order of events: every part the player asks for was listed (EXT-X-PART)
// in a playlist it had received before — never the preload hint, never the segment in
// progress — the parts of each track follow one another without a gap, and reloads
// after the first ask to be held for the next part.
func TestPlayLLHLSByParts(t *testing.T) {
	if testing.Short() {
		t.Skip("plays a live channel for 5 s (-short)")
	}
	base := llOrigin(t)
	client, err := httppull.NewClient(httppull.ClientOptions{Protocol: httppull.HTTP1})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	rec := &recorder{Client: client}
	f := struct {
		player.Fetcher
		player.ChunkReporter
	}{rec, client}
	p, err := player.New(player.Config{URL: base + "/live/ll/master.m3u8", Fetcher: f, Load: hls.NewLoader(), Duration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.TargetSource != "part-hold-back" || rep.TargetLatencyMS == nil || *rep.TargetLatencyMS != 600 {
		t.Fatalf("target %v from %q, want PART-HOLD-BACK's 600 ms", rep.TargetLatencyMS, rep.TargetSource)
	}
	listed := map[string]bool{}
	last := map[string][2]int{}      // track → the segment and part asked last
	rendition := map[string]string{} // track → the rendition asked last
	var parts, blocking, reloads, switches int
	byRendition := map[string]int{} // media playlist requests, by rendition
	for _, e := range rec.events {
		switch {
		case !e.ask:
			for _, m := range partLine.FindAllStringSubmatch(e.body, -1) {
				listed[e.url[:strings.LastIndex(e.url, "/")+1]+m[1]] = true
			}
		case e.kind == player.RequestManifest && strings.Contains(e.url, "/playlist.m3u8"):
			reloads++
			if m := playlistName.FindStringSubmatch(e.url); m != nil {
				byRendition[m[1]]++
			}
			if strings.Contains(e.url, "_HLS_msn=") && strings.Contains(e.url, "_HLS_part=") {
				blocking++
			}
		case e.kind == player.RequestMedia:
			m := partName.FindStringSubmatch(e.url)
			if m == nil {
				continue // a complete segment, before the parts listed
			}
			parts++
			// The same track folder for every rendition is not given: number the parts of
			// video and audio apart.
			track := "video"
			if strings.HasPrefix(m[1], "a") {
				track = "audio"
			}
			if !listed[strings.SplitN(e.url, "?", 2)[0]] {
				t.Errorf("asked for %s before a playlist listed it", e.url)
			}
			n, _ := strconv.Atoi(m[2])
			k, _ := strconv.Atoi(m[3])
			prev, ok := last[track]
			switch {
			case ok && rendition[track] != m[1] && track == "video":
				// A switch starts at the segment's first part (the independent one), as
				// hls.js loads a new level: the segment of the buffered end, or the next.
				switches++
				if k != 0 || n != prev[0] && n != prev[0]+1 {
					t.Errorf("switch from %s to %s: part %d.%d after %d.%d, want the first part of segment %d (or %d)", rendition[track], m[1], n, k, prev[0], prev[1], prev[0], prev[0]+1)
				}
			case !ok && track == "video" && k != 0:
				t.Errorf("started video at part %d.%d, want its segment's first (independent) part", n, k)
			case ok && !(n == prev[0] && k == prev[1]+1 || n == prev[0]+1 && k == 0):
				t.Errorf("%s part %d.%d after %d.%d: not the next", track, n, k, prev[0], prev[1])
			}
			last[track], rendition[track] = [2]int{n, k}, m[1]
		}
	}
	// 5 s of 200 ms parts, for video and audio.
	if parts < 20 || blocking < reloads/2 {
		t.Errorf("%d parts asked; %d of %d playlist requests blocking", parts, blocking, reloads)
	}
	if rep.ChunkAppends == 0 {
		t.Error("no chunk appended")
	}
	// As hls.js, each reload fetches the playlist of the video rendition it plays and
	// the audio's: video playlists are asked as often as the audio's, plus the other
	// renditions' once at the first load (reports.go) — not every rendition's each time.
	var video, audio, renditions int
	for r, n := range byRendition {
		if strings.HasPrefix(r, "a") {
			audio += n
		} else {
			video += n
			renditions++
		}
	}
	if renditions < 2 || audio < 10 || video > audio+renditions-1 {
		t.Errorf("media playlist requests %v: %d video against %d audio over %d video renditions, want at most audio + %d", byRendition, video, audio, renditions, renditions-1)
	}
	t.Logf("%d parts, %d video switches, %d of %d playlist requests blocking (by rendition %v), %d stalls", parts, switches, blocking, reloads, byRendition, rep.StallCount)
}

// The headless player aims at the PART-HOLD-BACK the origin is configured for, as
// hls.js does: 1 s from serve --ll-hls-part-hold-back 1s instead of three parts.
func TestPlayLLHLSConfiguredPartHoldBack(t *testing.T) {
	if testing.Short() {
		t.Skip("plays a live channel for 2 s (-short)")
	}
	base := llOriginHolding(t, time.Second)
	client, err := httppull.NewClient(httppull.ClientOptions{Protocol: httppull.HTTP1})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	p, err := player.New(player.Config{URL: base + "/live/ll/master.m3u8", Fetcher: client, Load: hls.NewLoader(), Duration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.TargetSource != "part-hold-back" || rep.TargetLatencyMS == nil || *rep.TargetLatencyMS != 1000 {
		t.Fatalf("target %v from %q, want the configured PART-HOLD-BACK's 1000 ms", rep.TargetLatencyMS, rep.TargetSource)
	}
}
