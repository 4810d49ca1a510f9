package load

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/server"
	"github.com/streambed/streambed/internal/source/looplive"
	"github.com/streambed/streambed/internal/testmedia"
	"github.com/streambed/streambed/internal/transport/wspush"
)

// origin serves the test asset looped live as channel "live" (one chunk per
// segment) through the real origin with WebSocket push attached.
func origin(t *testing.T) string {
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
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := looplive.AddChannel(ctx, h, a, looplive.ChannelOptions{Name: "live", DVRWindow: 20 * time.Second, AvailabilityStart: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.HTTP, cfg.HTTPS = "127.0.0.1:0", ""
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := server.New(cfg, h, log, nil)
	if _, err := wspush.Attach(ctx, srv, wspush.Config{}); err != nil {
		t.Fatal(err)
	}
	ls, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, ls); close(done) }()
	t.Cleanup(func() { cancel(); <-done; h.Close() })
	return ls.HTTP.Addr().(*net.TCPAddr).String()
}

// TestSteps runs a few clients of each transport for a few seconds: every client
// receives media, the wire carries more than the media, and the origin's metrics
// are read. No timing is asserted: keeping up is a measurement, not a test.
func TestSteps(t *testing.T) {
	addr := origin(t)
	ctx := context.Background()
	target, err := Resolve(ctx, "ws://"+addr+"/ws/live", []string{"v180"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if target.EncodedKbps <= 0 || len(target.Reps) != 1 || target.SegmentDuration != 2*time.Second {
		t.Fatalf("target %+v", target)
	}
	for _, tr := range []string{WS, HTTP1, HTTP2} {
		res, err := Run(ctx, Options{Transport: tr, Clients: 3, Duration: 3 * time.Second, Ramp: 100 * time.Millisecond, Target: target})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: keeping up %d/%d, received %v kbit/s (encoded %.0f), overhead %.0f B/chunk, server %+v",
			tr, res.KeepingUp, res.Clients, res.PerClient, res.EncodedKbps, res.OverheadPerChunk, res.Server)
		if res.Failed != 0 || res.Chunks == 0 || res.MediaBytes == 0 || res.WireIn <= res.MediaBytes {
			t.Errorf("%s: failed %d (%v), chunks %d, media %d, wire in %d", tr, res.Failed, res.Errors, res.Chunks, res.MediaBytes, res.WireIn)
		}
		if res.Server == nil || res.Server.Goroutines[1] == 0 {
			t.Errorf("%s: no origin metrics", tr)
		}
	}
	idle, err := Run(ctx, Options{Transport: WS, Idle: true, Clients: 5, Duration: time.Second, Target: target})
	if err != nil || idle.Failed != 0 || idle.Server == nil || idle.Server.Goroutines[1] < 5 {
		t.Errorf("idle: %+v %v", idle, err)
	}
	if _, err := Run(ctx, Options{Transport: HTTP1, Idle: true, Clients: 1, Duration: time.Second, Target: target}); err == nil {
		t.Error("--idle accepted for http1")
	}
}

func TestResolveRejects(t *testing.T) {
	for _, u := range []string{"ws://h/ws/vod/x", "http://h/vod/x/manifest.mpd", "ftp://h/x", "ws://h/ws/"} {
		if _, err := Resolve(context.Background(), u, nil, false); err == nil {
			t.Errorf("%s accepted", u)
		}
	}
}
