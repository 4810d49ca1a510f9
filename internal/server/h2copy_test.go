package server

import (
	"bytes"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/streambed/streambed/internal/hub"
)

// A segment file larger than several copy pieces reaches an HTTP/2 client whole,
// with its Content-Length, and is counted once in the response bytes.
func TestH2SegmentFileCopiedWhole(t *testing.T) {
	root := t.TempDir()
	fakeAsset(t, root, "clip")
	want := make([]byte, 3*h2CopyBuffer+12345) // several pieces and a short last one
	_, _ = rand.Read(want)
	must(t, os.WriteFile(filepath.Join(root, "clip", "v1", "1.m4s"), want, 0o644))
	h := hub.New()
	assets, errs := hub.OpenAssets(root)
	if len(errs) > 0 || len(assets) != 1 {
		t.Fatalf("OpenAssets: %v %v", assets, errs)
	}
	h.AddAsset(assets[0])
	s := New(DefaultConfig(), h, slog.New(slog.DiscardHandler), nil)
	ts := httptest.NewUnstartedServer(s.Handler())
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()
	for range 3 { // the pooled buffer is reused
		resp, err := ts.Client().Get(ts.URL + "/vod/clip/v1/1.m4s")
		must(t, err)
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		must(t, err)
		if resp.ProtoMajor != 2 || resp.StatusCode != 200 || resp.ContentLength != int64(len(want)) || !bytes.Equal(got, want) {
			t.Fatalf("%s %d, Content-Length %d, %d bytes (equal: %v); want HTTP/2 200 with the %d bytes of the file",
				resp.Proto, resp.StatusCode, resp.ContentLength, len(got), bytes.Equal(got, want), len(want))
		}
	}
	fams, err := s.metrics.reg.Gather()
	must(t, err)
	counted := false
	for _, f := range fams {
		if f.GetName() != "streambed_http_response_bytes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == "segment" {
				counted = true
				if m.GetCounter().GetValue() != float64(3*len(want)) {
					t.Errorf("segment bytes counted %v, want %d", m.GetCounter().GetValue(), 3*len(want))
				}
			}
		}
	}
	if !counted {
		t.Error("no segment response bytes in the metrics")
	}
}
