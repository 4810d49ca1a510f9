package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// TestChannelWaitingForEncoder: a channel that starts empty (an ingest channel)
// answers its MPDs with a valid empty one and its HLS playlists with 404 "no encoder
// connected", is "waiting" in
// /api/streams, and "live" once a segment is complete in every track. A number the
// encoder skipped leaves the older segments out of the manifests.
func TestChannelWaitingForEncoder(t *testing.T) {
	now := time.Unix(1000, 0)
	c, err := hub.NewChannel(hub.ChannelConfig{Info: &media.Stream{Name: "in"}, Clock: func() time.Time { return now },
		Timeline: media.Timeline{SegmentDuration: 2 * time.Second, TimeShiftBufferDepth: 60 * time.Second}})
	must(t, err)
	h := hub.New()
	must(t, h.AddChannel(context.Background(), c, nil))
	s := New(DefaultConfig(), h, slog.New(slog.NewTextHandler(io.Discard, nil)), func() time.Time { return now })
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	state := func() string {
		_, body := get(t, ts.URL+"/api/streams")
		var list struct{ Streams []struct{ State string } }
		must(t, json.Unmarshal(body, &list))
		return list.Streams[0].State
	}

	// The MPDs are valid and empty (players re-read them until media comes); HLS has
	// no such form, so its playlist says why it is not there.
	for _, m := range []string{"manifest.mpd", "manifest-timeline.mpd"} {
		resp, body := get(t, ts.URL+"/live/in/"+m)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `type="dynamic"`) || !strings.Contains(string(body), "minimumUpdatePeriod") ||
			strings.Contains(string(body), "AdaptationSet") || resp.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("%s of a channel without encoder: %d %v\n%s", m, resp.StatusCode, resp.Header, body)
		}
	}
	if resp, body := get(t, ts.URL+"/live/in/master.m3u8"); resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "no encoder connected") {
		t.Errorf("master.m3u8 of a channel without encoder: %d %s", resp.StatusCode, body)
	}
	if st := state(); st != "waiting" {
		t.Errorf("state %q, want waiting", st)
	}

	must(t, c.AddTrack(&media.Track{ID: "v", Kind: media.Video, Codec: "avc1.42c00d", Bandwidth: 1000, Width: 320, Height: 180, Timescale: 1000}))
	must(t, c.SetInit("v", []byte("init")))
	c.SetAvailabilityStart(now.Add(-10 * time.Second))
	for _, seg := range []struct{ n, start, dur uint64 }{{0, 0, 2000}, {1, 2000, 3000}, {3, 5000, 2000}, {4, 7000, 2000}} {
		must(t, c.AppendChunk("v", seg.n, &media.Chunk{Data: []byte("x"), Start: seg.start, Duration: seg.dur, Keyframe: true}, false))
	}
	if st := state(); st != "live" {
		t.Errorf("state %q, want live", st)
	}
	resp, body := get(t, ts.URL+"/live/in/manifest-timeline.mpd")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `<S t="5000" d="2000"`) || strings.Contains(string(body), `t="0"`) {
		t.Errorf("timeline MPD after a skipped number: %d\n%s", resp.StatusCode, body)
	}
	resp, body = get(t, ts.URL+"/live/in/v/playlist.m3u8")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "#EXT-X-MEDIA-SEQUENCE:3") {
		t.Errorf("HLS playlist after a skipped number: %d\n%s", resp.StatusCode, body)
	}
	c.EndStream()
	if st := state(); st != "ended" {
		t.Errorf("state %q, want ended", st)
	}
}
