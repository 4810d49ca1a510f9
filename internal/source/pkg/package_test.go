package pkg_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/source/pkg"
	"github.com/streambed/streambed/internal/testmedia"
)

// small returns options for a quick synthetic package into dir.
func small(dir string, d time.Duration) pkg.Options {
	return pkg.Options{
		Synthetic: d, OutDir: dir, Ladder: []pkg.Rung{{Height: 180, Bitrate: 100000}},
		AudioBitrate: 64000, Preset: "ultrafast",
	}
}

// checkAsset verifies an asset folder against its descriptor: files, segment
// timing and sizes, bandwidth, loopability.
func checkAsset(t *testing.T, dir string, segDur time.Duration) *media.Asset {
	t.Helper()
	a, err := media.LoadAsset(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a.SegmentDurationMS != segDur.Milliseconds() {
		t.Errorf("segment duration %d ms", a.SegmentDurationMS)
	}
	sawAudio := false
	for i, tr := range a.Tracks {
		if tr.Kind == media.Audio {
			sawAudio = true
		} else if sawAudio {
			t.Errorf("video track %s after audio", tr.ID)
		}
		if i > 0 && tr.Kind == media.Video && a.Tracks[i-1].Bandwidth > tr.Bandwidth {
			t.Errorf("video tracks not in ascending bandwidth: %s", tr.ID)
		}
		init, err := os.ReadFile(filepath.Join(dir, tr.InitPath))
		if err != nil {
			t.Fatal(err)
		}
		in, err := cmaf.ParseInit(init)
		if err != nil {
			t.Fatalf("%s: %v", tr.InitPath, err)
		}
		if in.Info.Codec != tr.Codec || in.Info.Timescale != tr.Timescale {
			t.Errorf("%s: init says %+v, descriptor %s/%d", tr.ID, in.Info, tr.Codec, tr.Timescale)
		}
		var total uint64
		peak := 0.0
		for _, s := range tr.Segments {
			b, err := os.ReadFile(filepath.Join(dir, s.Path))
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(b)) != s.Size || s.Path != tr.ID+"/"+strconv.FormatUint(s.Number, 10)+".m4s" {
				t.Errorf("%s: size %d / path %s", s.Path, len(b), s.Path)
			}
			p, err := cmaf.ParseSegment(b, in.Defaults)
			if err != nil {
				t.Fatalf("%s: %v", s.Path, err)
			}
			if p.Fragments[0].BaseMediaDecodeTime != s.Start || p.Duration() != s.Duration || !p.Fragments[0].Keyframe() {
				t.Errorf("%s: tfdt %d duration %d, descriptor %+v", s.Path, p.Fragments[0].BaseMediaDecodeTime, p.Duration(), s)
			}
			if tr.Kind == media.Video && tr.Duration(s.Duration) != segDur {
				t.Errorf("%s lasts %s, want %s", s.Path, tr.Duration(s.Duration), segDur)
			}
			if tr.Kind == media.Audio && math.Abs(tr.Duration(s.Duration).Seconds()-segDur.Seconds()) > 1024.0/48000 {
				t.Errorf("%s lasts %s, want %s ± one AAC frame", s.Path, tr.Duration(s.Duration), segDur)
			}
			peak = math.Max(peak, float64(s.Size*8)/tr.Seconds(s.Duration))
			total += s.Duration
		}
		if tr.Bandwidth != int(math.Ceil(peak)) {
			t.Errorf("%s: bandwidth %d, peak %f", tr.ID, tr.Bandwidth, peak)
		}
		if tr.Duration(total) != time.Duration(a.DurationMS)*time.Millisecond {
			t.Errorf("%s lasts %s, asset %d ms: would not loop", tr.ID, tr.Duration(total), a.DurationMS)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("leftover %s in the asset", e.Name())
		}
	}
	return a
}

func TestTestmediaAsset(t *testing.T) {
	dir := testmedia.Asset(t)
	a := checkAsset(t, dir, 2*time.Second)
	var ids []string
	for _, tr := range a.Tracks {
		ids = append(ids, tr.ID)
	}
	if got := strings.Join(ids, ","); got != "v180,v360,a64" || a.DurationMS != 8000 || a.Name != "test" {
		t.Errorf("tracks %s, %d ms, name %q", got, a.DurationMS, a.Name)
	}
	v := a.Tracks[1]
	if v.Width != 640 || v.Height != 360 || v.FrameRate != "25" || !strings.HasPrefix(v.Codec, "avc1.") || len(v.Segments) != 4 {
		t.Errorf("v360: %+v", v)
	}
	au := a.Tracks[2]
	if au.Codec != "mp4a.40.2" || au.SampleRate != 48000 || au.Channels != 2 || au.Timescale != 48000 {
		t.Errorf("a64: %+v", au)
	}
}

