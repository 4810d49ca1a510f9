package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/testmedia"
	"github.com/streambed/streambed/internal/transport/fdsp"
)

// TestPlayFDSP plays the test asset with `play --transport fdsp|fdsp-tcp|fdsp-udp`:
// the endpoint comes from /api/streams, the JSON has the usual keys and FDSP's,
// and --output holds H.264 that FFmpeg decodes frame for frame.
func TestPlayFDSP(t *testing.T) {
	a, err := hub.OpenAsset(testmedia.Asset(t))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New()
	h.AddAsset(a)
	srv, err := fdsp.NewServer(h, "127.0.0.1:0", "127.0.0.1:0", fdsp.Options{Substream: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"streams":[{"name":"asset","live":false,"fdsp":"fdsp://%s/vod/asset"}]}`, srv.Addr())
	}))
	defer api.Close()
	for _, tr := range []string{"fdsp", "fdsp-tcp", "fdsp-udp"} {
		t.Run(tr, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "rx.h264")
			var out, errOut bytes.Buffer
			err := Play(context.Background(), []string{api.URL + "/vod/asset/manifest.mpd", "--transport", tr, "--bp", "auto", "--json", "--output", file}, &out, &errOut)
			if err != nil {
				t.Fatalf("%v\n%s", err, errOut.String())
			}
			var rep map[string]any
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("not one JSON object: %v\n%s", err, out.String())
			}
			for _, k := range []string{"bp", "plr", "rebuffer_ms", "rebuffer_count", "decodable", "startup_delay_ms", "stall_count", "stall_ms", "played_s", "transport", "end_reason", "fdsp"} {
				if _, ok := rep[k]; !ok {
					t.Errorf("key %s missing", k)
				}
			}
			// --repair is on by default: the UDP modes report what it did, all-TCP has nothing to repair.
			if _, ok := rep["fdsp"].(map[string]any)["repair"]; ok != (tr != "fdsp-tcp") {
				t.Errorf("fdsp.repair present %v for %s", ok, tr)
			}
			if v, ok := rep["latency_ms"]; !ok || v != nil {
				t.Errorf("latency_ms %v (present %v): want null on demand", v, ok)
			}
			if samples, _ := rep["samples"].([]any); len(samples) < 5 {
				t.Errorf("%d samples in 8 s", len(samples))
			}
			if rep["transport"] != tr || rep["end_reason"] != "ended" || rep["decodable"] != 1.0 || rep["plr"] != 0.0 || rep["rebuffer_count"] != 1.0 {
				t.Fatalf("report %s", out.String())
			}
			probe, err := exec.Command("ffprobe", "-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", file).CombinedOutput()
			if err != nil || strings.TrimSpace(string(probe)) != "200" {
				t.Fatalf("ffprobe: %v %s (want 200 frames)", err, probe)
			}
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(file), ".rx.h264.tmp-*")); len(left) > 0 {
				t.Fatalf("temporary files left: %v", left)
			}
		})
	}
	var out, errOut bytes.Buffer
	if err := Play(context.Background(), []string{api.URL + "/vod/asset/manifest.mpd", "--transport", "fdsp", "--repair=false", "--json", "--duration", "2s"}, &out, &errOut); err != nil {
		t.Fatalf("--repair=false: %v\n%s", err, errOut.String())
	}
	if strings.Contains(out.String(), `"repair"`) {
		t.Fatalf("--repair=false reported repair: %s", out.String())
	}
	if err := Play(context.Background(), []string{api.URL + "/vod/asset/manifest.mpd", "--transport", "fdsp", "--bp", "101"}, &bytes.Buffer{}, &errOut); err == nil || !strings.Contains(err.Error(), "--bp") {
		t.Fatalf("--bp 101: %v", err)
	}
}
