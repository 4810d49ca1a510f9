// Package pkg packages media into a Streambed asset folder: FFmpeg encodes an
// aligned-GOP H.264 ladder and an AAC track in one run, internal/cmaf cuts them into
// CMAF init and media segments, and the folder is committed atomically with
// stream.json (media.Asset) written last.
package pkg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/manifest/static"
	"github.com/streambed/streambed/internal/media"
)

// recipe changes whenever the encoding or segmenting changes in a way that should
// re-package existing folders.
const recipe = "pkg-1"

// Defaults of Options.
const (
	DefaultSegmentDuration = 2 * time.Second
	DefaultAudioBitrate    = 128000
	DefaultFPS             = 25
	DefaultPreset          = "veryfast"
)

// Options says what to package and how.
type Options struct {
	Input           string        // media file to encode; empty when Synthetic is set
	Synthetic       time.Duration // length of a synthetic test clip (testsrc2 + tone) instead of Input
	OutDir          string        // the asset folder to create or replace
	Name            string        // asset name; default: OutDir's base name
	SegmentDuration time.Duration // default 2 s
	Ladder          []Rung        // default DefaultLadder
	AudioBitrate    int           // bit/s, default 128k; negative: no audio track
	// ExtraAudioBitrates are more AAC tracks of the same audio at these bit/s (a
	// ladder's other audio renditions, such as the published ladder's 64k beside 128k).
	ExtraAudioBitrates []int
	FPS                int    // default 25
	Preset             string // x264 preset, default veryfast
	// X264Params are extra x264 settings (FFmpeg's -x264-params, such as "slices=4"
	// for a study that splits slices); empty: x264's defaults.
	X264Params string
	// KeepDuration skips the trim to a loopable length: for on-demand-only assets whose
	// exact duration matters (a lab reproducing a 91 s experiment). Such an asset's last
	// segment may be short, and it cannot be looped as a live channel.
	KeepDuration bool
	Tools        Tools     // FFmpeg binaries, default from PATH
	Log          io.Writer // progress and notes (stderr); nil: quiet
}

// Result describes a packaged asset.
type Result struct {
	Asset         *media.Asset
	Dir           string
	UpToDate      bool          // the folder was already packaged with these inputs and settings
	InputDuration time.Duration // of the input or the synthetic request
	Period        time.Duration // the loop alignment period
	Trimmed       time.Duration // cut from the end so the asset loops seamlessly
	Skipped       []Rung        // rungs above the input's height (never upscaled)
}

func (o *Options) setDefaults() error {
	if (o.Input == "") == (o.Synthetic <= 0) {
		return errors.New("give either an input file or a synthetic duration")
	}
	if o.OutDir == "" {
		return errors.New("no output folder (-o DIR)")
	}
	if o.SegmentDuration == 0 {
		o.SegmentDuration = DefaultSegmentDuration
	}
	if o.SegmentDuration < 100*time.Millisecond || o.SegmentDuration%time.Millisecond != 0 {
		return fmt.Errorf("segment duration %s: want at least 100ms, in whole milliseconds", o.SegmentDuration)
	}
	if len(o.Ladder) == 0 {
		o.Ladder, _ = ParseLadder(DefaultLadder)
	}
	if o.AudioBitrate == 0 {
		o.AudioBitrate = DefaultAudioBitrate
	}
	seen := map[string]bool{AudioTrackID(o.AudioBitrate): true}
	for _, b := range o.ExtraAudioBitrates {
		if o.AudioBitrate < 0 || b <= 0 || seen[AudioTrackID(b)] {
			return fmt.Errorf("audio bitrates %d and %v: want distinct positive bit/s, and a main audio track", o.AudioBitrate, o.ExtraAudioBitrates)
		}
		seen[AudioTrackID(b)] = true
	}
	if o.FPS == 0 {
		o.FPS = DefaultFPS
	}
	if o.FPS < 1 || o.FPS > 120 {
		return fmt.Errorf("fps %d: want 1 to 120", o.FPS)
	}
	if o.Preset == "" {
		o.Preset = DefaultPreset
	}
	if o.Name == "" {
		o.Name = filepath.Base(filepath.Clean(o.OutDir))
	}
	if !media.ValidName(o.Name) {
		return fmt.Errorf("asset name %q: use 1-64 characters of A-Z a-z 0-9 . _ - (set --name)", o.Name)
	}
	return nil
}

