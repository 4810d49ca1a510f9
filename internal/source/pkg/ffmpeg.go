package pkg

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Tools names the FFmpeg binaries; empty fields are looked up on PATH.
type Tools struct {
	FFmpeg  string
	FFprobe string
}

// ErrFFmpegMissing says FFmpeg or ffprobe is not installed.
var ErrFFmpegMissing = errors.New("ffmpeg not found: install it (Debian: apt-get install ffmpeg)")

// resolve fills in the binaries from PATH.
func (t Tools) resolve() (Tools, error) {
	var err error
	if t.FFmpeg, err = lookTool(t.FFmpeg, "ffmpeg"); err != nil {
		return t, err
	}
	if t.FFprobe, err = lookTool(t.FFprobe, "ffprobe"); err != nil {
		return t, err
	}
	return t, nil
}

func lookTool(p, name string) (string, error) {
	switch {
	case p != "":
		if path, err := exec.LookPath(p); err == nil {
			return path, nil
		}
		return "", fmt.Errorf("%s %q is not an executable; %w", name, p, ErrFFmpegMissing)
	default:
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
		if name == "ffmpeg" {
			return "", ErrFFmpegMissing
		}
		return "", fmt.Errorf("%s is missing; %w", name, ErrFFmpegMissing)
	}
}

// probed is what ffprobe tells about an input file.
type probed struct {
	Duration time.Duration // of the shorter of the first video and audio streams
	Width    int
	Height   int
	HasAudio bool
	Video    string // codec names, for messages
	Audio    string
}

