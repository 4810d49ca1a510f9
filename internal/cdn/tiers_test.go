package cdn

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/transport/wspush"
)

// gatedOrigin answers /m with a manifest-like object that lives 2 s, with the headers
// Streambed gives live manifests (Cache-Control: public and an absolute Expires),
// and a body that says when it was made ("v1 1700000000123"). It can be made to hold
// its answers until released, as a slow origin would.
type gatedOrigin struct {
	*httptest.Server
	version atomic.Int64
	mu      sync.Mutex
	gate    chan struct{} // non-nil: requests wait for it to close
}

const life = 2 * time.Second

func newGatedOrigin(t *testing.T) *gatedOrigin {
	g := &gatedOrigin{}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/time" {
			w.Header().Set("Cache-Control", "no-store")
			return
		}
		g.mu.Lock()
		gate := g.gate
		g.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		now := time.Now()
		w.Header().Set("Cache-Control", "public")
		w.Header().Set("Expires", now.Add(life).Truncate(time.Second).UTC().Format(http.TimeFormat))
		fmt.Fprintf(w, "v%d %d", g.version.Add(1), now.UnixMilli())
	}))
	t.Cleanup(g.Close)
	return g
}

func (g *gatedOrigin) hold() {
	g.mu.Lock()
	g.gate = make(chan struct{})
	g.mu.Unlock()
}

func (g *gatedOrigin) release() {
	g.mu.Lock()
	if g.gate != nil {
		close(g.gate)
		g.gate = nil
	}
	g.mu.Unlock()
}

// The trap one tier down: a shield answers an expired object from its stale copy
// while it refreshes it; an edge that kept that answer for a whole max-age more
// (nginx sends no Age header, so the edge cannot know the copy's age) would serve it
// past its life, and so would an edge given a fresh copy the shield had held for most
// of its life. With the origin's absolute Expires and the shields marking stale
// answers not cacheable, no edge hit is older than the object's life (plus the one
// second HTTP dates round to), however the tiers are stacked.
func TestStaleAnswerNotCachedOneTierDown(t *testing.T) {
	t.Parallel()
	for _, shieldKind := range kinds {
		for _, edgeKind := range kinds {
			t.Run(string(shieldKind)+"-shield/"+string(edgeKind)+"-edge", func(t *testing.T) {
				g := newGatedOrigin(t)
				defer g.release()
				shield := startCache(t, Options{Kind: shieldKind, Role: Shield, Upstreams: upstreamsOf(t, g.URL)})
				edge := startCache(t, Options{Kind: edgeKind, Role: Edge, Upstreams: upstreamsOf(t, shield)})
				client := &http.Client{Timeout: 10 * time.Second}
				if _, _, b, err := contextGet(client, edge+"/m"); err != nil || !strings.HasPrefix(string(b), "v1 ") {
					t.Fatalf("first answer %q, %v", b, err)
				}
				// The origin is held for 4 s: the copies expire, and the shield
				// answers from its stale copy while its refresh waits; then it
				// answers again, and the edge is watched for 4 s more.
				g.hold()
				release := time.AfterFunc(4*time.Second, g.release)
				defer release.Stop()
				stale, hits := 0, 0
				var seen []string
				for end := time.Now().Add(8 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
					sent := time.Now()
					_, h, b, err := contextGet(client, edge+"/m")
					if err != nil {
						seen = append(seen, "error") // a request held behind the origin
						continue
					}
					var v, made int64
					if _, err := fmt.Sscanf(string(b), "v%d %d", &v, &made); err != nil {
						t.Fatalf("answer %q", b)
					}
					e, s := h.Get("X-Cache-edge"), h.Get("X-Cache-shield")
					age := sent.Sub(time.UnixMilli(made))
					seen = append(seen, fmt.Sprintf("v%d %s/%s %.1fs", v, e, s, age.Seconds()))
					if e == "STALE" || e == "UPDATING" || s == "STALE" || s == "UPDATING" {
						stale++
					}
					if e == "HIT" {
						hits++
						if age > life+time.Second {
							t.Fatalf("the edge answered a hit %s after the origin made it; its life is %s: answers %v", age.Round(time.Millisecond), life, seen)
						}
					}
				}
				if stale == 0 || hits == 0 {
					t.Fatalf("%d stale answers and %d edge hits: the test saw no stale-while-revalidate; answers %v", stale, hits, seen)
				}
				t.Logf("answers: %v", seen)
			})
		}
	}
}

