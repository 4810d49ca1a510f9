package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// makeTS remuxes a packaged asset's top video rung and first audio track into
// MPEG-TS without re-encoding (-c copy): the same H.264 bitstream FDSP sends,
// for the SRT peer. The asset's master.m3u8 is the way in (FFmpeg's HLS demuxer
// reads its CMAF tracks).
func makeTS(ctx context.Context, assetDir, out string) error {
	master := filepath.Join(assetDir, "master.m3u8")
	probe, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "stream=height", "-of", "json", master).Output()
	if err != nil {
		return fmt.Errorf("ffprobe %s: %w", master, err)
	}
	var p struct {
		Streams []struct {
			Height int `json:"height"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(probe, &p); err != nil || len(p.Streams) == 0 {
		return fmt.Errorf("%s: no video stream", master)
	}
	top := 0
	for i, s := range p.Streams {
		if s.Height > p.Streams[top].Height {
			top = i
		}
	}
	// The cache folder may not exist yet: with -asset nothing was packaged into it.
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := out + ".tmp.ts"
	defer os.Remove(tmp)
	if b, err := exec.CommandContext(ctx, "ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-i", master,
		"-map", "0:v:"+strconv.Itoa(top), "-map", "0:a:0?", "-c", "copy", "-f", "mpegts", tmp).CombinedOutput(); err != nil {
		return fmt.Errorf("ffmpeg remux to TS: %v: %s", err, b)
	}
	return os.Rename(tmp, out) // whole or not at all
}
