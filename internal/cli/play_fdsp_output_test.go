package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/testmedia"
	"github.com/streambed/streambed/internal/transport/fdsp"
)

// fdspOrigin serves the test asset over FDSP on loopback with an /api/streams
// that names it; it returns the URL to play and the asset's folder.
func fdspOrigin(t *testing.T) (playURL, assetDir string) {
	t.Helper()
	assetDir = testmedia.Asset(t)
	a, err := hub.OpenAsset(assetDir)
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
	t.Cleanup(func() { cancel(); <-done })
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"streams":[{"name":"asset","live":false,"fdsp":"fdsp://%s/vod/asset"}]}`, srv.Addr())
	}))
	t.Cleanup(api.Close)
	return api.URL + "/vod/asset/manifest.mpd", assetDir
}

// TestPlayFDSPOutputTS: --output - writes MPEG-TS by default, with the audio;
// ffprobe decodes all 200 video frames and the audio frames.
func TestPlayFDSPOutputTS(t *testing.T) {
	u, _ := fdspOrigin(t)
	var out, errOut bytes.Buffer
	if err := Play(context.Background(), []string{u, "--transport", "fdsp", "--bp", "50", "--quiet", "--output", "-"}, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "decodable 1.000") {
		t.Fatalf("report on stderr: %s", errOut.String())
	}
	p := filepath.Join(t.TempDir(), "rx.ts")
	if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	probe, err := exec.Command("ffprobe", "-v", "error", "-count_frames", "-show_entries", "stream=codec_type,nb_read_frames", "-of", "csv=p=0", p).CombinedOutput()
	if err != nil {
		t.Fatalf("ffprobe: %v\n%s", err, probe)
	}
	got := strings.Fields(string(probe))
	if len(got) == 4 && got[0] == got[2] && got[1] == got[3] {
		got = got[:2] // ffprobe lists the streams once more under the program
	}
	if len(got) != 2 || got[0] != "video,200" || !strings.HasPrefix(got[1], "audio,") || got[1] == "audio,0" {
		t.Fatalf("ffprobe streams %q, want video,200 and audio frames", got)
	}
	for _, c := range []struct{ out, format, want string }{{"-", "", "ts"}, {"x.ts", "", "ts"}, {"x.h264", "", "h264"}, {"x.264", "", "h264"}, {"x.h264", "ts", "ts"}, {"-", "h264", "h264"}} {
		if f, err := fdspOutputFormat(c.out, c.format); err != nil || f != c.want {
			t.Errorf("output %q format %q: %q %v, want %q", c.out, c.format, f, err, c.want)
		}
	}
	if _, err := fdspOutputFormat("-", "mp4"); err == nil {
		t.Error("--output-format mp4 accepted")
	}
}

// TestPlayFDSPReference: --reference reports PSNR and SSIM with FFmpeg. Against
// the packaged asset itself (its master playlist: FFmpeg takes the largest rung,
// the one FDSP sends) the lossless loopback copy is identical (FFmpeg's inf,
// reported as 100; SSIM 1); against a coarse re-encode of that rung it is finite
// and lower.
func TestPlayFDSPReference(t *testing.T) {
	u, dir := fdspOrigin(t)
	coarse := filepath.Join(t.TempDir(), "coarse.mp4")
	if out, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-i", filepath.Join(dir, "master.m3u8"), "-map", "0:v:1",
		"-c:v", "libx264", "-preset", "ultrafast", "-crf", "45", "-bf", "0", coarse).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	for _, c := range []struct {
		ref        string
		psnrLo     float64
		psnrHi     float64
		ssimLo     float64
		ssimHi     float64
		transports string
	}{
		{filepath.Join(dir, "master.m3u8"), 100, 100, 0.9999, 1, "fdsp-udp"},
		{coarse, 15, 45, 0.3, 0.99, "fdsp"},
	} {
		var out, errOut bytes.Buffer
		if err := Play(context.Background(), []string{u, "--transport", c.transports, "--quiet", "--json", "--no-samples", "--reference", c.ref}, &out, &errOut); err != nil {
			t.Fatalf("%v\n%s", err, errOut.String())
		}
		var rep struct {
			PSNR   *float64 `json:"psnr"`
			SSIM   *float64 `json:"ssim"`
			Frames int      `json:"quality_frames"`
			Note   string   `json:"quality_note"`
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.PSNR == nil || rep.SSIM == nil || rep.Frames != 200 {
			t.Fatalf("reference %s: %+v", c.ref, rep)
		}
		t.Logf("reference %s: PSNR %.2f dB, SSIM %.4f", filepath.Base(c.ref), *rep.PSNR, *rep.SSIM)
		if *rep.PSNR < c.psnrLo || *rep.PSNR > c.psnrHi || *rep.SSIM < c.ssimLo || *rep.SSIM > c.ssimHi {
			t.Fatalf("reference %s: PSNR %.2f (want %v..%v), SSIM %.4f (want %v..%v)", c.ref, *rep.PSNR, c.psnrLo, c.psnrHi, *rep.SSIM, c.ssimLo, c.ssimHi)
		}
	}
}
