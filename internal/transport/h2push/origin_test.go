package h2push_test

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/server"
	"github.com/streambed/streambed/internal/source/looplive"
	"github.com/streambed/streambed/internal/testmedia"
	"github.com/streambed/streambed/internal/transport/h2push"
)

// origin is a running Streambed origin with push attached.
type origin struct {
	h2c, h2 string // base URLs: http://127.0.0.1:N (HTTP/1.1 and h2c), https://127.0.0.1:M
	pusher  *h2push.Pusher
	hub     *hub.Hub
	asset   *hub.Asset
	dir     string // the asset folder
	stop    func()
}

// testAsset is the shared test asset: 8 s, 2 s segments, v180p/v360p + audio.
func testAsset(t *testing.T) (*hub.Asset, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "test") // the hub names an asset by its folder
	if err := os.Symlink(testmedia.Asset(t), dir); err != nil {
		t.Fatal(err)
	}
	a, err := hub.OpenAsset(dir)
	if err != nil {
		t.Fatal(err)
	}
	return a, dir
}

// startOrigin serves the test asset on demand as "test" and looped live as "loop",
// with push configured by cfg and rules kept in rulesPath.
func startOrigin(t *testing.T, cfg h2push.Config, rulesPath string) *origin {
	t.Helper()
	a, dir := testAsset(t)
	h := hub.New()
	h.AddAsset(a)
	hctx, stopHub := context.WithCancel(context.Background())
	t.Cleanup(func() { stopHub(); h.Close() })
	if _, err := looplive.AddChannel(hctx, h, a, looplive.ChannelOptions{Name: "loop", DVRWindow: 20 * time.Second, AvailabilityStart: looplive.DefaultAvailabilityStart}); err != nil {
		t.Fatal(err)
	}
	// The same looped in one-frame chunks: its segment in progress is served (and
	// pushed) chunk by chunk.
	if _, err := looplive.AddChannel(hctx, h, a, looplive.ChannelOptions{Name: "ll", ChunkDuration: 40 * time.Millisecond, DVRWindow: 20 * time.Second, AvailabilityStart: looplive.DefaultAvailabilityStart}); err != nil {
		t.Fatal(err)
	}
	scfg := server.DefaultConfig()
	scfg.HTTP, scfg.HTTPS, scfg.DataDir = "127.0.0.1:0", "127.0.0.1:0", t.TempDir()
	cfg.Rules = rulesPath
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() && os.Getenv("H2PUSH_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv := server.New(scfg, h, log, nil)
	p, err := h2push.Attach(context.Background(), srv, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, ls); close(done) }()
	o := &origin{
		h2c: "http://" + ls.HTTP.Addr().(*net.TCPAddr).String(), h2: "https://" + ls.HTTPS.Addr().(*net.TCPAddr).String(),
		pusher: p, hub: h, asset: a, dir: dir,
	}
	o.stop = func() { cancel(); <-done }
	t.Cleanup(func() { o.stop() })
	waitTLS(t, o.h2)
	return o
}

// waitTLS waits until the TLS listener answers (Serve generates its certificate first).
func waitTLS(t *testing.T, base string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 2 * time.Second}
	for i := 0; i < 100; i++ {
		resp, err := hc.Get(base + "/time")
		if err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never answered", base)
}

// segmentFile returns the bytes an asset path should serve.
func (o *origin) file(t *testing.T, path string) []byte {
	t.Helper()
	res := layout.Parse(path)
	switch res.Kind {
	case layout.KindInit:
		b, err := o.asset.Init(res.Track)
		if err != nil {
			t.Fatal(err)
		}
		return b
	case layout.KindSegment:
		_, p, err := o.asset.SegmentFile(res.Track, res.Number)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	case layout.KindManifest:
		b, err := os.ReadFile(filepath.Join(o.dir, res.File))
		if err != nil {
			return nil // the origin renders it; not compared
		}
		return b
	}
	return nil
}

func pathOf(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return u
	}
	rest := u[i+3:]
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		return rest[j:]
	}
	return "/"
}

func insecureTLS() *tls.Config { return &tls.Config{InsecureSkipVerify: true} }
