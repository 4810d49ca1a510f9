package cmaf

import (
	"errors"
	"testing"

	"github.com/streambed/streambed/internal/media"
)

// scanAll feeds b to a scanner in pieces of step bytes.
func scanAll(b []byte, step int) ([]Fragment, error) {
	s := NewChunkScanner()
	var out []Fragment
	for off := 0; off < len(b); off += step {
		f, err := s.Write(b[off:min(off+step, len(b))])
		out = append(out, f...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func TestChunkScannerFindsEveryChunkWhateverTheSplit(t *testing.T) {
	v := synthSamples(6, 3, 512, 1)
	seg := append(StypBox(), ownSegment(t, 7, 1<<40, v[:2], v[2:4], v[4:])...)
	want, err := ParseSegment(seg, TrackDefaults{})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []int{1, 7, 100, len(seg)} {
		got, err := scanAll(seg, step)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if len(got) != len(want.Fragments) {
			t.Fatalf("step %d: %d fragments, want %d", step, len(got), len(want.Fragments))
		}
		for i := range got {
			if got[i].BaseMediaDecodeTime != want.Fragments[i].BaseMediaDecodeTime || got[i].Duration() != want.Fragments[i].Duration() {
				t.Errorf("step %d fragment %d: tfdt %d dur %d, want %d %d", step, i, got[i].BaseMediaDecodeTime, got[i].Duration(),
					want.Fragments[i].BaseMediaDecodeTime, want.Fragments[i].Duration())
			}
		}
	}
}

func TestChunkScannerReportsAChunkOnlyWhenItsMdatIsComplete(t *testing.T) {
	v := synthSamples(4, 2, 256, 1)
	seg := ownSegment(t, 1, 0, v[:2], v[2:])
	frags, _ := ParseFragments(seg)
	s := NewChunkScanner()
	first := frags[0].Offset + frags[0].Size
	got, err := s.Write(seg[:first-1])
	if err != nil || len(got) != 0 {
		t.Fatalf("before the first mdat's last byte: %d fragments, %v", len(got), err)
	}
	got, err = s.Write(seg[first-1 : first])
	if err != nil || len(got) != 1 {
		t.Fatalf("at the first mdat's last byte: %d fragments, %v; want 1", len(got), err)
	}
}

func TestChunkScannerRefusesBadBoxes(t *testing.T) {
	v := synthSamples(2, 1, 64, 1)
	good := ownSegment(t, 1, 0, v)
	huge := NewChunkScanner()
	huge.MaxChunk = 100
	cases := map[string]struct {
		s *ChunkScanner
		b []byte
	}{
		"size below header": {NewChunkScanner(), []byte{0, 0, 0, 3, 'm', 'o', 'o', 'f'}},
		"init box":          {NewChunkScanner(), append([]byte{0, 0, 0, 8}, "moov"...)},
		"mdat first":        {NewChunkScanner(), append([]byte{0, 0, 0, 8}, "mdat"...)},
		"chunk over cap":    {huge, good[:len(good)-1]}, // held while incomplete
	}
	for name, c := range cases {
		_, err := c.s.Write(c.b)
		if !errors.Is(err, media.ErrInvalidMedia) {
			t.Errorf("%s: %v, want ErrInvalidMedia", name, err)
		}
		if _, again := c.s.Write([]byte{1}); again == nil {
			t.Errorf("%s: the scan went on after an error", name)
		}
	}
}

func FuzzChunkScanner(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, b []byte, step uint8) {
		got, err := scanAll(b, int(step)+1)
		if err != nil && !errors.Is(err, media.ErrInvalidMedia) {
			t.Fatalf("error does not wrap ErrInvalidMedia: %v", err)
		}
		// Whatever the split, a whole segment that parses scans to the same fragments.
		if p, perr := ParseSegment(b, TrackDefaults{}); perr == nil && err == nil {
			if len(got) != len(p.Fragments) {
				t.Fatalf("%d fragments scanned, %d parsed", len(got), len(p.Fragments))
			}
		}
	})
}