// probe checks with ffprobe that path is media with a video stream and returns its
// duration and size.
func probe(ctx context.Context, ffprobe, path string) (*probed, error) {
	cmd := exec.CommandContext(ctx, ffprobe, "-v", "error", "-show_entries",
		"stream=codec_type,codec_name,width,height,duration:format=duration,format_name", "-of", "json", path)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s is not a media file ffprobe can read: %s", path, tail(errb.String(), 5, err))
	}
	var r struct {
		Streams []struct {
			CodecType string `json:"codec_type"`
			CodecName string `json:"codec_name"`
			Width     int    `json:"width"`
			Height    int    `json:"height"`
			Duration  string `json:"duration"`
		} `json:"streams"`
		Format struct {
			Duration   string `json:"duration"`
			FormatName string `json:"format_name"`
		} `json:"format"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("%s: unreadable ffprobe output: %w", path, err)
	}
	p := &probed{}
	var vdur, adur time.Duration
	haveVideo := false
	for _, s := range r.Streams {
		switch {
		case s.CodecType == "video" && !haveVideo && s.Width > 0 && s.CodecName != "mjpeg" && s.CodecName != "png":
			haveVideo = true
			p.Width, p.Height, p.Video = s.Width, s.Height, s.CodecName
			vdur = seconds(s.Duration)
		case s.CodecType == "audio" && !p.HasAudio:
			p.HasAudio, p.Audio = true, s.CodecName
			adur = seconds(s.Duration)
		}
	}
	if !haveVideo {
		return nil, fmt.Errorf("%s (%s) has no video stream to encode", path, r.Format.FormatName)
	}
	p.Duration = seconds(r.Format.Duration)
	for _, d := range []time.Duration{vdur, adur} {
		if d > 0 && (p.Duration <= 0 || d < p.Duration) {
			p.Duration = d
		}
	}
	if p.Duration <= 0 {
		return nil, fmt.Errorf("%s: ffprobe reports no duration (a live stream or a broken file?)", path)
	}
	return p, nil
}

func seconds(s string) time.Duration {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

// encodeJob is one FFmpeg run that encodes the whole ladder and the audio tracks.
type encodeJob struct {
	Input         string        // media file; "" for the synthetic clip
	Duration      time.Duration // the trimmed length every output gets (-t)
	Segment       time.Duration
	FPS           int
	Preset        string
	X264Params    string // extra x264 settings (-x264-params); empty: none
	Rungs         []Rung
	AudioBitrates []int // one AAC track each; none: no audio
	SynthWidth    int   // synthetic clip size (the top rung's)
	SynthHeight   int
	Drawtext      bool   // burn the media time into the synthetic clip
	WorkDir       string // outputs: v{height}.mp4, a{kbps}.mp4

	log string // the tail of FFmpeg's log after run, for later error messages
}

// videoOutput is the progressive MP4 FFmpeg writes for rung r.
func (j *encodeJob) videoOutput(r Rung) string { return filepath.Join(j.WorkDir, r.ID()+".mp4") }

// audioOutput is the progressive MP4 FFmpeg writes for the AAC track at bitrate b.
func (j *encodeJob) audioOutput(b int) string {
	return filepath.Join(j.WorkDir, AudioTrackID(b)+".mp4")
}

// secs formats a duration for FFmpeg's command line, exactly.
func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }

// args builds the FFmpeg command line: one run, a split filter feeding one x264
// output per rung with a keyframe at every segment boundary, and one AAC-LC output per
// audio bitrate.
func (j *encodeJob) args() []string {
	a := []string{"-hide_banner", "-nostdin", "-y", "-loglevel", "warning", "-nostats", "-progress", "pipe:1"}
	var vin, ain string
	if j.Input == "" {
		src := fmt.Sprintf("testsrc2=size=%dx%d:rate=%d", j.SynthWidth, j.SynthHeight, j.FPS)
		if j.Drawtext {
			// A burnt-in clock: media time and frame number, readable at every rung.
			src += fmt.Sprintf(",drawtext=text='%%{pts\\:hms}  #%%{n}':fontsize=%d:fontcolor=white"+
				":box=1:boxcolor=black@0.6:boxborderw=%d:x=(w-tw)/2:y=h-th-%d",
				max(j.SynthHeight/12, 8), max(j.SynthHeight/90, 2), j.SynthHeight/20)
		}
		a = append(a, "-f", "lavfi", "-t", secs(j.Duration), "-i", src)
		vin = "[0:v]fps=" + strconv.Itoa(j.FPS)
		if len(j.AudioBitrates) > 0 {
			// A 440 Hz tone with a beep every second, to check A/V sync by ear.
			a = append(a, "-f", "lavfi", "-t", secs(j.Duration), "-i",
				fmt.Sprintf("sine=frequency=440:beep_factor=4:sample_rate=%d", AudioSampleRate))
			ain = "[1:a]anull"
		}
	} else {
		a = append(a, "-i", j.Input)
		// Constant frame rate from media time 0; audio padded to start at 0 as well, so
		// every output starts together and lasts exactly -t.
		vin = fmt.Sprintf("[0:v:0]fps=%d:start_time=0", j.FPS)
		if len(j.AudioBitrates) > 0 {
			ain = fmt.Sprintf("[0:a:0]aresample=%d:async=1:first_pts=0", AudioSampleRate)
		}
	}
	var fc strings.Builder
	fmt.Fprintf(&fc, "%s,format=yuv420p,split=%d", vin, len(j.Rungs))
	for i := range j.Rungs {
		fmt.Fprintf(&fc, "[s%d]", i)
	}
	for i, r := range j.Rungs {
		fmt.Fprintf(&fc, ";[s%d]scale=-2:%d,setsar=1[v%d]", i, r.Height, i)
	}
	if ain != "" {
		// One audio source split into one AAC encoder per bitrate.
		fmt.Fprintf(&fc, ";%s,asplit=%d", ain, len(j.AudioBitrates))
		for i := range j.AudioBitrates {
			fmt.Fprintf(&fc, "[a%d]", i)
		}
	}
	a = append(a, "-filter_complex", fc.String())

	gop := int(j.Segment.Seconds()*float64(j.FPS) + 0.5)
	for i, r := range j.Rungs {
		a = append(a, "-map", fmt.Sprintf("[v%d]", i), "-t", secs(j.Duration),
			"-c:v", "libx264", "-preset", j.Preset,
			"-b:v", FormatBitrate(r.Bitrate), "-maxrate", FormatBitrate(r.Bitrate), "-bufsize", FormatBitrate(2*r.Bitrate),
			// Aligned, closed GOPs: a keyframe exactly at every segment boundary and
			// nowhere else; no B-frames, so decode order is presentation order and a
			// one-frame chunk can be shown as soon as it arrives.
			"-g", strconv.Itoa(gop), "-keyint_min", strconv.Itoa(gop), "-sc_threshold", "0",
			"-force_key_frames", "expr:gte(t,n_forced*"+secs(j.Segment)+")",
			"-bf", "0", "-flags", "+cgop",
			"-pix_fmt", "yuv420p", "-an", "-sn", "-dn", "-map_metadata", "-1")
		if j.X264Params != "" {
			a = append(a, "-x264-params", j.X264Params)
		}
		a = append(a, j.videoOutput(r))
	}
	for i, b := range j.AudioBitrates {
		a = append(a, "-map", fmt.Sprintf("[a%d]", i), "-t", secs(j.Duration),
			"-c:a", "aac", "-profile:a", "aac_low", "-b:a", FormatBitrate(b),
			"-ar", strconv.Itoa(AudioSampleRate), "-ac", "2", "-vn", "-sn", "-dn", "-map_metadata", "-1",
			j.audioOutput(b))
	}
	return a
}

// run runs FFmpeg, reporting progress to prog, and returns a clear error with the
// tail of FFmpeg's log when it fails.
func (j *encodeJob) run(ctx context.Context, ffmpeg string, prog *progressBar) error {
	cmd := exec.CommandContext(ctx, ffmpeg, j.args()...)
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var errb tailBuffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start ffmpeg: %w", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		readProgress(stdout, prog)
	}()
	wg.Wait()
	err = cmd.Wait()
	j.log = tail(errb.String(), 8, errors.New(""))
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		what := "the synthetic clip"
		if j.Input != "" {
			what = j.Input
		}
		return fmt.Errorf("ffmpeg failed encoding %s: %s", what, tail(errb.String(), 8, err))
	}
	prog.finish()
	return nil
}

// readProgress feeds FFmpeg's -progress key=value lines to the bar.
func readProgress(r io.Reader, prog *progressBar) {
	sc := bufio.NewScanner(r)
	var speed string
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "speed":
			speed = strings.TrimSpace(v)
		case "out_time_us":
			if us, err := strconv.ParseInt(v, 10, 64); err == nil && us >= 0 {
				prog.update(time.Duration(us)*time.Microsecond, speed)
			}
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// tailBuffer keeps the last 16 KiB written to it.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 16<<10 {
		t.b = append(t.b[:0], t.b[len(t.b)-16<<10:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// tail returns the last n non-empty lines of log, or err when there are none.
func tail(log string, n int, err error) string {
	var lines []string
	for _, l := range strings.Split(log, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return err.Error()
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n  ")
}
