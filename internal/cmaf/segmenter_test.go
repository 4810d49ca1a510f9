package cmaf

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
)

// ffmpeg runs FFmpeg with args, failing the test with instructions when it is missing.
func ffmpeg(t *testing.T, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Fatal("ffmpeg not found: install it (Debian: apt-get install ffmpeg); the segmenter tests encode their inputs")
	}
	cmd := exec.Command("ffmpeg", append([]string{"-hide_banner", "-nostdin", "-y", "-loglevel", "error"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// encodeFixtures makes 20 s one-track inputs: 25 fps video with a keyframe every
// second (without and with B-frames, progressive and fragmented) and 48 kHz AAC.
func encodeFixtures(t *testing.T) map[string]string {
	dir := t.TempDir()
	x264 := []string{"-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-keyint_min", "25", "-sc_threshold", "0",
		"-force_key_frames", "expr:gte(t,n_forced*1)", "-pix_fmt", "yuv420p", "-an"}
	src := []string{"-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25", "-t", "20"}
	f := map[string]string{
		"video":      filepath.Join(dir, "video.mp4"),
		"bframes":    filepath.Join(dir, "bframes.mp4"),
		"fragmented": filepath.Join(dir, "fragmented.mp4"),
		"audio":      filepath.Join(dir, "audio.mp4"),
	}
	ffmpeg(t, append(append(src, x264...), "-bf", "0", f["video"])...)
	ffmpeg(t, append(append(src, x264...), "-bf", "2", f["bframes"])...)
	ffmpeg(t, append(append(src, x264...), "-bf", "0", "-movflags", "frag_keyframe+empty_moov+default_base_moof", f["fragmented"])...)
	ffmpeg(t, "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "20", "-c:a", "aac", "-b:a", "64k", "-ac", "2", f["audio"])
	return f
}

func TestSegmenter(t *testing.T) {
	files := encodeFixtures(t)
	tests := []struct {
		file      string
		seg       time.Duration
		kind      media.Kind
		codec     string
		segments  int
		perSeg    int // samples per segment (video)
		timescale uint32
	}{
		{"video", time.Second, media.Video, "avc1.42c00c", 20, 25, 12800},
		{"video", 2 * time.Second, media.Video, "avc1.42c00c", 10, 50, 12800},
		{"video", 10 * time.Second, media.Video, "avc1.42c00c", 2, 250, 12800},
		{"bframes", 2 * time.Second, media.Video, "avc1.4d400c", 10, 50, 12800},
		{"fragmented", 2 * time.Second, media.Video, "avc1.42c00c", 10, 50, 12800},
		{"audio", time.Second, media.Audio, "mp4a.40.2", 20, 0, 48000},
		{"audio", 2 * time.Second, media.Audio, "mp4a.40.2", 10, 0, 48000},
		{"audio", 10 * time.Second, media.Audio, "mp4a.40.2", 2, 0, 48000},
	}
	for _, tc := range tests {
		t.Run(tc.file+"/"+tc.seg.String(), func(t *testing.T) {
			in, err := Open(files[tc.file])
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			info := in.Info()
			if info.Kind != tc.kind || info.Codec != tc.codec || info.Timescale != tc.timescale ||
				(tc.kind == media.Video && (info.FrameRate != "25" || info.Width != 320 || info.Height != 180)) ||
				(tc.kind == media.Audio && (info.SampleRate != 48000 || info.Channels != 2)) {
				t.Fatalf("info %+v", info)
			}
			init, err := in.Init()
			if err != nil {
				t.Fatal(err)
			}
			pi, err := ParseInit(init)
			if err != nil {
				t.Fatalf("own init does not parse: %v", err)
			}
			want := info
			want.FrameRate = "" // an init segment has no sample table to tell
			if pi.Info != want || pi.TrackID != OutputTrackID {
				t.Errorf("init says %+v, input %+v", pi.Info, info)
			}
			var refs []media.SegmentRef
			whole := append([]byte(nil), init...)
			err = in.Segment(tc.seg, func(ref media.SegmentRef, data []byte) error {
				p, err := ParseSegment(data, TrackDefaults{})
				if err != nil {
					return err
				}
				f := p.Fragments[0]
				if len(p.Fragments) != 1 || p.Styp == nil || f.SequenceNumber != uint32(ref.Number) ||
					f.BaseMediaDecodeTime != ref.Start || f.Duration() != ref.Duration || int64(len(data)) != ref.Size {
					t.Errorf("segment %d: ref %+v, parsed seq %d tfdt %d duration %d size %d", ref.Number, ref,
						f.SequenceNumber, f.BaseMediaDecodeTime, f.Duration(), len(data))
				}
				if !f.Keyframe() {
					t.Errorf("segment %d does not start with a sync sample", ref.Number)
				}
				if tc.perSeg > 0 && len(f.Samples) != tc.perSeg {
					t.Errorf("segment %d: %d samples, want %d", ref.Number, len(f.Samples), tc.perSeg)
				}
				if tc.kind == media.Video { // the inputs have a keyframe every second
					keys := 0
					for _, s := range f.Samples {
						if s.IsSync() {
							keys++
						}
					}
					if want := int(tc.seg / time.Second); keys != want {
						t.Errorf("segment %d: %d keyframes, want %d", ref.Number, keys, want)
					}
				}
				refs = append(refs, ref)
				whole = append(whole, data...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(refs) != tc.segments {
				t.Fatalf("%d segments, want %d", len(refs), tc.segments)
			}
			var total uint64
			for i, r := range refs {
				if r.Number != uint64(i+1) {
					t.Errorf("segment %d numbered %d", i+1, r.Number)
				}
				if i > 0 && r.Start != refs[i-1].End() {
					t.Errorf("segment %d starts at %d, previous ended at %d", r.Number, r.Start, refs[i-1].End())
				}
				// Each segment starts at the first sample at or after its boundary.
				b := Boundary(uint64(i), tc.seg, tc.timescale)
				want := b
				if tc.kind == media.Audio {
					want = (b + 1023) / 1024 * 1024
				}
				if r.Start != want {
					t.Errorf("segment %d starts at %d, want %d", r.Number, r.Start, want)
				}
				total += r.Duration
			}
			if refs[0].Start != 0 || total != in.Duration() {
				t.Errorf("segments cover [%d, %d), track lasts %d", refs[0].Start, total, in.Duration())
			}
			if tc.kind == media.Video && total != 20*uint64(tc.timescale) {
				t.Errorf("video lasts %d ticks, want 20 s", total)
			}
			// FFmpeg decodes init + segments as one file, every frame.
			out := filepath.Join(t.TempDir(), "whole.mp4")
			if err := os.WriteFile(out, whole, 0o644); err != nil {
				t.Fatal(err)
			}
			frames := countFrames(t, out)
			if frames != in.NumSamples() {
				t.Errorf("ffprobe counts %d frames in the segments, want %d", frames, in.NumSamples())
			}
		})
	}
}

func countFrames(t *testing.T, path string) int {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames",
		"-of", "default=nw=1:nk=1", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("ffprobe: %q", out)
	}
	return n
}

func TestSegmenterAudioEditList(t *testing.T) {
	// FFmpeg's AAC encoder adds 1024 priming samples and an edit list that skips them;
	// with -t 8 the track must come out exactly 8 s long: 375 frames.
	out := filepath.Join(t.TempDir(), "a.mp4")
	ffmpeg(t, "-f", "lavfi", "-i", "sine=sample_rate=48000", "-t", "8", "-c:a", "aac", "-b:a", "64k", out)
	in, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if in.Duration() != 8*48000 || in.NumSamples() != 375 {
		t.Errorf("duration %d ticks, %d samples; want %d, 375", in.Duration(), in.NumSamples(), 8*48000)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.mp4")
	ffmpeg(t, "-f", "lavfi", "-i", "testsrc2=size=64x64:rate=25", "-t", "1", "-c:v", "libx264", "-preset", "ultrafast", good)
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	both := filepath.Join(dir, "both.mp4")
	ffmpeg(t, "-f", "lavfi", "-i", "testsrc2=size=64x64:rate=25", "-f", "lavfi", "-i", "sine", "-t", "1",
		"-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", both)
	moov := bytes.Index(b, []byte("moov"))
	tests := []struct {
		name, path string
	}{
		{"text", write("text.mp4", []byte("not an mp4 file, just words"))},
		{"empty", write("empty.mp4", nil)},
		{"moov cut", write("cut.mp4", b[:moov+100])},
		{"two tracks", both},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, err := Open(tc.path)
			if err == nil {
				in.Close()
				t.Fatal("no error")
			}
			if !errors.Is(err, media.ErrInvalidMedia) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("err = %v, want ErrInvalidMedia naming the file", err)
			}
		})
	}
	if _, err := Open(filepath.Join(dir, "missing.mp4")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
