package fdsp

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// probeTS has ffprobe decode every frame of a transport stream and returns the
// frames per codec type ("video", "audio"); any error output fails the test.
func probeTS(t *testing.T, ts []byte) map[string]int {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rx.ts")
	if err := os.WriteFile(p, ts, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ffprobe", "-v", "error", "-count_frames", "-show_streams", "-of", "json", p)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("ffprobe: %v\n%s", err, stderr.String())
	}
	var pr struct {
		Streams []struct {
			CodecType string `json:"codec_type"`
			CodecName string `json:"codec_name"`
			Frames    string `json:"nb_read_frames"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(out, &pr); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, s := range pr.Streams {
		n, _ := strconv.Atoi(s.Frames)
		got[s.CodecType+"/"+s.CodecName] = n
	}
	return got
}

// TestTSOutput plays the test asset (H.264 with B-frames, AAC) over loopback into
// the MPEG-TS sink: ffprobe decodes every access unit played and every audio frame
// sent, with no errors.
func TestTSOutput(t *testing.T) {
	h := testAsset(t)
	s := startServer(t, h, Options{Substream: 2 * time.Second})
	for _, mode := range []Mode{ModeFDSP, ModeTCP} {
		t.Run(mode.String(), func(t *testing.T) {
			var ts bytes.Buffer
			st, err := Play(context.Background(), ClientOptions{Addr: s.Addr().String(), Stream: "vod/asset", Mode: mode, BP: 100, NewSink: TSSink(&ts, nil)})
			if err != nil {
				t.Fatal(err)
			}
			if st.AUs != 200 || st.AudioFrames == 0 {
				t.Fatalf("stats %+v", st)
			}
			got := probeTS(t, ts.Bytes())
			want := map[string]int{"video/h264": st.AUs, "audio/aac": st.AudioFrames}
			if len(got) != 2 || got["video/h264"] != want["video/h264"] || got["audio/aac"] != want["audio/aac"] {
				t.Fatalf("ffprobe decoded %v, want %v", got, want)
			}
		})
	}
}

// TestTSOutputWithoutAudioConfig: a server that sends no AudioConfig (an older
// one, or a stream without audio) gives a video-only transport stream that still
// decodes, rather than an error.
func TestTSOutputWithoutAudioConfig(t *testing.T) {
	h := testAsset(t)
	s := startServer(t, h, Options{Substream: 2 * time.Second})
	var ts bytes.Buffer
	newSink := TSSink(&ts, nil)
	st, err := Play(context.Background(), ClientOptions{Addr: s.Addr().String(), Stream: "vod/asset", Mode: ModeTCP,
		NewSink: func([]byte) (Sink, error) { return newSink(nil) }})
	if err != nil {
		t.Fatal(err)
	}
	got := probeTS(t, ts.Bytes())
	if len(got) != 1 || got["video/h264"] != st.AUs {
		t.Fatalf("ffprobe decoded %v, want only video/h264: %d", got, st.AUs)
	}
}