// source describes the input for the descriptor and the fingerprint.
func (o *Options) source() (desc, identity string, err error) {
	if o.Input == "" {
		d := "synthetic:" + o.Synthetic.String()
		return d, d, nil
	}
	abs, err := filepath.Abs(o.Input)
	if err != nil {
		return "", "", err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", "", fmt.Errorf("input: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", "", fmt.Errorf("input %s is not a regular file", o.Input)
	}
	return o.Input, fmt.Sprintf("file:%s:%d:%d", abs, st.Size(), st.ModTime().UnixNano()), nil
}

// Fingerprint hashes everything the asset depends on: the input (path, size and
// modification time, or the synthetic duration), every setting, the layout version
// and the packaging recipe. Equal fingerprints mean the folder can be reused.
func Fingerprint(o Options, sourceIdentity string) string {
	var lad []string
	for _, r := range o.Ladder {
		lad = append(lad, r.String())
	}
	h := sha256.New()
	fmt.Fprintf(h, "asset-version=%d\nrecipe=%s\nsource=%s\nname=%s\nsegment=%s\nladder=%s\naudio=%d\nfps=%d\npreset=%s\n",
		media.AssetVersion, recipe, sourceIdentity, o.Name, o.SegmentDuration, strings.Join(lad, ","),
		o.AudioBitrate, o.FPS, o.Preset)
	if len(o.ExtraAudioBitrates) > 0 {
		fmt.Fprintf(h, "extra-audio=%v\n", o.ExtraAudioBitrates)
	}
	if o.KeepDuration {
		fmt.Fprintf(h, "keep-duration\n")
	}
	if o.X264Params != "" {
		fmt.Fprintf(h, "x264-params=%s\n", o.X264Params)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// Package encodes and segments the input into o.OutDir, or reuses the folder when its
// fingerprint matches. On any failure or cancellation it leaves no new folder behind
// (an older asset in o.OutDir stays as it was).
func Package(ctx context.Context, o Options) (*Result, error) {
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	desc, identity, err := o.source()
	if err != nil {
		return nil, err
	}
	fp := Fingerprint(o, identity)
	if a, err := media.LoadAsset(o.OutDir); err == nil && a.Fingerprint == fp {
		return &Result{Asset: a, Dir: o.OutDir, UpToDate: true}, nil
	}
	if err := checkReplaceable(o.OutDir); err != nil {
		return nil, err
	}
	tools, err := o.Tools.resolve()
	if err != nil {
		return nil, err
	}

	res := &Result{Dir: o.OutDir, InputDuration: o.Synthetic}
	job := &encodeJob{Input: o.Input, Segment: o.SegmentDuration, FPS: o.FPS, Preset: o.Preset, X264Params: o.X264Params}
	if o.AudioBitrate > 0 {
		job.AudioBitrates = append([]int{o.AudioBitrate}, o.ExtraAudioBitrates...)
	}
	rungs := o.Ladder
	if o.Input != "" {
		pr, err := probe(ctx, tools.FFprobe, o.Input)
		if err != nil {
			return nil, err
		}
		res.InputDuration = pr.Duration
		if !pr.HasAudio {
			job.AudioBitrates = nil
			logf(o.Log, "note: %s has no audio: the asset is video only\n", o.Input)
		}
		rungs = nil
		for _, r := range o.Ladder {
			if r.Height > pr.Height && r.Height > o.Ladder[0].Height {
				res.Skipped = append(res.Skipped, r)
				continue
			}
			rungs = append(rungs, r)
		}
		if len(res.Skipped) > 0 {
			logf(o.Log, "note: skipping rungs above the input's %dp (no upscaling): %v\n", pr.Height, res.Skipped)
		}
	} else {
		top := rungs[len(rungs)-1].Height
		job.SynthHeight, job.SynthWidth = top, (top*16/9+1)&^1
		job.Drawtext = hasDrawtext(ctx, tools.FFmpeg)
		if !job.Drawtext {
			logf(o.Log, "note: FFmpeg's drawtext filter (or a font) is missing: the clip shows testsrc2's own small timestamp\n")
		}
	}
	job.Rungs = rungs
	res.Period, err = AlignmentPeriod(o.SegmentDuration, o.FPS, len(job.AudioBitrates) > 0)
	if err != nil {
		return nil, err
	}
	job.Duration, err = LoopDuration(res.InputDuration, res.Period)
	if o.KeepDuration {
		job.Duration, err = res.InputDuration, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", desc, err)
	}
	res.Trimmed = res.InputDuration - job.Duration
	if res.Trimmed > 0 {
		logf(o.Log, "note: trimming %s to %s (a multiple of the %s loop period) so every track loops seamlessly\n",
			res.InputDuration.Round(time.Millisecond), job.Duration, res.Period)
	}

	// Everything is built in a temporary folder beside the target and renamed into
	// place at the end; stream.json is written last.
	abs, err := filepath.Abs(o.OutDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(abs), filepath.Base(abs)+".tmp-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp makes it private
		os.RemoveAll(tmp)
		return nil, err
	}
	committed := false
	defer func() {
		if !committed {
			os.RemoveAll(tmp)
		}
	}()
	job.WorkDir = filepath.Join(tmp, ".encode")
	if err := os.Mkdir(job.WorkDir, 0o755); err != nil {
		return nil, err
	}
	label := "encoding " + o.Name
	if err := job.run(ctx, tools.FFmpeg, newProgressBar(o.Log, label, job.Duration)); err != nil {
		return nil, err
	}

	asset := &media.Asset{
		Version:           media.AssetVersion,
		Name:              o.Name,
		SegmentDurationMS: o.SegmentDuration.Milliseconds(),
		DurationMS:        job.Duration.Milliseconds(),
		Source:            desc,
		Fingerprint:       fp,
	}
	var video, audio []*media.Track
	segment := func(file, id string) (*media.Track, error) {
		t, err := segmentTrack(ctx, file, tmp, id, o.SegmentDuration, job.Duration)
		if err != nil {
			if job.log != "" && errors.Is(err, errShort) {
				return nil, fmt.Errorf("%s: %w\n  ffmpeg said: %s", desc, err, job.log)
			}
			return nil, fmt.Errorf("%s: %w", desc, err)
		}
		return t, nil
	}
	for _, r := range rungs {
		t, err := segment(job.videoOutput(r), r.ID())
		if err != nil {
			return nil, err
		}
		video = append(video, t)
	}
	for _, b := range job.AudioBitrates {
		t, err := segment(job.audioOutput(b), AudioTrackID(b))
		if err != nil {
			return nil, err
		}
		audio = append(audio, t)
	}
	sort.SliceStable(video, func(i, j int) bool { return video[i].Bandwidth < video[j].Bandwidth })
	sort.SliceStable(audio, func(i, j int) bool { return audio[i].Bandwidth < audio[j].Bandwidth })
	asset.Tracks = append(video, audio...)
	if err := asset.Validate(); err != nil {
		return nil, fmt.Errorf("packaged asset is inconsistent: %w", err)
	}
	if err := os.RemoveAll(job.WorkDir); err != nil {
		return nil, err
	}
	if err := static.WriteAssetFiles(tmp, asset); err != nil {
		return nil, fmt.Errorf("write manifests: %w", err)
	}
	if err := writeDescriptor(tmp, asset); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := fsutil.ReplaceDir(tmp, abs); err != nil {
		return nil, fmt.Errorf("asset: %w", err)
	}
	committed = true
	res.Asset = asset
	return res, nil
}

// errShort says an encoded track came out shorter (or longer) than asked.
var errShort = errors.New("the input ended early, is damaged or has a gap, so the asset would not loop seamlessly")

// segmentTrack cuts one FFmpeg output into dir/id/init.mp4 and dir/id/{n}.m4s and
// checks it lasts exactly want.
func segmentTrack(ctx context.Context, file, dir, id string, seg, want time.Duration) (*media.Track, error) {
	in, err := cmaf.Open(file)
	if err != nil {
		return nil, fmt.Errorf("track %s: %w", id, err)
	}
	defer in.Close()
	info := in.Info()
	if err := os.Mkdir(filepath.Join(dir, id), 0o755); err != nil {
		return nil, err
	}
	init, err := in.Init()
	if err != nil {
		return nil, fmt.Errorf("track %s: %w", id, err)
	}
	t := &media.Track{
		ID: id, Kind: info.Kind, Codec: info.Codec, Timescale: info.Timescale,
		InitPath: filepath.ToSlash(filepath.Join(id, "init.mp4")),
	}
	switch info.Kind {
	case media.Video:
		t.Width, t.Height, t.FrameRate = info.Width, info.Height, info.FrameRate
	case media.Audio:
		t.SampleRate, t.Channels = info.SampleRate, info.Channels
		if info.Language != "und" {
			t.Language = info.Language
		}
	}
	if err := os.WriteFile(filepath.Join(dir, t.InitPath), init, 0o644); err != nil {
		return nil, err
	}
	var peak float64
	err = in.Segment(seg, func(ref media.SegmentRef, data []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ref.Path = fmt.Sprintf("%s/%d.m4s", id, ref.Number)
		if err := os.WriteFile(filepath.Join(dir, ref.Path), data, 0o644); err != nil {
			return err
		}
		if ref.Duration > 0 {
			peak = math.Max(peak, float64(ref.Size)*8*float64(info.Timescale)/float64(ref.Duration))
		}
		t.Segments = append(t.Segments, ref)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("track %s: %w", id, err)
	}
	t.Bandwidth = int(math.Ceil(peak))
	// Loopability: every track must end exactly at the trimmed duration.
	got := t.Duration(in.Duration())
	if got != want {
		return nil, fmt.Errorf("track %s lasts %s, want %s: %w", id, got, want, errShort)
	}
	return t, nil
}

// hasDrawtext reports whether FFmpeg can draw text with its default font.
func hasDrawtext(ctx context.Context, ffmpeg string) bool {
	cmd := exec.CommandContext(ctx, ffmpeg, "-hide_banner", "-nostdin", "-loglevel", "error",
		"-f", "lavfi", "-i", "testsrc2=size=64x64:rate=1:duration=1,drawtext=text=0",
		"-frames:v", "1", "-f", "null", "-")
	return cmd.Run() == nil
}

// writeDescriptor writes stream.json atomically: the asset appears with it.
func writeDescriptor(dir string, a *media.Asset) error {
	return fsutil.WriteJSONAtomic(filepath.Join(dir, media.AssetFile), a, 0o644)
}

// checkReplaceable refuses to replace a folder that is not an asset folder.
func checkReplaceable(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s exists and is not a folder", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, media.AssetFile)); err == nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s exists, is not empty and holds no %s: refusing to replace it (choose another -o)", dir, media.AssetFile)
	}
	return nil
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}

// Invalidate makes the next Package of dir re-encode even if nothing changed, by
// clearing the fingerprint in its descriptor. The folder keeps serving until then.
func Invalidate(dir string) error {
	a, err := media.LoadAsset(dir)
	if err != nil {
		return nil // nothing reusable there anyway
	}
	a.Fingerprint = ""
	return writeDescriptor(dir, a)
}
