package wspush

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/player/dash"
	"github.com/streambed/streambed/internal/player/qoe"
	"github.com/streambed/streambed/internal/server"
)

// startServer serves the harness hub through the real origin (pull routes, /time)
// with WebSocket push attached, and returns its host:port.
func startServer(t *testing.T, o *origin) string {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.HTTP, cfg.HTTPS = "127.0.0.1:0", ""
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := server.New(cfg, o.hub, log, nil)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := Attach(ctx, srv, Config{Channels: map[string]string{"live": PolicyBuffer}}); err != nil {
		t.Fatal(err)
	}
	ls, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, ls); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return ls.HTTP.Addr().(*net.TCPAddr).String()
}

func playWS(t *testing.T, rawURL string, d time.Duration) (*PlayerTransport, player.Config) {
	t.Helper()
	u, _ := url.Parse(rawURL)
	tr, err := NewPlayerTransport(u, PlayerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr, player.Config{URL: rawURL, Fetcher: tr, Load: dash.Load, Duration: d, LiveDelay: 2 * time.Second, RequestTimeout: 10 * time.Second, Transport: "ws", PushWait: DefaultPushWait}
}

// TestPlayerLive plays the live channel over WebSocket push in the headless player:
// media arrives by push (deliveries), the server's policy (the channel's ws_policy)
// picks the rendition, and the report's latency is what the live delay makes it.
func TestPlayerLive(t *testing.T) {
	o := newOrigin(t, 40*time.Millisecond, Options{})
	addr := startServer(t, o)
	tr, cfg := playWS(t, "ws://"+addr+"/ws/live", 7*time.Second)
	p, err := player.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tr.AddToReport(&rep)
	t.Logf("live: played %.1fs startup %v stalls %d switches %d pushed %d media requests %d errors %d latency %v (%v–%v) overhead %d (%s)",
		rep.PlayedS, ptr(rep.StartupDelayMS), rep.StallCount, rep.Switches, rep.Pushed, rep.MediaRequests, rep.Errors, ptr(rep.LatencyMS), ptr(rep.LatencyMinMS), ptr(rep.LatencyMaxMS), rep.OverheadBytes, rep.OverheadSource)
	if rep.EndReason != "duration" || rep.PlayedS <= 0 || rep.Pushed == 0 || rep.LatencyMS == nil || rep.Protocol != "WebSocket" {
		t.Errorf("report: end %s played %.1f pushed %d latency %v protocol %q", rep.EndReason, rep.PlayedS, rep.Pushed, rep.LatencyMS, rep.Protocol)
	}
	checkLiveLatency(t, rep, cfg.LiveDelay, 2*time.Second)
	var policy string
	for _, m := range tr.Messages() {
		if m.Type == "switch" {
			policy = string(m.Text)
		}
	}
	if !strings.Contains(policy, "output buffer") {
		t.Errorf("no switch by the channel's buffer rule: %q", policy)
	}
}

// checkLiveLatency checks the live latency a report gives against what the session
// did. The player starts at the boundary of the segment that holds (live edge −
// delay), where the edge is the end of the newest complete segment, so at start-up it
// is at least delay behind the origin's clock and at most delay + one segment, plus
// the start-up time; only a stall adds to it later. The clock is the origin's
// (UTCTiming on the same machine), known to within half the /time round trip.
func checkLiveLatency(t *testing.T, rep qoe.Report, delay, segment time.Duration) {
	t.Helper()
	if rep.LatencyMS == nil || rep.LatencyMinMS == nil || rep.LatencyMaxMS == nil || rep.StartupDelayMS == nil {
		t.Errorf("latency %v (min %v, max %v), start-up %v: want all of them", ptr(rep.LatencyMS), ptr(rep.LatencyMinMS), ptr(rep.LatencyMaxMS), ptr(rep.StartupDelayMS))
		return
	}
	const clockMS = 100
	lo := float64(delay.Milliseconds()) - clockMS
	hi := float64((delay + segment).Milliseconds()) + *rep.StartupDelayMS + rep.StallMS + clockMS
	if *rep.LatencyMinMS < lo || *rep.LatencyMaxMS > hi || *rep.LatencyMS < *rep.LatencyMinMS || *rep.LatencyMS > *rep.LatencyMaxMS {
		t.Errorf("latency mean %.0f ms, min %.0f, max %.0f; want within %.0f–%.0f ms (delay %v, segment %v, start-up %.0f ms, stalls %.0f ms)",
			*rep.LatencyMS, *rep.LatencyMinMS, *rep.LatencyMaxMS, lo, hi, delay, segment, *rep.StartupDelayMS, rep.StallMS)
	}
}

// TestPlayerVOD plays an asset to its end over push.
func TestPlayerVOD(t *testing.T) {
	o := newOrigin(t, 0, Options{})
	addr := startServer(t, o)
	tr, cfg := playWS(t, "ws://"+addr+"/ws/vod/test", 0)
	p, err := player.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tr.AddToReport(&rep)
	t.Logf("vod: played %.1fs stalls %d pushed %d media requests %d errors %d", rep.PlayedS, rep.StallCount, rep.Pushed, rep.MediaRequests, rep.Errors)
	if rep.EndReason != "ended" || rep.PlayedS < 7.9 || rep.Pushed == 0 {
		t.Errorf("report: end %s played %.2f pushed %d", rep.EndReason, rep.PlayedS, rep.Pushed)
	}
}

func TestPlayerURLs(t *testing.T) {
	for _, bad := range []string{"http://h/ws/x", "ws://h/live/x", "ws://h/ws/a/b", "ws://h/ws/vod/a/b", "ws://h/ws/x?maxBitrate=fast"} {
		u, _ := url.Parse(bad)
		if _, err := NewPlayerTransport(u, PlayerOptions{}); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	u, _ := url.Parse("https://h:1/vod/clip/manifest.mpd") // as the lab runner passes
	tr, err := NewPlayerTransport(u, PlayerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.wsURL.String() != "wss://h:1/ws/vod/clip" {
		t.Errorf("push URL %s", tr.wsURL)
	}
	u, _ = url.Parse("ws://h/ws/live?policy=buffer&maxBitrate=500000")
	tl, err := NewPlayerTransport(u, PlayerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	if tl.opts.Policy != "buffer" || tl.opts.MaxBitrate != 500000 || tl.manifest != "http://h/live/live/manifest.mpd" {
		t.Errorf("query: %+v, manifest %s", tl.opts, tl.manifest)
	}
	for in, want := range map[string]string{
		"wss://h:1/ws/vod/clip":            "https://h:1/vod/clip/manifest.mpd",
		"wss://h:1/ws/vod/v180/3.m4s":      "https://h:1/vod/clip/v180/3.m4s",
		"https://h:1/time":                 "https://h:1/time",
		"wss://h:1/ws/vod/a64/init.mp4?x=": "https://h:1/vod/clip/a64/init.mp4?x=",
	} {
		if got := tr.httpURL(in); got != want {
			t.Errorf("httpURL(%s) = %s, want %s", in, got, want)
		}
	}
}

func ptr(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
