package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// discardWriter is a ResponseWriter that drops the body, so benchmarks measure the
// origin's work rather than a network.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

func benchServe(b *testing.B, path string) {
	s, _ := testOrigin(&testing.T{})
	h := s.Handler()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h.ServeHTTP(&discardWriter{h: http.Header{}}, req)
	}
}

func BenchmarkServeVODSegment(b *testing.B)  { benchServe(b, "/vod/clip/v1/1.m4s") }
func BenchmarkServeLiveSegment(b *testing.B) { benchServe(b, "/live/ch/v1/49.m4s") }
func BenchmarkServeLiveMPDCached(b *testing.B) {
	benchServe(b, "/live/ch/manifest.mpd")
}

// BenchmarkRenderLiveMPD renders a dynamic MPD from scratch each time (the cost paid
// once per segment duration per manifest URL).
func BenchmarkRenderLiveMPD(b *testing.B) {
	s, _ := testOrigin(&testing.T{})
	c, _ := s.hub.Channel("ch")
	req := httptest.NewRequest(http.MethodGet, "/live/ch/manifest-timeline.mpd", nil)
	now := time.Unix(100, 0)
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
