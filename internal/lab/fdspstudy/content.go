package main

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/source/pkg"
)

// clipKind is one of the study's two contents, made with FFmpeg's lavfi sources
// (no free clip is at hand here): a high-detail still (a deep Mandelbrot view,
// rendered once at 3840x2160) seen through a moving 1920x1080 window.
//
//   - fast: the window sweeps at up to ~40 px a frame, cuts to a second view every
//     2 s, and a keyframe every 0.5 s: many I-frames, large P-frames;
//   - slow: the window drifts 6 px a second over one view ("a nature shot"), a
//     keyframe every 2 s: few, large I-frames and tiny P-frames.
type clipKind struct {
	Name string
	GOP  time.Duration // the packager's segment length, so a keyframe every GOP
	Desc string
}

var clipKinds = map[string]clipKind{
	"fast": {"fast", 500 * time.Millisecond, "fast pan (up to ~40 px/frame) over two Mandelbrot views, a cut every 2 s, keyframe every 0.5 s"},
	"slow": {"slow", 2 * time.Second, "slow drift (6 px/s) over one Mandelbrot view, keyframe every 2 s"},
}

// views are the stills' Mandelbrot centres and scales (all detailed to the edge).
var views = []string{
	"start_x=-0.743643887037151:start_y=0.131825904205330:start_scale=0.004",
	"start_x=-0.1011:start_y=0.9563:start_scale=0.02",
}

// Content is one packaged clip at one bitrate, as the study streams it.
type Content struct {
	Clip      string  `json:"clip"`
	Name      string  `json:"asset"` // the hub's stream vod/<Name>
	Bitrate   int     `json:"bitrate"`
	Desc      string  `json:"description"`
	Seconds   float64 `json:"seconds"`
	GOPms     int64   `json:"gop_ms"`
	Frames    int     `json:"frames"`
	IFrames   int     `json:"i_frames"`
	Bytes     int64   `json:"video_bytes"`
	IBytes    int64   `json:"i_frame_bytes"`
	IShare    float64 `json:"i_frame_byte_share"`
	VideoMbps float64 `json:"video_mbit_s"`
	Params    string  `json:"x264_params"`
	dir       string
}

const x264Params = "slices=4" // the study's four slices per frame

// makeContent renders (once, cached under cache) the mezzanine of a clip kind and
// packages it as one 1080p30 rung at each bitrate, slices=4, audio AAC 128k.
func makeContent(ctx context.Context, cache string, kind clipKind, length time.Duration, bitrate int) (*Content, error) {
	mezz, err := mezzanine(ctx, cache, kind, length)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%s-%dk", kind.Name, bitrate/1000)
	dir := filepath.Join(cache, name)
	log.Printf("packaging %s (cached)", name)
	_, err = pkg.Package(ctx, pkg.Options{
		Input: mezz, OutDir: dir, Name: name, SegmentDuration: kind.GOP, FPS: 30, Preset: "veryfast",
		Ladder: []pkg.Rung{{Height: 1080, Bitrate: bitrate}}, X264Params: x264Params, KeepDuration: true, Log: os.Stderr,
	})
	if err != nil {
		return nil, fmt.Errorf("package %s: %w", name, err)
	}
	c := &Content{Clip: kind.Name, Name: name, Bitrate: bitrate, Desc: kind.Desc, GOPms: kind.GOP.Milliseconds(), Params: x264Params, dir: dir}
	return c, c.measure(ctx)
}

