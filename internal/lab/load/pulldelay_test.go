package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPullDelay: with PullDelay, a pull client asks for each segment that was not
// yet out when it started no earlier than the segment's availability plus the
// delay (a lower bound only: a loaded machine may make it later, never earlier).
func TestPullDelay(t *testing.T) {
	addr := origin(t)
	up, _ := url.Parse("http://" + addr)
	rp := httputil.NewSingleHostReverseProxy(up)
	var mu sync.Mutex
	asked := map[string]time.Time{} // segment path → first request
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".m4s") {
			mu.Lock()
			if _, ok := asked[r.URL.Path]; !ok {
				asked[r.URL.Path] = time.Now()
			}
			mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	ctx := context.Background()
	target, err := Resolve(ctx, proxy.URL+"/live/live/manifest.mpd", []string{"v180"}, false)
	if err != nil {
		t.Fatal(err)
	}
	const delay = 700 * time.Millisecond
	began := time.Now()
	res, err := Run(ctx, Options{Transport: HTTP1, Clients: 1, Duration: 5 * time.Second, Ramp: time.Millisecond, Target: target, PullDelay: delay})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 0 || res.Chunks < 2 {
		t.Fatalf("failed %d (%v), %d segments", res.Failed, res.Errors, res.Chunks)
	}
	// The segments' availability, from the index the client used.
	ix := target.Reps[0].Index
	first, ok := ix.Last(began.Add(-time.Minute))
	if !ok {
		t.Fatal("no segment in the index")
	}
	avail := map[string]time.Time{}
	for s := first; len(avail) < 60; {
		u, _ := url.Parse(s.URL)
		avail[u.Path] = s.AvailableAt
		if s, ok = ix.Next(s.End()); !ok {
			break
		}
	}
	late := 0
	for path, at := range asked {
		a, known := avail[path]
		if !known {
			t.Fatalf("request for %s, not in the index", path)
		}
		if !a.After(began) {
			continue // out before the client started: asked at once
		}
		late++
		if at.Before(a.Add(delay)) {
			t.Errorf("%s asked %v after its availability, want at least %v", path, at.Sub(a), delay)
		}
	}
	if late == 0 {
		t.Fatal("no segment became available during the run")
	}
}
