package mpegts

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// encode makes a 2 s clip with FFmpeg: Annex-B H.264 (25 fps, no B-frames, an
// AUD before each access unit) and ADTS AAC at 48 kHz stereo.
func encode(t *testing.T) (video, audio []byte) {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Fatal("ffmpeg not found: the MPEG-TS tests encode and decode with it; `make test` installs it")
	}
	dir := t.TempDir()
	v, a := filepath.Join(dir, "v.h264"), filepath.Join(dir, "a.aac")
	out, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error",
		"-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25:duration=2",
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2", "-ac", "2",
		"-map", "0:v", "-c:v", "libx264", "-preset", "ultrafast", "-bf", "0", "-g", "25", "-bsf:v", "h264_metadata=aud=insert", "-f", "h264", v,
		"-map", "1:a", "-c:a", "aac", "-f", "adts", a).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	video, _ = os.ReadFile(v)
	audio, _ = os.ReadFile(a)
	return video, audio
}

// splitAUs cuts an Annex-B stream at each access unit delimiter.
func splitAUs(b []byte) [][]byte {
	aud := []byte{0, 0, 0, 1, 9}
	var aus [][]byte
	for len(b) > 0 {
		i := bytes.Index(b[1:], aud)
		if i < 0 {
			aus = append(aus, b)
			break
		}
		aus = append(aus, b[:i+1])
		b = b[i+1:]
	}
	return aus
}

// splitADTS returns the raw AAC frames of an ADTS stream (headers without CRC).
func splitADTS(t *testing.T, b []byte) [][]byte {
	var frames [][]byte
	for len(b) >= 7 {
		n := int(b[3]&3)<<11 | int(b[4])<<3 | int(b[5])>>5
		if b[0] != 0xFF || n < 7 || n > len(b) {
			t.Fatalf("bad ADTS header % x", b[:7])
		}
		frames = append(frames, b[7:n])
		b = b[n:]
	}
	return frames
}

type probe struct {
	Streams []struct {
		CodecType  string `json:"codec_type"`
		CodecName  string `json:"codec_name"`
		NbFrames   string `json:"nb_read_frames"`
		SampleRate string `json:"sample_rate"`
		Channels   int    `json:"channels"`
	} `json:"streams"`
}

// TestWriterDecodes muxes FFmpeg's own H.264 and AAC with the writer and has
// ffprobe decode every frame of both streams back, with no errors on stderr.
func TestWriterDecodes(t *testing.T) {
	video, audio := encode(t)
	aus, frames := splitAUs(video), splitADTS(t, audio)
	if len(aus) != 50 || len(frames) < 90 {
		t.Fatalf("fixture: %d access units, %d AAC frames", len(aus), len(frames))
	}
	// AudioSpecificConfig of AAC-LC, 48 kHz (index 3), stereo.
	ac, err := ParseAudioSpecificConfig([]byte{0x11, 0x90})
	if err != nil {
		t.Fatal(err)
	}
	var ts bytes.Buffer
	w := NewWriter(&ts, &ac)
	const start = 900000 // 10 s: times need not start at 0
	ai := 0
	for i, au := range aus {
		pts := int64(start + i*3600)
		for ; ai < len(frames) && int64(start+ai*1024*90000/48000) <= pts; ai++ {
			if err := w.WriteAudio(int64(start+ai*1024*90000/48000), frames[ai]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.WriteVideo(pts, pts, au, i%25 == 0); err != nil {
			t.Fatal(err)
		}
	}
	for ; ai < len(frames); ai++ {
		if err := w.WriteAudio(int64(start+ai*1024*90000/48000), frames[ai]); err != nil {
			t.Fatal(err)
		}
	}
	if ts.Len()%188 != 0 {
		t.Fatalf("%d bytes: not whole TS packets", ts.Len())
	}
	p := filepath.Join(t.TempDir(), "out.ts")
	if err := os.WriteFile(p, ts.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ffprobe", "-v", "error", "-count_frames", "-show_streams", "-of", "json", p)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("ffprobe: %v\n%s", err, stderr.String())
	}
	var pr probe
	if err := json.Unmarshal(out, &pr); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range pr.Streams {
		got[s.CodecType] = s.CodecName + "/" + s.NbFrames
		if s.CodecType == "audio" && (s.SampleRate != "48000" || s.Channels != 2) {
			t.Fatalf("audio %s Hz, %d channels", s.SampleRate, s.Channels)
		}
	}
	want := map[string]string{"video": "h264/50", "audio": "aac/" + itoa(len(frames))}
	if got["video"] != want["video"] || got["audio"] != want["audio"] {
		t.Fatalf("decoded %v, want %v", got, want)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestParseAudioSpecificConfig(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		ok   bool
		want AudioConfig
	}{
		{[]byte{0x12, 0x10}, true, AudioConfig{2, 4, 2}}, // AAC-LC 44.1 kHz stereo
		{[]byte{0x11, 0x88}, true, AudioConfig{2, 3, 1}}, // 48 kHz mono
		{[]byte{0x12}, false, AudioConfig{}},
		{[]byte{0xF8, 0x10}, false, AudioConfig{}}, // escape object type
		{[]byte{0x17, 0x90}, false, AudioConfig{}}, // explicit sample rate
		{[]byte{0x11, 0x80}, false, AudioConfig{}}, // channels in the program config element
	} {
		got, err := ParseAudioSpecificConfig(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("% x: %+v, %v", tc.in, got, err)
		}
	}
}

// TestVideoOnly: without audio the PMT names one stream and audio is refused.
func TestVideoOnly(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b, nil)
	if err := w.WriteAudio(0, []byte{1}); err == nil {
		t.Fatal("audio accepted by a video-only writer")
	}
	if err := w.WriteVideo(0, 0, []byte{0, 0, 0, 1, 0x65, 0x88}, true); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 3*188 || b.Bytes()[0] != 0x47 {
		t.Fatalf("%d bytes", b.Len())
	}
}

// TestCRC is CRC-32/MPEG-2's check value.
func TestCRC(t *testing.T) {
	if got := crc32MPEG([]byte("123456789")); got != 0x0376E6E7 {
		t.Fatalf("crc %08x", got)
	}
}