func TestSegmentDurations(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes 56 s of video")
	}
	tests := []struct {
		seg      time.Duration
		synth    time.Duration
		segments int
	}{
		{time.Second, 8 * time.Second, 8},
		{2 * time.Second, 9 * time.Second, 4}, // trimmed to 8 s
		{10 * time.Second, 40 * time.Second, 4},
	}
	for _, tc := range tests {
		t.Run(tc.seg.String(), func(t *testing.T) {
			o := small(filepath.Join(t.TempDir(), "a"), tc.synth)
			o.SegmentDuration = tc.seg
			res, err := pkg.Package(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			a := checkAsset(t, o.OutDir, tc.seg)
			for _, tr := range a.Tracks {
				if len(tr.Segments) != tc.segments {
					t.Errorf("%s: %d segments, want %d", tr.ID, len(tr.Segments), tc.segments)
				}
			}
			if want := tc.synth - time.Duration(a.DurationMS)*time.Millisecond; res.Trimmed != want {
				t.Errorf("trimmed %s, want %s", res.Trimmed, want)
			}
		})
	}
}

// Several AAC renditions (the published ladder's 64k and 128k): one track each, after
// the video in ascending bandwidth, every one whole and loopable; a repeated bitrate
// is refused.
func TestExtraAudioTracks(t *testing.T) {
	o := small(filepath.Join(t.TempDir(), "a"), 8*time.Second)
	o.ExtraAudioBitrates = []int{32000}
	if _, err := pkg.Package(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	a := checkAsset(t, o.OutDir, pkg.DefaultSegmentDuration)
	var ids []string
	for _, tr := range a.Tracks {
		if tr.Kind == media.Audio {
			ids = append(ids, tr.ID)
			if len(tr.Segments) != 4 {
				t.Errorf("%s: %d segments, want 4", tr.ID, len(tr.Segments))
			}
		}
	}
	if strings.Join(ids, ",") != "a32,a64" {
		t.Errorf("audio tracks %v, want a32,a64", ids)
	}
	o.ExtraAudioBitrates = []int{64000}
	if _, err := pkg.Package(context.Background(), o); err == nil {
		t.Error("a repeated audio bitrate was accepted")
	}
}

func TestReuseAndReplace(t *testing.T) {
	parent := t.TempDir()
	o := small(filepath.Join(parent, "clip"), 8*time.Second)
	var log bytes.Buffer
	o.Log = &log
	res, err := pkg.Package(context.Background(), o)
	if err != nil || res.UpToDate {
		t.Fatalf("first run: %v, up to date %v", err, res != nil && res.UpToDate)
	}
	if !strings.Contains(log.String(), "encoding clip 100%") {
		t.Errorf("no progress lines on a non-terminal:\n%s", log.String())
	}
	desc := filepath.Join(o.OutDir, media.AssetFile)
	before, _ := os.Stat(desc)

	res, err = pkg.Package(context.Background(), o)
	if err != nil || !res.UpToDate || res.Asset.Fingerprint == "" {
		t.Fatalf("second run: %v, up to date %v", err, res != nil && res.UpToDate)
	}
	after, _ := os.Stat(desc)
	if !after.ModTime().Equal(before.ModTime()) {
		t.Error("the up-to-date run rewrote the descriptor")
	}

	// A changed setting re-packages in place; nothing is left beside it.
	o.SegmentDuration = time.Second
	res, err = pkg.Package(context.Background(), o)
	if err != nil || res.UpToDate {
		t.Fatalf("changed run: %v", err)
	}
	checkAsset(t, o.OutDir, time.Second)
	assertOnly(t, parent, "clip")

	// --force: Invalidate makes the next run re-encode.
	if err := pkg.Invalidate(o.OutDir); err != nil {
		t.Fatal(err)
	}
	if res, err = pkg.Package(context.Background(), o); err != nil || res.UpToDate {
		t.Fatalf("forced run: %v", err)
	}
}

// assertOnly checks that dir holds exactly the named entries.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("%s holds %v, want %v", dir, got, names)
	}
}

// cancelOnWrite cancels a context when the packager first reports encoding progress.
type cancelOnWrite struct {
	once   sync.Once
	cancel context.CancelFunc
}

func (c *cancelOnWrite) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("encoding")) {
		c.once.Do(c.cancel)
	}
	return len(p), nil
}

func TestCancelLeavesNothing(t *testing.T) {
	parent := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := small(filepath.Join(parent, "long"), 10*time.Minute)
	o.Ladder = []pkg.Rung{{Height: 720, Bitrate: 1500000}}
	o.Preset = "veryfast"
	o.Log = &cancelOnWrite{cancel: cancel}
	start := time.Now()
	_, err := pkg.Package(ctx, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("cancel took %s", time.Since(start))
	}
	assertOnly(t, parent) // no DIR, no DIR.tmp-*
}

