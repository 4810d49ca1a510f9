package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/server"
	"github.com/streambed/streambed/internal/source/looplive"
	"github.com/streambed/streambed/internal/testmedia"
	"github.com/streambed/streambed/internal/transport/fdsp"
)

// TestPlayFDSPLiveLatency plays a looped live channel over FDSP through the real
// origin (its MPD and /time) and checks latency_ms on the definition every
// transport uses: the clock synchronised by UTCTiming, the playhead's wall time
// from the MPD's timeline. FDSP's playhead trails the live edge by at least the
// playout delay (the first substream's TCP part completes at the edge at the
// earliest, and its first frame is due that much later), by no more than the
// channel's window, and steadily (1× play-out, no rebuffering after start-up).
func TestPlayFDSPLiveLatency(t *testing.T) {
	src := testmedia.AssetWith(t, testmedia.Options{SegmentDuration: time.Second, Ladder: "360p:600k"})
	dir := filepath.Join(t.TempDir(), "clip")
	if err := os.Symlink(src, dir); err != nil {
		t.Fatal(err)
	}
	a, err := hub.OpenAsset(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New()
	h.AddAsset(a)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A start an odd number of milliseconds ago: a latency that ignored the
	// MPD's availabilityStartTime would be off by decades or hours, not seconds.
	if _, err := looplive.AddChannel(ctx, h, a, looplive.ChannelOptions{Name: "live", DVRWindow: 20 * time.Second, AvailabilityStart: time.Now().Add(-7*time.Hour - 123*time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	fs, err := fdsp.NewServer(h, "127.0.0.1:0", "127.0.0.1:0", fdsp.Options{Substream: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fs.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	origin := server.New(server.DefaultConfig(), h, slog.New(slog.NewTextHandler(io.Discard, nil)), nil).Handler()
	mux := http.NewServeMux()
	mux.HandleFunc("/api/streams", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"streams":[{"name":"live","live":true,"fdsp":"fdsp://%s/live/live"}]}`, fs.Addr())
	})
	mux.Handle("/", origin)
	api := httptest.NewServer(mux)
	defer api.Close()

	const playout = 1500 * time.Millisecond
	var out, errOut bytes.Buffer
	err = Play(context.Background(), []string{api.URL + "/live/live/manifest.mpd", "--transport", "fdsp", "--bp", "50", "--json", "--duration", "7s",
		"--playout-delay", playout.String(), "--sample-interval", "500ms"}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	var rep struct {
		LatencyMS     *float64 `json:"latency_ms"`
		LatencyMinMS  *float64 `json:"latency_min_ms"`
		LatencyMaxMS  *float64 `json:"latency_max_ms"`
		ClockSource   string   `json:"clock_source"`
		RebufferCount int      `json:"rebuffer_count"`
		Samples       []struct {
			State     string   `json:"state"`
			LatencyMS *float64 `json:"latency_ms"`
		} `json:"samples"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if rep.LatencyMS == nil || rep.LatencyMinMS == nil || rep.LatencyMaxMS == nil {
		t.Fatalf("no latency_ms in the report:\n%s\n%s", out.String(), errOut.String())
	}
	t.Logf("latency %.0f ms (%.0f–%.0f), clock %s", *rep.LatencyMS, *rep.LatencyMinMS, *rep.LatencyMaxMS, rep.ClockSource)
	if rep.ClockSource == "" {
		t.Error("no clock_source: the MPD's UTCTiming was not used")
	}
	if *rep.LatencyMinMS < float64(playout.Milliseconds()) || *rep.LatencyMaxMS > 20_000 {
		t.Errorf("latency %.0f–%.0f ms: want between the playout delay (%v) and the 20 s window", *rep.LatencyMinMS, *rep.LatencyMaxMS, playout)
	}
	if rep.RebufferCount == 1 && *rep.LatencyMaxMS-*rep.LatencyMinMS > 300 {
		t.Errorf("latency moved %.0f ms without rebuffering: want it steady", *rep.LatencyMaxMS-*rep.LatencyMinMS)
	}
	n := 0
	for _, s := range rep.Samples {
		if s.State == "playing" && s.LatencyMS != nil {
			n++
		}
	}
	if n < 4 {
		t.Errorf("%d playing samples with a latency, want at least 4 in 7 s", n)
	}
}
