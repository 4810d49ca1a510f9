package cdn

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/server"
	"github.com/streambed/streambed/internal/source/looplive"
	"github.com/streambed/streambed/internal/testmedia"
	"github.com/streambed/streambed/internal/transport/wspush"
)

// requireProgram skips a test whose cache program is not installed — except under
// CI=true, where `make test` has installed it (TEST_DEPS) and its absence is a failure.
func requireProgram(t *testing.T, k Kind) {
	t.Helper()
	if _, err := Binary(k); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v; CI=true requires it (make test-deps installs it)", err)
		}
		t.Skipf("skipped: %v (make test-deps installs it)", err)
	}
}

// freeAddr is a loopback address with a port nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startCache writes a configuration with o (Listen and Dir filled in), checks it with
// the program, runs it and waits until it accepts connections. It returns the
// cache's base URL; the cache stops when the test ends.
func startCache(t *testing.T, o Options) string {
	t.Helper()
	requireProgram(t, o.Kind)
	o.Listen = freeAddr(t)
	o.Dir = filepath.Join(t.TempDir(), string(o.Kind))
	p, err := Write(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := p.Check(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	log := &lockedBuffer{}
	go func() { done <- p.Run(ctx, log) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: %v", o.Kind, err)
		}
		if t.Failed() {
			for _, f := range p.Logs {
				b, _ := os.ReadFile(f)
				t.Logf("%s:\n%s", f, tail(b, 4000))
			}
			t.Logf("%s output:\n%s", o.Kind, tail(log.Bytes(), 4000))
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", o.Listen, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-done:
			t.Fatalf("%s stopped before serving: %v\n%s", o.Kind, err, log.Bytes())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not accept connections on %s after 30 s", o.Kind, o.Listen)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "http://" + o.Listen
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.b...)
}

// counter counts the requests an upstream received and the body bytes it sent, per
// request URI.
type counter struct {
	mu    sync.Mutex
	n     map[string]int
	bytes map[string]int64
	codes map[string]map[int]int // per URI: responses by status
}

func (c *counter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uri := r.URL.RequestURI()
		c.mu.Lock()
		if c.n == nil {
			c.n, c.bytes = map[string]int{}, map[string]int64{}
		}
		c.n[uri]++
		c.mu.Unlock()
		cw := &countingWriter{ResponseWriter: w}
		defer func() {
			c.mu.Lock()
			c.bytes[uri] += cw.n
			if c.codes == nil {
				c.codes = map[string]map[int]int{}
			}
			if c.codes[uri] == nil {
				c.codes[uri] = map[int]int{}
			}
			c.codes[uri][cw.statusCode()]++
			c.mu.Unlock()
		}()
		h.ServeHTTP(cw, r)
	})
}

// countingWriter counts body bytes; Unwrap keeps Flush and Hijack (WebSocket) working
// through http.ResponseController.
type countingWriter struct {
	http.ResponseWriter
	n    int64
	code int
}

func (w *countingWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// statusCode is the response's status: 200 when the handler wrote without one.
func (w *countingWriter) statusCode() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

func (w *countingWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Snapshot is a copy of the counts and bytes per URI.
func (c *counter) Snapshot() (map[string]int, map[string]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, b := map[string]int{}, map[string]int64{}
	for k, v := range c.n {
		n[k] = v
	}
	for k, v := range c.bytes {
		b[k] = v
	}
	return n, b
}

// Codes is a copy of the responses by status per URI.
func (c *counter) Codes() map[string]map[int]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]map[int]int{}
	for u, m := range c.codes {
		out[u] = map[int]int{}
		for k, v := range m {
			out[u][k] = v
		}
	}
	return out
}

// Of is the number of requests for uri.
func (c *counter) Of(uri string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[uri]
}

// Total is the number of requests, leaving out the caches' health probes (/time).
func (c *counter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.n {
		if k != "/time" {
			n += v
		}
	}
	return n
}

// origin is a Streambed origin serving the test asset looped as live channel "loop"
// (2 s segments in 500 ms chunks) with WebSocket push, behind a request counter.
type origin struct {
	URL     string
	Count   *counter
	Channel *hub.Channel
	Asset   *hub.Asset
	stop    func()
	once    sync.Once
}

// Kill closes the origin's listener and every connection at once, as a crash would.
func (o *origin) Kill() { o.once.Do(o.stop) }

func startOrigin(t *testing.T) *origin {
	t.Helper()
	a, err := hub.OpenAsset(testmedia.Asset(t))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New()
	h.AddAsset(a)
	ctx, cancel := context.WithCancel(context.Background())
	c, err := looplive.AddChannel(ctx, h, a, looplive.ChannelOptions{Name: "loop", ChunkDuration: 500 * time.Millisecond,
		DVRWindow: 30 * time.Second, AvailabilityStart: looplive.DefaultAvailabilityStart})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.HTTP, cfg.HTTPS, cfg.DataDir = "127.0.0.1:0", "", t.TempDir()
	srv := server.New(cfg, h, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if _, err := wspush.Attach(ctx, srv, wspush.Config{Policy: "fixed"}); err != nil {
		cancel()
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	o := &origin{URL: "http://" + l.Addr().String(), Count: &counter{}, Channel: c, Asset: a}
	hs := &http.Server{Handler: o.Count.wrap(srv.Handler()), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	served := make(chan struct{})
	go func() { _ = hs.Serve(l); close(served) }()
	o.stop = func() { _ = hs.Close(); <-served }
	t.Cleanup(func() { o.Kill(); cancel(); h.Close() })
	return o
}

// tracks are the channel's top video rung and its audio track.
func (o *origin) tracks(t *testing.T) (video, audio string) {
	t.Helper()
	for _, tr := range o.Asset.Info().Tracks {
		switch tr.Kind {
		case media.Video:
			video = tr.ID // the last (top) rung
		case media.Audio:
			if audio == "" {
				audio = tr.ID
			}
		}
	}
	if video == "" || audio == "" {
		t.Fatalf("test asset has tracks %v", o.Asset.Info().Tracks)
	}
	return video, audio
}

// liveEdge is the number of the newest complete segment and the one in progress.
func (o *origin) liveEdge() (complete, inProgress uint64) {
	tl := o.Channel.Timeline()
	n := uint64(time.Since(tl.AvailabilityStart) / tl.SegmentDuration)
	return n - 1, n
}

// get fetches url and returns status, headers and body; a transport error or a
// body that ends early is returned as err.
func get(ctx context.Context, client *http.Client, url string) (int, http.Header, []byte, error) {
	return getAs(ctx, client, url, "")
}

// getAs is get with the Host header set to host ("" leaves it to the URL).
func getAs(ctx context.Context, client *http.Client, url, host string) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, resp.Header, b, fmt.Errorf("GET %s: body: %w", url, err)
	}
	return resp.StatusCode, resp.Header, b, nil
}

func mustGet(t *testing.T, url string) (int, http.Header, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, h, b, err := get(ctx, http.DefaultClient, url)
	if err != nil {
		t.Fatal(err)
	}
	return st, h, b
}

var kinds = []Kind{Nginx, Varnish}
