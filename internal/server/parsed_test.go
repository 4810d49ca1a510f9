package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/layout"
)

// TestHandlerChainCarriesTheParsedPath: a middleware (as h2push is) finds its
// request's path parsed on the writer it is handed, on the lean path and on net/http
// alike, so it need not parse it again; and layout.ParseFor there gives Parse's answer.
func TestHandlerChainCarriesTheParsedPath(t *testing.T) {
	s, _ := testOrigin(t)
	var mu sync.Mutex
	seen := map[string]bool{} // path → carried and right
	s.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, ok := w.(layout.ParsedCarrier)
			right := ok && c.ParsedPath().Path == r.URL.Path && c.ParsedPath().Res == layout.Parse(r.URL.Path) &&
				layout.ParseFor(w, r.URL.Path) == layout.Parse(r.URL.Path)
			mu.Lock()
			seen[r.Method+" "+r.URL.Path] = right
			mu.Unlock()
			next.ServeHTTP(w, r)
		})
	})
	addr, l := leanOrigin(t, s, 10*time.Second)
	for _, raw := range []string{
		"GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\n\r\n",     // lean
		"GET /vod/clip/v1/init.mp4 HTTP/1.1\r\nHost: a\r\n\r\n",  // lean
		"GET /vod/clip/manifest.mpd HTTP/1.1\r\nHost: a\r\n\r\n", // lean
		"HEAD /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\n\r\n",    // net/http
		"GET /api/streams HTTP/1.1\r\nHost: a\r\n\r\n",           // net/http
	} {
		resp, _ := exchange(t, addr, raw)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%q: status %d", raw, resp.StatusCode)
		}
	}
	if l.served.Load() < 3 || l.handedOff.Load() < 2 {
		t.Errorf("lean answers %d, hand-offs %d: want the first three lean, the others handed to net/http", l.served.Load(), l.handedOff.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, k := range []string{"GET /vod/clip/v1/1.m4s", "GET /vod/clip/v1/init.mp4", "GET /vod/clip/manifest.mpd", "HEAD /vod/clip/v1/1.m4s", "GET /api/streams"} {
		if right, ok := seen[k]; !ok || !right {
			t.Errorf("%s: reached the middleware %v, with its path parsed on the writer %v", k, ok, right)
		}
	}
}

// TestRewrittenPathIsParsedAgain: a middleware that rewrites the request's path in
// place makes ParseFor parse the new path (the carried one is the old), and the
// metrics count the request under what was answered, as before the path was carried.
func TestRewrittenPathIsParsedAgain(t *testing.T) {
	s, _ := testOrigin(t)
	s.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/old-name" {
				r.URL.Path = "/vod/clip/v1/1.m4s"
				if got := layout.ParseFor(w, r.URL.Path); got.Kind != layout.KindSegment || got.Number != 1 {
					t.Errorf("after the rewrite ParseFor = %+v, want segment 1", got)
				}
			}
			next.ServeHTTP(w, r)
		})
	})
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/old-name", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	if got := requestCount(t, s, "segment", "200"); got != 1 {
		t.Errorf("segment 200s counted: %v, want 1 (the rewritten path)", got)
	}
}

// requestCount is the origin's streambed_http_requests_total of kind and status.
func requestCount(t *testing.T, s *Server, kind, status string) float64 {
	t.Helper()
	fams, err := s.metrics.reg.Gather()
	must(t, err)
	for _, f := range fams {
		if f.GetName() != "streambed_http_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == kind && labels["status"] == status {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestLeanPathDateIsCurrent: the lean path's Date header comes from the event loop's
// batch time (one clock read per batch of events), which must be the time of the
// batch that carried the request, not of an earlier one: each answer's Date lies
// between its request's sending (to the second) and its arrival, also for a request
// on the same connection more than a second after the first.
func TestLeanPathDateIsCurrent(t *testing.T) {
	s, _ := testOrigin(t)
	addr, _ := leanOrigin(t, s, 10*time.Second)
	c, err := net.Dial("tcp", addr)
	must(t, err)
	defer c.Close()
	br := bufio.NewReader(c)
	for i := range 2 {
		if i > 0 {
			time.Sleep(1100 * time.Millisecond) // the connection waits in the loop across a second boundary
		}
		before := time.Now().Truncate(time.Second)
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, err := io.WriteString(c, "GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\n\r\n")
		must(t, err)
		resp, err := http.ReadResponse(br, nil)
		must(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		after := time.Now()
		date, err := http.ParseTime(resp.Header.Get("Date"))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d, Date %q: %v", i, resp.StatusCode, resp.Header.Get("Date"), err)
		}
		if date.Before(before) || date.After(after) {
			t.Errorf("request %d: Date %v outside [%v, %v]", i, date, before, after)
		}
	}
}
