package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os/exec"
	"regexp"
	"strconv"

	"github.com/streambed/streambed/internal/transport/fdsp"
)

// play --transport fdsp --reference SRC compares the received video with the one
// the server sent, with FFmpeg's psnr and ssim filters. SRC is anything FFmpeg
// opens: the packaged top rung, or the origin's own manifest URL (`origin` is
// short for the URL being played), of which the video stream with the most lines
// is taken (FDSP sends the highest rung). Frames are paired in presentation
// order from the first, so it is meaningful for an asset played from its start
// (not for a channel joined at its live edge), and only when FFmpeg decodes as
// many frames as were played: otherwise the keys are left out and
// quality_note says why.

// qualityReport is what --reference adds to play's report.
type qualityReport struct {
	PSNR   *float64 `json:"psnr,omitempty"`           // dB, average over frames; 100 stands for identical (FFmpeg's inf)
	SSIM   *float64 `json:"ssim,omitempty"`           // All, average over frames
	Frames int      `json:"quality_frames,omitempty"` // frames compared
	Note   string   `json:"quality_note,omitempty"`
}

// annexBTee keeps a copy of the played video as Annex-B for the comparison,
// whatever the output format.
type annexBTee struct {
	sink fdsp.Sink
	rx   io.Writer
}

func (t annexBTee) WriteVideo(v fdsp.VideoFrame) error {
	if _, err := t.rx.Write(v.AnnexB); err != nil {
		return err
	}
	if t.sink == nil {
		return nil
	}
	return t.sink.WriteVideo(v)
}

func (t annexBTee) WriteAudio(pts uint64, frame []byte) error {
	if t.sink == nil {
		return nil
	}
	return t.sink.WriteAudio(pts, frame)
}

// measureQuality runs FFmpeg on the received Annex-B (in file rx) against ref.
func measureQuality(ctx context.Context, rx, ref string, played int) qualityReport {
	idx, err := largestVideo(ctx, ref)
	if err != nil {
		return qualityReport{Note: err.Error()}
	}
	// PTS = frame index on both sides: the received stream's own times and the
	// reference's (a DASH demuxer's, a file's) need not share an origin.
	graph := fmt.Sprintf("[0:v]setpts=N/TB[rx];[1:v:%d]setpts=N/TB,split[r1][r2];[rx][r1]psnr=shortest=1[p];[p][r2]ssim=shortest=1", idx)
	out, err := exec.CommandContext(ctx, "ffmpeg", "-hide_banner", "-nostats", "-f", "h264", "-i", rx, "-i", ref,
		"-lavfi", graph, "-f", "null", "-").CombinedOutput()
	if err != nil {
		return qualityReport{Note: fmt.Sprintf("ffmpeg: %v: %s", err, lastLine(out))}
	}
	q := qualityReport{Frames: lastInt(regexp.MustCompile(`frame=\s*(\d+)`), out)}
	if q.Frames != played {
		q.Note = fmt.Sprintf("FFmpeg compared %d frames of %d played: frames cannot be paired", q.Frames, played)
		return q
	}
	if m := regexp.MustCompile(`PSNR .*average:(\S+)`).FindSubmatch(out); m != nil {
		v, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil || math.IsInf(v, 0) {
			v = 100 // FFmpeg says inf: identical
		}
		q.PSNR = &v
	}
	if m := regexp.MustCompile(`SSIM .*All:(\S+)`).FindSubmatch(out); m != nil {
		if v, err := strconv.ParseFloat(string(m[1]), 64); err == nil {
			q.SSIM = &v
		}
	}
	if q.PSNR == nil || q.SSIM == nil {
		q.Note = "no PSNR/SSIM in FFmpeg's output: " + lastLine(out)
	}
	return q
}

// largestVideo is the index among SRC's video streams of the one with the most
// lines.
func largestVideo(ctx context.Context, src string) (int, error) {
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "stream=height", "-of", "json", src).Output()
	if err != nil {
		return 0, fmt.Errorf("reference %s: ffprobe: %v", src, err)
	}
	var p struct {
		Streams []struct {
			Height int `json:"height"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(out, &p); err != nil || len(p.Streams) == 0 {
		return 0, fmt.Errorf("reference %s: no video stream", src)
	}
	best := 0
	for i, s := range p.Streams {
		if s.Height > p.Streams[best].Height {
			best = i
		}
	}
	return best, nil
}

func lastInt(re *regexp.Regexp, b []byte) int {
	m := re.FindAllSubmatch(b, -1)
	if len(m) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(string(m[len(m)-1][1]))
	return n
}

func lastLine(b []byte) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return string(lines[len(lines)-1])
}