// WebSocket push through the cache: the upgrade reaches the origin's /ws route and
// media messages come back.
func TestWebSocketThroughCache(t *testing.T) {
	org := startOrigin(t)
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			base := startCache(t, Options{Kind: k, Upstreams: upstreamsOf(t, org.URL)})
			before := org.Count.Of("/ws/loop")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := wspush.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws/loop", wspush.DialOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if len(c.Ready.Tracks) == 0 {
				t.Fatalf("ready lists no tracks: %+v", c.Ready)
			}
			media := 0
			for media < 3 {
				m, err := c.Next(ctx)
				if err != nil {
					t.Fatalf("after %d media messages: %v", media, err)
				}
				if m.Frame != nil {
					media++
				}
			}
			if n := org.Count.Of("/ws/loop") - before; n != 1 {
				t.Errorf("the origin saw %d /ws/loop requests, want 1", n)
			}
		})
	}
}

// HLS blocking playlist reloads: the query string is part of the cache key, so
// requests held for different media sequence numbers are not collapsed into one
// answer, while identical held requests are.
func TestBlockingReloadsKeyedByQuery(t *testing.T) {
	var mu sync.Mutex
	ready := map[string]chan struct{}{"5": make(chan struct{}), "6": make(chan struct{})}
	cnt := &counter{}
	up := httptest.NewServer(cnt.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/time" {
			return
		}
		msn := r.URL.Query().Get("_HLS_msn")
		mu.Lock()
		ch := ready[msn]
		mu.Unlock()
		if ch != nil {
			<-ch // held until that segment exists
		}
		w.Header().Set("Cache-Control", "public, max-age=1")
		fmt.Fprintf(w, "#EXTM3U\n#msn=%s\n", msn)
	})))
	defer up.Close()
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			base := startCache(t, Options{Kind: k, Upstreams: upstreamsOf(t, up.URL)})
			path := "/live/c/v/" + string(k) + "/playlist.m3u8"
			type answer struct{ msn, body string }
			answers := make(chan answer, 40)
			var wg sync.WaitGroup
			for _, msn := range []string{"5", "6"} {
				for range 10 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, _, b, err := contextGet(http.DefaultClient, base+path+"?_HLS_msn="+msn+"&_HLS_part=0")
						if err != nil {
							b = []byte(err.Error())
						}
						answers <- answer{msn, string(b)}
					}()
				}
			}
			// An unblocked request is answered at once, whatever is held.
			if _, _, b, err := contextGet(http.DefaultClient, base+path); err != nil || !strings.Contains(string(b), "#msn=\n") {
				t.Errorf("plain reload: %q, %v", b, err)
			}
			time.Sleep(300 * time.Millisecond) // let the held requests queue up
			close(ready["5"])
			time.Sleep(300 * time.Millisecond)
			close(ready["6"])
			wg.Wait()
			close(answers)
			for a := range answers {
				if want := "#msn=" + a.msn + "\n"; !strings.Contains(a.body, want) {
					t.Errorf("request for _HLS_msn=%s got %q", a.msn, a.body)
				}
			}
			for _, msn := range []string{"5", "6"} {
				if n := cnt.Of(path + "?_HLS_msn=" + msn + "&_HLS_part=0"); n != 1 {
					t.Errorf("_HLS_msn=%s: %d origin requests for 10 identical held requests, want 1", msn, n)
				}
			}
			mu.Lock()
			ready = map[string]chan struct{}{"5": make(chan struct{}), "6": make(chan struct{})}
			mu.Unlock()
		})
	}
}

// Live ingest through the cache: an encoder's long chunked POST reaches the origin
// as it is sent (not buffered whole first), and nothing of /ingest/ is cached.
func TestIngestPassesThrough(t *testing.T) {
	got := make(chan string, 16)
	cnt := &counter{}
	up := httptest.NewServer(cnt.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/time" {
			return
		}
		buf := make([]byte, 64)
		for {
			n, err := r.Body.Read(buf)
			if n > 0 {
				got <- string(buf[:n])
			}
			if err != nil {
				break
			}
		}
		w.Header().Set("Cache-Control", "public, max-age=60") // even so: never cached
		fmt.Fprint(w, "ok")
	})))
	defer up.Close()
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			base := startCache(t, Options{Kind: k, Upstreams: upstreamsOf(t, up.URL)})
			path := "/ingest/studio/Streams(v." + string(k) + ".cmfv)"
			pr, pw := io.Pipe()
			req, _ := http.NewRequest(http.MethodPost, base+path, pr)
			req.ContentLength = -1 // chunked, as an encoder sends
			done := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				done <- err
			}()
			if _, err := pw.Write([]byte("first-chunk")); err != nil {
				t.Fatal(err)
			}
			select {
			case s := <-got:
				if s != "first-chunk" {
					t.Errorf("the origin got %q first", s)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the first chunk did not reach the origin while the POST went on: the cache buffers ingest")
			}
			pw.Close()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if st, _, _, err := contextGet(http.DefaultClient, base+path); err != nil || st != http.StatusOK {
					t.Fatalf("GET %s: %d %v", path, st, err)
				}
			}
			if n := cnt.Of(path); n != 3 {
				t.Errorf("the origin got %d requests for %s (1 POST + 2 GET), want 3: ingest was cached", n, path)
			}
		})
	}
}
