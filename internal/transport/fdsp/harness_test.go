package fdsp

import (
	"bytes"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/avc"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/testmedia"
)

// testAsset is the packaged test asset the FDSP tests stream: 8 s, 1 s segments
// (a keyframe every second, so I-frames are a fair share of the bytes), 360p.
func testAsset(t testing.TB) *hub.Hub {
	t.Helper()
	dir := testmedia.AssetWith(t, testmedia.Options{SegmentDuration: time.Second, Ladder: "360p:600k"})
	a, err := hub.OpenAsset(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New()
	h.AddAsset(a)
	return h
}

// startServer serves h on loopback until the test ends.
func startServer(t testing.TB, h *hub.Hub, o Options) *Server {
	t.Helper()
	s, err := NewServer(h, "127.0.0.1:0", "127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

// ffmpegFrames decodes an Annex-B H.264 stream with FFmpeg and returns the frames
// it decoded and its error output.
func ffmpegFrames(t testing.TB, stream []byte) (int, string) {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Fatal("ffmpeg not found: the FDSP tests decode the received stream with it; `make test` installs it")
	}
	p := filepath.Join(t.TempDir(), "rx.h264")
	if err := os.WriteFile(p, stream, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ffmpeg", "-hide_banner", "-nostats", "-f", "h264", "-i", p, "-f", "null", "-").CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg could not decode the received stream: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`frame=\s*(\d+)`).FindAllSubmatch(out, -1)
	if len(m) == 0 {
		t.Fatalf("no frame count in ffmpeg's output:\n%s", out)
	}
	n, _ := strconv.Atoi(string(m[len(m)-1][1]))
	return n, string(bytes.TrimSpace(out))
}

// referenceStream is what the server sends, whole, as the client writes it:
// Annex-B with the parameter sets before each substream.
func referenceStream(t testing.TB, h *hub.Hub, name string, substream time.Duration) []byte {
	t.Helper()
	st, err := h.Stream(name, false)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := newMediaReader(st, "", substream)
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	for {
		ss, err := rd.Next(context.Background())
		if err != nil {
			return b
		}
		for _, p := range ss.params {
			b = avc.AppendAnnexB(b, p)
		}
		for _, a := range ss.aus {
			for _, n := range a.nals {
				b = avc.AppendAnnexB(b, n)
			}
		}
	}
}

// ffmpegPSNR is FFmpeg's average PSNR (dB) of a received stream against the sent
// one, frame by frame in decoding order (so only meaningful when both decode to the
// same number of frames).
func ffmpegPSNR(t testing.TB, rx, ref []byte) float64 {
	t.Helper()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "rx.h264"), filepath.Join(dir, "ref.h264")
	_ = os.WriteFile(a, rx, 0o644)
	_ = os.WriteFile(b, ref, 0o644)
	out, err := exec.Command("ffmpeg", "-hide_banner", "-nostats", "-f", "h264", "-i", a, "-f", "h264", "-i", b, "-lavfi", "[0:v][1:v]psnr", "-f", "null", "-").CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg psnr: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`average:(\S+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no PSNR in ffmpeg's output:\n%s", out)
	}
	if string(m[1]) == "inf" {
		return math.Inf(1)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