// mezzanine renders the clip kind's source as near-lossless H.264 (x264 ultrafast,
// QP 10) with a 440 Hz tone, once: the file is reused while it exists.
func mezzanine(ctx context.Context, cache string, kind clipKind, length time.Duration) (string, error) {
	out := filepath.Join(cache, "mezzanine", fmt.Sprintf("%s-%ds.mkv", kind.Name, int(length.Seconds())))
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	var stills []string
	for i, v := range views {
		p := filepath.Join(cache, "mezzanine", fmt.Sprintf("view%d.png", i))
		if _, err := os.Stat(p); err != nil {
			log.Printf("rendering still %d", i)
			tmp := p + ".tmp.png"
			if err := ffmpeg(ctx, "-f", "lavfi", "-i", "mandelbrot=s=3840x2160:rate=1:maxiter=2048:"+v, "-frames:v", "1", tmp); err != nil {
				return "", err
			}
			if err := os.Rename(tmp, p); err != nil {
				return "", err
			}
		}
		stills = append(stills, p)
	}
	secs := strconv.Itoa(int(length.Seconds()))
	var filter string
	var inputs []string
	// Each still is decoded once and repeated by the loop filter (an image input
	// with -loop 1 would decode the 4K PNG again for every frame).
	still := func(i int) string {
		return fmt.Sprintf("[%d:v]format=yuv420p,loop=loop=-1:size=1,settb=AVTB,setpts=N/30/TB,", i)
	}
	switch kind.Name {
	case "fast":
		// Two views swept fast; the second shows in the second half of every 4 s.
		inputs = []string{"-i", stills[0], "-i", stills[1]}
		filter = still(0) + "crop=1920:1080:x='960+900*sin(t*1.3)':y='540+500*cos(t*0.9)'[a];" +
			still(1) + "crop=1920:1080:x='960+900*cos(t*1.1)':y='540+500*sin(t*1.7)'[b];" +
			"[a][b]overlay=enable='gte(mod(t\\,4)\\,2)',format=yuv420p[v]"
	default:
		inputs = []string{"-i", stills[0]}
		filter = still(0) + "crop=1920:1080:x='600+6*t':y=500,format=yuv420p[v]"
	}
	log.Printf("rendering the %s mezzanine (%s s)", kind.Name, secs)
	tone := strings.Count(strings.Join(inputs, " "), "-i ") // the sine's input index
	args := append(inputs, "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
		"-filter_complex", filter, "-map", "[v]", "-map", fmt.Sprintf("%d:a", tone),
		"-t", secs, "-r", "30", "-c:v", "libx264", "-preset", "ultrafast", "-qp", "10", "-c:a", "pcm_s16le")
	tmp := out + ".tmp.mkv"
	if err := ffmpeg(ctx, append(args, tmp)...); err != nil {
		return "", err
	}
	return out, os.Rename(tmp, out)
}

func ffmpeg(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "ffmpeg", append([]string{"-hide_banner", "-nostdin", "-y", "-loglevel", "error"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ffmpeg %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// measure counts the packaged video's frames and bytes by picture type (ffprobe
// over the init segment and every media segment, concatenated).
func (c *Content) measure(ctx context.Context) error {
	a, err := hub.OpenAsset(c.dir)
	if err != nil {
		return err
	}
	st := a.Info()
	var video string
	for _, t := range st.Tracks {
		if t.Kind == media.Video {
			video = t.ID
		}
	}
	init, err := a.Init(video)
	if err != nil {
		return err
	}
	t, err := st.Track(video)
	if err != nil {
		return err
	}
	file := bytes.NewBuffer(append([]byte(nil), init...))
	for _, s := range t.Segments {
		seg, err := a.ReadSegment(video, s.Number)
		if err != nil {
			return err
		}
		file.Write(seg.Chunks[0].Data)
	}
	tmp := filepath.Join(c.dir, ".probe.mp4")
	if err := fsutil.WriteFileAtomic(tmp, file.Bytes(), 0o644); err != nil {
		return err
	}
	defer os.Remove(tmp)
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "frame=pict_type,pkt_size", "-of", "csv=p=0", tmp).Output()
	if err != nil {
		return fmt.Errorf("ffprobe %s: %w", c.Name, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(strings.TrimSpace(line), ",")
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		c.Frames++
		c.Bytes += n
		if strings.HasPrefix(f[1], "I") {
			c.IFrames++
			c.IBytes += n
		}
	}
	if c.Frames == 0 || c.Bytes == 0 {
		return fmt.Errorf("%s: ffprobe found no frames", c.Name)
	}
	c.Seconds = float64(c.Frames) / 30
	c.IShare = float64(c.IBytes) / float64(c.Bytes)
	c.VideoMbps = float64(c.Bytes) * 8 / c.Seconds / 1e6
	log.Printf("%s: %d frames, %d I-frames, video %.2f Mbit/s, I-frames %.1f %% of the bytes", c.Name, c.Frames, c.IFrames, c.VideoMbps, 100*c.IShare)
	return nil
}
