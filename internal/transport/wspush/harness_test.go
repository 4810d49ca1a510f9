package wspush

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/source/looplive"
	"github.com/streambed/streambed/internal/testmedia"
)

// origin is a hub with the test asset on demand ("test") and looped live ("live",
// one-frame chunks), served by a wspush Handler over httptest.
type origin struct {
	hub     *hub.Hub
	channel *hub.Channel
	asset   *hub.Asset
	handler *Handler
	srv     *httptest.Server
	cancel  context.CancelFunc

	mu    sync.Mutex
	ended []SessionStats
}

func (o *origin) wsURL(path string) string {
	return "ws" + strings.TrimPrefix(o.srv.URL, "http") + path
}

func (o *origin) stats() []SessionStats {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]SessionStats(nil), o.ended...)
}

// newOrigin starts an origin; chunk is the live chunk duration (0: one per segment).
func newOrigin(t testing.TB, chunk time.Duration, opts Options) *origin {
	return newOriginWith(t, testmedia.Asset(t), chunk, opts)
}

// newOriginWith serves the packaged asset in folder src.
func newOriginWith(t testing.TB, src string, chunk time.Duration, opts Options) *origin {
	t.Helper()
	// Assets are named after their folder: serve the test asset as "test".
	dir := filepath.Join(t.TempDir(), "test")
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
	c, err := looplive.AddChannel(ctx, h, a, looplive.ChannelOptions{Name: "live", ChunkDuration: chunk, DVRWindow: 20 * time.Second, AvailabilityStart: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	o := &origin{hub: h, channel: c, asset: a, cancel: cancel}
	opts.OnSessionEnd = func(s SessionStats) {
		o.mu.Lock()
		o.ended = append(o.ended, s)
		o.mu.Unlock()
	}
	o.handler, err = NewHandler(ctx, h, opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /ws/{channel}", o.handler)
	mux.Handle("GET /ws/vod/{asset}", o.handler)
	o.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		cancel()
		o.srv.CloseClientConnections()
		o.srv.Close()
		h.Close()
	})
	return o
}

// waitFor polls cond for up to d.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// closeCode reads until the session ends and returns its close error.
func readUntilClose(t testing.TB, c *Client, d time.Duration) (*CloseError, []Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var msgs []Message
	for {
		m, err := c.Next(ctx)
		if err != nil {
			var ce *CloseError
			if errors.As(err, &ce) {
				return ce, msgs
			}
			t.Fatalf("read: %v (after %d messages)", err, len(msgs))
		}
		msgs = append(msgs, m)
	}
}
