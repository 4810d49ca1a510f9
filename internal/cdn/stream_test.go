package cdn

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/media"
)

// A low-latency DASH segment still being made reaches the client through the cache
// chunk by chunk: the first bytes arrive while the origin has not completed it, and
// the whole body is the complete segment.
func TestSegmentInProgressStreamsThrough(t *testing.T) {
	t.Parallel()
	org := startOrigin(t)
	video, _ := org.tracks(t)
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			base := startCache(t, Options{Kind: k, Upstreams: upstreamsOf(t, org.URL)})
			// The next segment, not begun: the origin holds the request until its
			// first chunk, then streams the other three over 1.5 s.
			_, inProgress := org.liveEdge()
			n := inProgress + 1
			path := layout.Segment(true, "loop", video, n)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			var body bytes.Buffer
			buf := make([]byte, 64<<10)
			firstWhileIncomplete, reads := false, 0
			for {
				m, err := resp.Body.Read(buf)
				if m > 0 {
					if body.Len() == 0 {
						_, serr := org.Channel.Segment(video, n, time.Now())
						firstWhileIncomplete = errors.Is(serr, media.ErrNotYet)
					}
					body.Write(buf[:m])
					reads++
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("after %d bytes: %v", body.Len(), err)
				}
			}
			if !firstWhileIncomplete {
				t.Errorf("the first bytes arrived only after the origin had completed segment %d: the cache buffered it whole", n)
			}
			_, _, want := mustGet(t, org.URL+path)
			if !bytes.Equal(body.Bytes(), want) {
				t.Errorf("streamed body: %d bytes, the complete segment has %d", body.Len(), len(want))
			}
			t.Logf("%d bytes in %d reads", body.Len(), reads)
		})
	}
}

// An upstream response that breaks off part-way (the origin aborts a segment it cannot
// finish) is not cached: the client sees the break, and the next request goes
// upstream again instead of getting the part as the segment.
func TestAbortedResponseIsNotCached(t *testing.T) {
	cnt := &counter{}
	up := httptest.NewServer(cnt.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/time" {
			w.Header().Set("Cache-Control", "no-store")
			return
		}
		w.Header().Set("Content-Type", "video/mp4")
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(bytes.Repeat([]byte("m"), 1000))
		http.NewResponseController(w).Flush()
		time.Sleep(100 * time.Millisecond)
		panic(http.ErrAbortHandler)
	})))
	defer up.Close()
	up.Config.ErrorLog = nil
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			base := startCache(t, Options{Kind: k, Upstreams: upstreamsOf(t, up.URL)})
			path := "/live/x/v/" + string(k) + ".m4s"
			for i := range 2 {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, _, b, err := get(ctx, http.DefaultClient, base+path)
				cancel()
				if err == nil {
					t.Errorf("request %d: a whole %d-byte body, want the break passed on", i, len(b))
				}
			}
			if n := cnt.Of(path); n < 2 {
				t.Errorf("the upstream got %d requests for %s, want 2: the part was cached", n, path)
			}
		})
	}
}
