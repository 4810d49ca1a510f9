package upstream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player/dash"
	"github.com/streambed/streambed/internal/server"
	"github.com/streambed/streambed/internal/source/looplive"
	"github.com/streambed/streambed/internal/testmedia"
)

// serve runs an origin over h on a test server.
func serve(t *testing.T, h *hub.Hub) string {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.DataDir = t.TempDir()
	srv := server.New(cfg, h, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// startUpstream is a Streambed origin looping the test asset as live channel "loop"
// in 500 ms chunks (low-latency DASH), and the asset on demand.
func startUpstream(t *testing.T) (string, *hub.Asset) {
	t.Helper()
	a, err := hub.OpenAsset(testmedia.Asset(t))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New()
	h.AddAsset(a)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := looplive.AddChannel(ctx, h, a, looplive.ChannelOptions{Name: "loop", ChunkDuration: 500 * time.Millisecond,
		DVRWindow: 30 * time.Second, AvailabilityStart: looplive.DefaultAvailabilityStart}); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); h.Close() })
	return serve(t, h), a
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// An edge pulls the upstream's live channel into its own hub and serves it itself:
// its MPD and HLS playlists are its own, and its inits and segments are the
// upstream's bytes under the same numbers, following the live edge.
func TestEdgePullsAndServesLocally(t *testing.T) {
	up, a := startUpstream(t)
	h := hub.New()
	defer h.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := AddChannel(ctx, h, Options{Name: "edge", MPD: up + "/live/loop/manifest.mpd"})
	if err != nil {
		t.Fatal(err)
	}
	edge := serve(t, h)
	if got, want := len(c.Info().Tracks), len(a.Info().Tracks); got != want {
		t.Fatalf("edge has %d tracks, upstream %d", got, want)
	}

	// Wait for two complete segments of every track at the edge.
	complete := func() (uint64, bool) {
		last, ok := c.Latest(time.Now())
		if !ok {
			return 0, false
		}
		for _, tr := range c.Info().Tracks {
			if _, err := c.Segment(tr.ID, last, time.Now()); err != nil {
				return 0, false
			}
		}
		return last, true
	}
	var first uint64
	deadline := time.Now().Add(30 * time.Second)
	for {
		if n, ok := complete(); ok {
			first = n
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the edge has no complete segment after 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for {
		if n, ok := complete(); ok && n >= first+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the edge did not follow the live edge past segment %d", first)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Chunks arrive at the edge as the upstream makes them: the edge holds a segment
	// in progress with part of its chunks stored, not only whole segments.
	video := c.Info().Tracks[0].ID
	for inProgress := false; !inProgress; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the edge never held a segment in progress: it appends whole segments only")
		}
		last, _ := c.Latest(time.Now())
		seg, complete, err := c.Partial(video, last+1)
		inProgress = err == nil && !complete && len(seg.Chunks) > 0
	}

	for _, tr := range a.Info().Tracks {
		for _, path := range []string{"init.mp4", "", "next"} {
			n := first
			if path == "next" {
				n = first + 1
			}
			file := path
			if path == "" || path == "next" {
				file = layout.Segment(true, "x", tr.ID, n)[len("/live/x/"+tr.ID+"/"):]
			}
			st, got := get(t, edge+layout.TrackFile(true, "edge", tr.ID, file))
			_, want := get(t, up+layout.TrackFile(true, "loop", tr.ID, file))
			if st != http.StatusOK || !bytes.Equal(got, want) {
				t.Errorf("%s %s at the edge: status %d, %d bytes; upstream %d bytes", tr.ID, file, st, len(got), len(want))
			}
		}
	}

	st, mpd := get(t, edge+"/live/edge/manifest.mpd")
	if st != http.StatusOK {
		t.Fatalf("edge MPD: %d %s", st, mpd)
	}
	m, err := dash.Parse(mpd, edge+"/live/edge/manifest.mpd", time.Now())
	if err != nil {
		t.Fatalf("edge MPD: %v\n%s", err, mpd)
	}
	reps := 0
	for _, s := range m.Sets {
		reps += len(s.Representations)
	}
	if !m.Live || reps != len(a.Info().Tracks) {
		t.Errorf("edge MPD: live %v with %d representations, want %d:\n%s", m.Live, reps, len(a.Info().Tracks), mpd)
	}
	if !strings.Contains(string(mpd), edge+"/time") {
		t.Errorf("the edge's MPD should name the edge's own clock:\n%s", mpd)
	}
	if st, pl := get(t, edge+"/live/edge/master.m3u8"); st != http.StatusOK || !strings.Contains(string(pl), "#EXT-X-STREAM-INF") {
		t.Errorf("edge HLS: %d %s", st, pl)
	}
}

func TestNewChannelRejectsWhatItCannotPull(t *testing.T) {
	up, a := startUpstream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		name, url string
		kind      error
	}{
		{"static MPD", up + "/vod/" + a.Info().Name + "/manifest.mpd", media.ErrBadRequest},
		{"SegmentTimeline", up + "/live/loop/manifest-timeline.mpd", media.ErrBadRequest},
		{"not an MPD", up + "/time", media.ErrInvalidMedia},
		{"no such channel", up + "/live/nope/manifest.mpd", nil},
	} {
		_, _, err := NewChannel(ctx, Options{Name: "edge", MPD: c.url})
		if err == nil || (c.kind != nil && !errors.Is(err, c.kind)) {
			t.Errorf("%s: %v, want an error of kind %v", c.name, err, c.kind)
		}
	}
}
