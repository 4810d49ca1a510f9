package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/server"
	"github.com/streambed/streambed/internal/source/looplive"
	"github.com/streambed/streambed/internal/testmedia"
)

// startOrigin serves the test asset on demand as "clip" and looped live as "loop".
func startOrigin(t *testing.T) (base string, asset *hub.Asset) {
	t.Helper()
	dir := testmedia.Asset(t)
	root := t.TempDir()
	if err := os.Symlink(dir, filepath.Join(root, "clip")); err != nil {
		t.Fatal(err)
	}
	a, err := hub.OpenAsset(filepath.Join(root, "clip"))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New()
	h.AddAsset(a)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := looplive.AddChannel(ctx, h, a, looplive.ChannelOptions{Name: "loop", DVRWindow: 30 * time.Second, AvailabilityStart: looplive.DefaultAvailabilityStart}); err != nil {
		t.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.HTTP, cfg.HTTPS = "127.0.0.1:0", ""
	srv := server.New(cfg, h, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	ls, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, ls); close(done) }()
	t.Cleanup(func() { cancel(); <-done; h.Close() })
	return "http://" + ls.HTTP.Addr().(*net.TCPAddr).String(), a
}

type probe struct {
	Streams []struct {
		Index     int    `json:"index"`
		CodecType string `json:"codec_type"`
		CodecName string `json:"codec_name"`
		Width     int    `json:"width"`
		Height    int    `json:"height"`
	} `json:"streams"`
}

func runTool(t *testing.T, timeout time.Duration, name string, args ...string) []byte {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s not found: install FFmpeg (Debian: apt-get install ffmpeg) — `make test` does this", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// TestOutsideClientsDecodeEveryRendition has ffprobe open each manifest over HTTP and
// ffmpeg decode frames from every video rendition and the audio track.
func TestOutsideClientsDecodeEveryRendition(t *testing.T) {
	base, a := startOrigin(t)
	videos := a.Info().TracksOf(media.Video)
	for _, path := range []string{
		"/vod/clip/manifest.mpd", "/vod/clip/manifest-timeline.mpd", "/vod/clip/master.m3u8",
		"/live/loop/manifest.mpd", "/live/loop/manifest-timeline.mpd", "/live/loop/master.m3u8",
	} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			url := base + path
			out := runTool(t, 60*time.Second, "ffprobe", "-v", "error", "-print_format", "json", "-show_streams", url)
			var p probe
			if err := json.Unmarshal(out, &p); err != nil {
				t.Fatalf("ffprobe output: %v\n%s", err, out)
			}
			heights := map[int]bool{}
			audio := 0
			for _, s := range p.Streams {
				switch s.CodecType {
				case "video":
					if s.CodecName != "h264" {
						t.Errorf("video stream codec %q", s.CodecName)
					}
					heights[s.Height] = true
				case "audio":
					audio++
				}
			}
			for _, v := range videos {
				if !heights[v.Height] {
					t.Errorf("ffprobe sees no %dp rendition; streams: %s", v.Height, out)
				}
			}
			if audio == 0 {
				t.Errorf("ffprobe sees no audio: %s", out)
			}
			// Decode frames from each video rendition and from the audio.
			for i := range videos {
				dec := runTool(t, 90*time.Second, "ffmpeg", "-v", "error", "-i", url, "-map", fmt.Sprintf("0:v:%d", i), "-frames:v", "30", "-f", "null", "-")
				if len(strings.TrimSpace(string(dec))) > 0 {
					t.Errorf("decoding rendition %d reported: %s", i, dec)
				}
			}
			if dec := runTool(t, 90*time.Second, "ffmpeg", "-v", "error", "-i", url, "-map", "0:a:0", "-t", "1", "-f", "null", "-"); len(strings.TrimSpace(string(dec))) > 0 {
				t.Errorf("decoding audio reported: %s", dec)
			}
		})
	}
}
