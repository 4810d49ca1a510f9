package cmaf

import (
	"bytes"
	"errors"
	"testing"

	"github.com/streambed/streambed/internal/media"
)

func TestRechunk(t *testing.T) {
	video := synthSamples(50, 50, 512, 1)
	audio := synthSamples(94, 0, 1024, 2)
	tests := []struct {
		name      string
		seg       []byte
		per       int
		chunks    int
		start     uint64
		duration  uint64
		keyframes int // chunks starting with a sync sample
	}{
		{"video one frame per chunk", ownSegment(t, 4, 102400, video), 1, 50, 102400, 50 * 512, 1},
		{"video 7 frames per chunk", ownSegment(t, 4, 0, video), 7, 8, 0, 50 * 512, 1},
		{"video from mp4ff, whole", mp4ffSegment(t, true, 1, 0, video), 100, 1, 0, 50 * 512, 1},
		{"audio 4 per chunk", ownSegment(t, 1, 96256, audio), 4, 24, 96256, 94 * 1024, 24},
		{"two fragments never merge", mp4ffSegment(t, false, 1, 512, video[:3], video[3:5]), 2, 3, 512, 5 * 512, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			chunks, err := Rechunk(tc.seg, tc.per)
			if err != nil {
				t.Fatal(err)
			}
			if len(chunks) != tc.chunks {
				t.Fatalf("%d chunks, want %d", len(chunks), tc.chunks)
			}
			if !chunks[0].Keyframe {
				t.Error("first chunk is not a keyframe")
			}
			if chunks[0].Start != tc.start {
				t.Errorf("first chunk starts at %d, want %d", chunks[0].Start, tc.start)
			}
			var sum uint64
			keys := 0
			var payload, want [][]byte
			orig, err := ParseSegment(tc.seg, TrackDefaults{})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range orig.Fragments {
				for _, s := range f.Samples {
					want = append(want, s.Data)
				}
			}
			for i, c := range chunks {
				if c.Start != tc.start+sum {
					t.Errorf("chunk %d starts at %d, want %d", i, c.Start, tc.start+sum)
				}
				sum += c.Duration
				if c.Keyframe {
					keys++
				}
				hasStyp := bytes.HasPrefix(c.Data[4:], []byte("styp"))
				if hasStyp != (i == 0 && orig.Styp != nil) {
					t.Errorf("chunk %d: styp %v", i, hasStyp)
				}
				p, err := ParseSegment(c.Data, TrackDefaults{})
				if err != nil {
					t.Fatalf("chunk %d does not parse: %v", i, err)
				}
				if len(p.Fragments) != 1 || p.Fragments[0].BaseMediaDecodeTime != c.Start ||
					p.Fragments[0].Duration() != c.Duration || p.Fragments[0].Keyframe() != c.Keyframe {
					t.Errorf("chunk %d: parsed %+v, chunk says start %d duration %d", i, p.Fragments, c.Start, c.Duration)
				}
				for _, s := range p.Fragments[0].Samples {
					payload = append(payload, s.Data)
				}
				decodeWithMp4ff(t, c.Data)
			}
			if sum != tc.duration {
				t.Errorf("chunk durations add up to %d, want %d", sum, tc.duration)
			}
			if keys != tc.keyframes {
				t.Errorf("%d keyframe chunks, want %d", keys, tc.keyframes)
			}
			if !bytes.Equal(bytes.Join(payload, nil), bytes.Join(want, nil)) {
				t.Error("sample data changed")
			}
		})
	}
}

func TestRechunkErrors(t *testing.T) {
	seg := ownSegment(t, 1, 0, synthSamples(3, 3, 512, 1))
	if _, err := Rechunk(seg, 0); !errors.Is(err, media.ErrBadRequest) {
		t.Errorf("0 samples per chunk: err = %v", err)
	}
	if _, err := Rechunk(seg[:len(seg)-1], 1); !errors.Is(err, media.ErrInvalidMedia) {
		t.Errorf("truncated: err = %v", err)
	}
}