func TestCancelKeepsOldAsset(t *testing.T) {
	parent := t.TempDir()
	o := small(filepath.Join(parent, "a"), 8*time.Second)
	if _, err := pkg.Package(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.Synthetic = 10 * time.Minute
	o.Log = &cancelOnWrite{cancel: cancel}
	if _, err := pkg.Package(ctx, o); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	a := checkAsset(t, o.OutDir, 2*time.Second)
	if a.Source != "synthetic:8s" {
		t.Errorf("old asset replaced: %s", a.Source)
	}
	assertOnly(t, parent, "a")
}

func TestInputErrors(t *testing.T) {
	parent := t.TempDir()
	good := filepath.Join(parent, "good.mp4")
	ffmpeg(t, "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25", "-f", "lavfi", "-i", "sine", "-t", "3",
		"-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", good)
	b, _ := os.ReadFile(good)
	faststart := filepath.Join(parent, "faststart.mp4")
	ffmpeg(t, "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25", "-f", "lavfi", "-i", "sine", "-t", "10",
		"-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-movflags", "+faststart", faststart)
	fs, _ := os.ReadFile(faststart)
	write := func(name string, data []byte) string {
		p := filepath.Join(parent, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{"garbage", write("garbage.mp4", bytes.Repeat([]byte("garbage "), 1000)), []string{"garbage.mp4", "not a media file", "Invalid data"}},
		{"truncated", write("truncated.mp4", b[:len(b)/2]), []string{"truncated.mp4", "not a media file", "moov atom not found"}},
		{"truncated after the index", write("cut.mp4", fs[:len(fs)/3]), []string{"cut.mp4", "ended early", "ffmpeg said", "partial file"}},
		{"text", write("notes.txt", []byte("hello\n")), []string{"notes.txt"}},
		{"missing", filepath.Join(parent, "missing.mp4"), []string{"missing.mp4", "no such file"}},
		{"too short", good, []string{"good.mp4", "lasts 3s, shorter than one loop period of 8s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			_, err := pkg.Package(context.Background(), pkg.Options{Input: tc.input, OutDir: out, Preset: "ultrafast",
				Ladder: []pkg.Rung{{Height: 180, Bitrate: 100000}}})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("output folder exists after a failure")
			}
			assertOnly(t, filepath.Dir(out))
		})
	}
}

func TestFileInput(t *testing.T) {
	parent := t.TempDir()
	in := filepath.Join(parent, "in.mkv")
	// 9.5 s at 30 fps with 44.1 kHz mono audio, 360p: resampled, re-timed, trimmed.
	ffmpeg(t, "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-f", "lavfi", "-i", "sine=sample_rate=44100",
		"-t", "9.5", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-ac", "1", in)
	o := pkg.Options{Input: in, OutDir: filepath.Join(parent, "out"), Preset: "ultrafast", AudioBitrate: 64000,
		Ladder: []pkg.Rung{{Height: 180, Bitrate: 100000}, {Height: 720, Bitrate: 1500000}}}
	res, err := pkg.Package(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	a := checkAsset(t, o.OutDir, 2*time.Second)
	// FFmpeg reports the container's length, a little over 9.5 s with AAC padding.
	if a.DurationMS != 8000 || res.Trimmed != res.InputDuration-8*time.Second || res.InputDuration < 9500*time.Millisecond ||
		res.InputDuration > 9600*time.Millisecond || len(res.Skipped) != 1 || a.Name != "out" {
		t.Errorf("duration %d ms, trimmed %s, skipped %v, name %s", a.DurationMS, res.Trimmed, res.Skipped, a.Name)
	}
	if len(a.Tracks) != 2 || a.Tracks[0].FrameRate != "25" || a.Tracks[1].Channels != 2 || a.Tracks[1].SampleRate != 48000 {
		t.Errorf("tracks %+v %+v", a.Tracks[0], a.Tracks[1])
	}
}

func TestMissingFFmpeg(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := pkg.Package(context.Background(), small(filepath.Join(t.TempDir(), "x"), 8*time.Second))
	if !errors.Is(err, pkg.ErrFFmpegMissing) || err.Error() != "ffmpeg not found: install it (Debian: apt-get install ffmpeg)" {
		t.Errorf("err = %v", err)
	}
}

func TestRefusesToReplaceOtherFolders(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "precious.txt"), []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := pkg.Package(context.Background(), small(dir, 8*time.Second))
	if err == nil || !strings.Contains(err.Error(), "refusing to replace") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "precious.txt")); err != nil {
		t.Error("the folder was touched")
	}
}

func ffmpeg(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("ffmpeg", append([]string{"-hide_banner", "-nostdin", "-y", "-loglevel", "error"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
}
