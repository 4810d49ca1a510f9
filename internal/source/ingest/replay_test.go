package ingest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/source/encoder"
	"github.com/streambed/streambed/internal/testmedia"
)

// The replay encoder (`streambed encode live --replay`) feeds an ingest channel: its
// epoch-stamped tracks arrive, are numbered alike and become servable segments.
func TestReplayEncoderIntoIngest(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: posts in real time for 7 s")
	}
	a, err := hub.OpenAsset(testmedia.Asset(t))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New()
	in := New(Config{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := in.AddChannel(ctx, h, ChannelOptions{Name: "live", Token: testToken, SegmentDuration: a.Info().SegmentDuration})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	mux := http.NewServeMux()
	for _, p := range Patterns {
		mux.Handle(p, in)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	rctx, stop := context.WithTimeout(ctx, 7*time.Second)
	defer stop()
	if err := encoder.Replay(rctx, a, encoder.ReplayOptions{Base: srv.URL + "/ingest/live", Token: testToken}); err != nil {
		t.Fatalf("replay: %v", err)
	}
	n, ok := c.Latest(time.Now())
	if !ok {
		t.Fatalf("no complete segment in every track after 7 s of 2 s segments; tracks %d", len(c.Info().Tracks))
	}
	if len(c.Info().Tracks) != len(a.Info().Tracks) {
		t.Errorf("channel has %d tracks, the encoder posted %d", len(c.Info().Tracks), len(a.Info().Tracks))
	}
	for _, tr := range c.Info().Tracks {
		s, err := c.Segment(tr.ID, n, time.Now())
		if err != nil {
			t.Fatalf("track %s segment %d: %v", tr.ID, n, err)
		}
		// Media time is time since the epoch: segment n starts near n·D after 1970.
		at := time.Unix(0, 0).Add(tr.Duration(s.Start))
		if d := time.Since(at); d < 0 || d > time.Minute {
			t.Errorf("track %s segment %d starts at %v, not in the last minute", tr.ID, n, at)
		}
	}
}
