package encoder

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// FFmpegOptions configure FFmpegArgs.
type FFmpegOptions struct {
	Base   string // the channel's ingest URL; tracks post to Base/Streams(ID.cmfv)
	Token  string // sent as Authorization: Bearer TOKEN; "" sends none
	Ladder Ladder
	// Input is a media file looped forever at its own pace; "" is a synthetic source
	// (testsrc2 with a clock, a 440 Hz tone).
	Input    string
	Duration time.Duration // 0: until stopped
	Preset   string        // x264 preset; "" veryfast
	// Now anchors the timestamps: media time is time since the Unix epoch, starting at
	// the segment boundary at or before Now.
	Now time.Time
}

// FFmpegArgs is the FFmpeg command line of a live encoder posting the ladder, one
// CMAF output per track (`-f mp4 -movflags
// cmaf+frag_keyframe+empty_moov+default_base_moof+frag_discont -method POST`), with
// progress as key=value lines on stdout (`-progress pipe:1`).
func FFmpegArgs(o FFmpegOptions) []string {
	l := o.Ladder
	preset := o.Preset
	if preset == "" {
		preset = "veryfast"
	}
	top := l.Video[len(l.Video)-1].Height
	args := []string{"-hide_banner", "-nostats", "-loglevel", "error", "-progress", "pipe:1"}
	if o.Input == "" {
		args = append(args, "-re", "-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=%dx%d:rate=%d", top*16/9/2*2, top, l.FPS))
		if len(l.Audio) > 0 {
			args = append(args, "-re", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000")
		}
	} else {
		args = append(args, "-re", "-stream_loop", "-1", "-i", o.Input)
	}
	audioIn := "1:a"
	if o.Input != "" {
		audioIn = "0:a"
	}
	// One decode, split and scaled per rung.
	var fc strings.Builder
	fmt.Fprintf(&fc, "[0:v]fps=%d,split=%d", l.FPS, len(l.Video))
	for i := range l.Video {
		fmt.Fprintf(&fc, "[s%d]", i)
	}
	for i, r := range l.Video {
		fmt.Fprintf(&fc, ";[s%d]scale=-2:%d[v%d]", i, r.Height, i)
	}
	args = append(args, "-filter_complex", fc.String())
	// Timestamps from the Unix epoch, starting at a segment boundary: frag_discont
	// makes the mp4 muxer write the absolute time in tfdt instead of starting at 0.
	seg := l.SegmentDuration()
	start := o.Now.Truncate(seg)
	offset := strconv.FormatFloat(float64(start.UnixNano())/1e9, 'f', 3, 64)
	cmaf := []string{"-f", "mp4", "-movflags", "cmaf+frag_keyframe+empty_moov+default_base_moof+frag_discont",
		"-output_ts_offset", offset, "-method", "POST", "-chunked_post", "1"}
	if o.Token != "" {
		cmaf = append(cmaf, "-headers", "Authorization: Bearer "+o.Token+"\r\n")
	}
	if o.Duration > 0 {
		cmaf = append(cmaf, "-t", strconv.FormatFloat(o.Duration.Seconds(), 'f', 3, 64))
	}
	for i, r := range l.Video {
		b := strconv.Itoa(r.Bitrate)
		args = append(args, "-map", fmt.Sprintf("[v%d]", i), "-c:v", "libx264", "-preset", preset, "-tune", "zerolatency",
			"-profile:v", "high", "-pix_fmt", "yuv420p", "-b:v", b, "-maxrate", b, "-bufsize", strconv.Itoa(2*r.Bitrate),
			"-g", strconv.Itoa(l.GOP), "-keyint_min", strconv.Itoa(l.GOP), "-sc_threshold", "0", "-bf", "0",
			// CMAF chunks of about 200 ms within each GOP-long segment (frag_keyframe
			// still starts one at every keyframe): the origin serves and pushes each
			// as it arrives, instead of a whole segment a segment late.
			"-frag_duration", strconv.FormatInt(mediaChunk.Microseconds(), 10))
		args = append(args, cmaf...)
		args = append(args, TrackURL(o.Base, r.ID()+".cmfv"))
	}
	for _, a := range l.Audio {
		// Audio in chunks of about 200 ms (ten AAC frames): a segment of whole AAC
		// frames cannot end exactly where the video's does (2 s is 93.75 frames at
		// 48 kHz), and FFmpeg's 2 s fragments (94 frames) drift 5 ms a segment
		// against the video until a segment number is skipped. With small chunks the
		// origin starts each audio segment at the chunk at the video's boundary.
		args = append(args, "-map", audioIn, "-c:a", "aac", "-b:a", strconv.Itoa(a), "-ac", "2", "-ar", "48000",
			"-frag_duration", strconv.FormatInt(mediaChunk.Microseconds(), 10))
		args = append(args, cmaf...)
		args = append(args, TrackURL(o.Base, AudioID(a)+".cmfa"))
	}
	return args
}

// mediaChunk is the duration of FFmpeg's fragments, the CMAF chunks (see FFmpegArgs).
const mediaChunk = 200 * time.Millisecond

// Progress is what FFmpeg reports every half second.
type Progress struct {
	Frame   int64
	FPS     float64
	Bitrate string // as FFmpeg prints it, e.g. "1234.5kbits/s" ("N/A" for network outputs)
	Speed   string // "1.00x"
	OutTime time.Duration
}

// RunFFmpeg runs FFmpeg with args until it ends or ctx does, calling progress with
// each report. Its error output is kept for the error.
func RunFFmpeg(ctx context.Context, ffmpeg string, args []string, progress func(Progress)) error {
	if ffmpeg == "" {
		ffmpeg = "ffmpeg"
	}
	if _, err := exec.LookPath(ffmpeg); err != nil {
		return fmt.Errorf("encoder: %s not found: install FFmpeg (Debian: apt-get install ffmpeg), or use the replay encoder", ffmpeg)
	}
	cmd := exec.CommandContext(ctx, ffmpeg, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(interruptSignal) } // lets FFmpeg finish its outputs
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &limitedWriter{w: &stderr, n: 16 << 10}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("encoder: %w", err)
	}
	readProgress(out, progress)
	err = cmd.Wait()
	if ctx.Err() != nil {
		return nil // stopped on purpose
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		var ee *exec.ExitError
		if errors.As(err, &ee) && msg != "" {
			return fmt.Errorf("encoder: ffmpeg failed: %s", msg)
		}
		return fmt.Errorf("encoder: ffmpeg: %w", err)
	}
	return nil
}

// readProgress parses FFmpeg's -progress key=value blocks, each ended by progress=.
func readProgress(r io.Reader, progress func(Progress)) {
	var p Progress
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		switch k {
		case "frame":
			p.Frame, _ = strconv.ParseInt(v, 10, 64)
		case "fps":
			p.FPS, _ = strconv.ParseFloat(v, 64)
		case "bitrate":
			p.Bitrate = v
		case "speed":
			p.Speed = strings.TrimSpace(v)
		case "out_time_us":
			if us, err := strconv.ParseInt(v, 10, 64); err == nil {
				p.OutTime = time.Duration(us) * time.Microsecond
			}
		case "progress":
			if progress != nil {
				progress(p)
			}
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(b []byte) (int, error) {
	if l.n > 0 {
		k := min(len(b), l.n)
		_, _ = l.w.Write(b[:k])
		l.n -= k
	}
	return len(b), nil
}
