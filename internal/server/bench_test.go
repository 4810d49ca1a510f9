package server

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// discardWriter is a ResponseWriter that drops the body, so benchmarks measure the
// origin's work rather than a network. It keeps the status and counts the bytes so a
// benchmark can tell a served response from an error page.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (d *discardWriter) Header() http.Header { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) {
	if d.status == 0 {
		d.status = http.StatusOK
	}
	d.n += len(b)
	return len(b), nil
}
func (d *discardWriter) WriteHeader(code int) {
	if d.status == 0 {
		d.status = code
	}
}

// benchOrigin is testOrigin for a benchmark. testOrigin takes a *testing.T and fails
// through it; a zero T fails by ending its goroutine, so it runs on its own goroutine
// here and a failure stops the benchmark instead of timing a half-built origin.
func benchOrigin(b *testing.B) *Server {
	b.Helper()
	t := &testing.T{}
	var s *Server
	var ts *httptest.Server
	done := make(chan bool)
	go func() {
		ok := false
		defer func() { done <- ok }()
		s, ts = testOrigin(t)
		ok = true
	}()
	if !<-done || t.Failed() || s == nil {
		b.Fatal("testOrigin failed: the benchmark origin could not be built")
	}
	b.Cleanup(ts.Close)
	return s
}

// benchServe times GETs of path; every response must be 200 with wantBytes of body
// (checked once before timing with a real recorder and on every timed response).
func benchServe(b *testing.B, path string, wantType string) {
	s := benchOrigin(b)
	h := s.Handler()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Body.Len() == 0 || !strings.HasPrefix(rec.Header().Get("Content-Type"), wantType) {
		b.Fatalf("GET %s: status %d, %d bytes, Content-Type %q; want 200, a body, %s", path, rec.Code, rec.Body.Len(), rec.Header().Get("Content-Type"), wantType)
	}
	want := rec.Body.Len()
	bad := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := &discardWriter{h: http.Header{}}
		h.ServeHTTP(w, req)
		if w.status != http.StatusOK || w.n != want {
			bad++
		}
	}
	if bad > 0 {
		b.Fatalf("GET %s: %d responses were not 200 with %d bytes", path, bad, want)
	}
}

func BenchmarkServeVODSegment(b *testing.B)  { benchServe(b, "/vod/clip/v1/1.m4s", "video/") }
func BenchmarkServeLiveSegment(b *testing.B) { benchServe(b, "/live/ch/v1/49.m4s", "video/") }
func BenchmarkServeLiveMPDCached(b *testing.B) {
	benchServe(b, "/live/ch/manifest.mpd", "application/dash+xml")
}

// BenchmarkRenderLiveMPD renders a dynamic MPD from scratch each time (the cost paid
// once per segment duration per manifest URL).
func BenchmarkRenderLiveMPD(b *testing.B) {
	s := benchOrigin(b)
	c, err := s.hub.Channel("ch")
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/live/ch/manifest-timeline.mpd", nil)
	now := time.Unix(100, 0)
	var first bytes.Buffer
	p, err := s.livePresentation(req, c, "manifest-timeline.mpd", now)
	if err != nil {
		b.Fatal(err)
	}
	if err := renderFile(&first, p, "manifest-timeline.mpd", ""); err != nil {
		b.Fatal(err)
	}
	if !bytes.Contains(first.Bytes(), []byte(`type="dynamic"`)) || !bytes.Contains(first.Bytes(), []byte("<SegmentTimeline>")) {
		b.Fatalf("not a dynamic SegmentTimeline MPD:\n%s", first.Bytes())
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := s.livePresentation(req, c, "manifest-timeline.mpd", now)
		if err != nil {
			b.Fatal(err)
		}
		if err := renderFile(io.Discard, p, "manifest-timeline.mpd", ""); err != nil {
			b.Fatal(err)
		}
	}
}

// leanBenchConn starts a lean-path origin for a benchmark (leanOrigin takes a
// *testing.T, so it runs on a goroutine of its own) and dials it; the connection
// closes when the benchmark ends.
func leanBenchConn(b *testing.B) net.Conn {
	s := benchOrigin(b)
	t := &testing.T{}
	var addr string
	done := make(chan bool)
	go func() {
		ok := false
		defer func() { done <- ok }()
		addr, _ = leanOrigin(t, s, 10*time.Second)
		ok = true
	}()
	if !<-done {
		b.Fatal("leanOrigin failed")
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkLeanVODSegment times keep-alive GETs of a VOD segment through the lean
// HTTP/1.1 path on loopback, client included (for -memprofile and -cpuprofile of the
// path; make bench-origin compares it with nginx).
func BenchmarkLeanVODSegment(b *testing.B) {
	c := leanBenchConn(b)
	req := []byte("GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\n\r\n")
	br := bufio.NewReaderSize(c, 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		if n, _ := io.Copy(io.Discard, resp.Body); resp.StatusCode != 200 || n != 800 {
			b.Fatalf("%d, %d bytes", resp.StatusCode, n)
		}
	}
}

// BenchmarkLeanVODSegmentRaw is BenchmarkLeanVODSegment with a client that allocates
// nothing (it reads the answer's known length back), so -benchmem counts the
// server's allocations per request.
func BenchmarkLeanVODSegmentRaw(b *testing.B) {
	c := leanBenchConn(b)
	req := []byte("GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\n\r\n")
	// The first answer's length (head and body) is every answer's: the Date header
	// has a fixed width.
	buf := make([]byte, 64<<10)
	if _, err := c.Write(req); err != nil {
		b.Fatal(err)
	}
	n := readAnswer(b, c, buf, 0)
	if !bytes.HasPrefix(buf, []byte("HTTP/1.1 200 OK\r\n")) {
		b.Fatalf("answer %q", buf[:n])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		readAnswer(b, c, buf, n)
	}
}

// readAnswer reads one answer of n bytes, or (n 0) one whose body is the last 800
// bytes, found by its head's end; it returns the answer's length.
func readAnswer(b *testing.B, c net.Conn, buf []byte, n int) int {
	got := 0
	for {
		k, err := c.Read(buf[got:])
		if err != nil {
			b.Fatal(err)
		}
		got += k
		if n > 0 && got >= n {
			if got != n {
				b.Fatalf("answer of %d bytes, want %d", got, n)
			}
			return n
		}
		if n == 0 {
			if i := bytes.Index(buf[:got], []byte("\r\n\r\n")); i >= 0 && got >= i+4+800 {
				return got
			}
		}
	}
}
