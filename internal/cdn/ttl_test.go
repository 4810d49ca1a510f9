package cdn

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/layout"
)

// A live manifest is cached for its max-age (a fraction of a segment, as the origin
// says): a run of requests makes about one origin request per max-age, and once it
// has expired a request brings a fresh one from the origin.
func TestLiveManifestCachedForAFractionOfASegment(t *testing.T) {
	t.Parallel()
	org := startOrigin(t)
	const path = "/live/loop/manifest.mpd"
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			base := startCache(t, Options{Kind: k, Upstreams: upstreamsOf(t, org.URL)})
			before := org.Count.Of(path)
			start := time.Now()
			hits := 0
			for range 30 {
				st, h, _ := mustGet(t, base+path)
				if st != http.StatusOK {
					t.Fatalf("status %d", st)
				}
				if h.Get("X-Cache-shield") == "HIT" {
					hits++
				}
				cc, exp := h.Get("Cache-Control"), h.Get("Expires")
				if e, err := http.ParseTime(exp); cc != "no-cache" && (cc != "public" || err != nil || e.After(time.Now().Add(time.Second))) {
					t.Errorf("Cache-Control %q, Expires %q: want the origin's public and Expires at most 1 s ahead (half of the 2 s segment), or no-cache on a stale copy", cc, exp)
				}
			}
			elapsed := time.Since(start)
			n := org.Count.Of(path) - before
			// Each expiry (at most 1 s of life, in whole seconds) costs one request.
			if limit := int(elapsed/time.Second) + 2; n < 1 || n > limit {
				t.Errorf("%d origin requests for 30 requests in %s, want 1..%d", n, elapsed.Round(time.Millisecond), limit)
			}
			if hits == 0 {
				t.Error("no request was a cache hit")
			}
			// Past its life, a request brings the manifest anew from the origin
			// (answered from the stale copy while a background request refreshes it).
			time.Sleep(2500 * time.Millisecond)
			seen := org.Count.Of(path)
			mustGet(t, base+path)
			deadline := time.Now().Add(10 * time.Second)
			for org.Count.Of(path) == seen {
				if time.Now().After(deadline) {
					t.Fatal("an expired manifest was not fetched again")
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// A 404 for a segment that is not available yet is not cached: every request for it
// reaches the origin until it exists, and the first 200 is then cached.
func TestFutureSegment404NotCached(t *testing.T) {
	t.Parallel()
	org := startOrigin(t)
	video, _ := org.tracks(t)
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			base := startCache(t, Options{Kind: k, Upstreams: upstreamsOf(t, org.URL)})
			_, inProgress := org.liveEdge()
			path := layout.Segment(true, "loop", video, inProgress+3)
			notYet := 0
			for range 3 {
				st, h, _ := mustGet(t, base+path)
				if st != http.StatusNotFound {
					t.Fatalf("segment %d ahead of the live edge: status %d, want 404", inProgress+3, st)
				}
				if cc := h.Get("Cache-Control"); cc != "no-cache" {
					t.Errorf("404 of a future segment: Cache-Control %q, want no-cache", cc)
				}
				notYet++
			}
			if n := org.Count.Of(path); n != notYet {
				t.Errorf("%d 404s through the cache, %d origin requests: a 404 was cached", notYet, n)
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				st, _, _ := mustGet(t, base+path)
				if st == http.StatusOK {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("segment %s never came through the cache (last status %d)", path, st)
				}
				time.Sleep(200 * time.Millisecond)
			}
			seen := org.Count.Of(path)
			st, h, _ := mustGet(t, base+path)
			if st != http.StatusOK || h.Get("X-Cache-shield") != "HIT" || org.Count.Of(path) != seen {
				t.Errorf("after the first 200: status %d, X-Cache %q, origin requests %d → %d; want a cached 200",
					st, h.Get("X-Cache-shield"), seen, org.Count.Of(path))
			}
		})
	}
}

// contextGet is get with its own 30 s deadline.
func contextGet(client *http.Client, url string) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return get(ctx, client, url)
}
