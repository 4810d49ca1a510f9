package cmaf

import (
	"bytes"
	"errors"
	"testing"

	"github.com/streambed/streambed/internal/media"
)

// fuzzSeeds are small valid segments and some near misses, generated in-test so no
// corpus files need committing. `go test` runs them; `go test -fuzz FuzzX` explores.
func fuzzSeeds(t testing.TB) [][]byte {
	v := synthSamples(6, 3, 512, 1)
	a := synthSamples(4, 0, 1024, 2)
	seeds := [][]byte{
		ownSegment(t, 1, 0, v),
		ownSegment(t, 7, 1<<40, v[:2], v[2:]),
		mp4ffSegment(t, true, 1, 4096, a),
		mp4ffSegment(t, false, 3, 0, v[:3], v[3:]),
		defaultsSegment(512, 3, 5, 7),
		defaultsSegment(0, 1, 2),
		StypBox(),
		{},
	}
	good := seeds[0]
	seeds = append(seeds, good[:len(good)/2], good[:len(good)-1])
	return seeds
}

func FuzzParseSegment(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseSegment(b, TrackDefaults{SampleDuration: 1})
		if err != nil {
			if !errors.Is(err, media.ErrInvalidMedia) {
				t.Fatalf("error does not wrap ErrInvalidMedia: %v", err)
			}
			return
		}
		for _, fr := range p.Fragments {
			if fr.Offset < 0 || fr.Offset+fr.Size > len(b) {
				t.Fatalf("fragment outside input: %+v", fr)
			}
			for _, s := range fr.Samples {
				if len(s.Data) != int(s.Size) {
					t.Fatalf("sample data %d bytes, size %d", len(s.Data), s.Size)
				}
			}
		}
	})
}

func FuzzParseInit(f *testing.F) {
	f.Add(mp4ffInit(f, media.Video))
	f.Add(mp4ffInit(f, media.Audio))
	f.Add(mp4ffInit(f, media.Audio)[:60])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := ParseInit(b); err != nil && !errors.Is(err, media.ErrInvalidMedia) {
			t.Fatalf("error does not wrap ErrInvalidMedia: %v", err)
		}
	})
}

func FuzzRetime(f *testing.F) {
	for i, s := range fuzzSeeds(f) {
		f.Add(s, uint64(i)<<33, uint32(i))
	}
	f.Fuzz(func(t *testing.T, b []byte, base uint64, seq uint32) {
		in := append([]byte(nil), b...)
		out, err := Retime(b, base, seq)
		if !bytes.Equal(in, b) {
			t.Fatal("Retime modified its input")
		}
		if err != nil {
			if !errors.Is(err, media.ErrInvalidMedia) {
				t.Fatalf("error does not wrap ErrInvalidMedia: %v", err)
			}
			return
		}
		// When the input is a valid segment, the output must be one too, with the
		// same samples moved in time.
		p, err := ParseSegment(b, TrackDefaults{})
		if err != nil {
			return
		}
		q, err := ParseSegment(out, TrackDefaults{})
		if err != nil {
			t.Fatalf("Retime turned a valid segment invalid: %v", err)
		}
		if len(p.Fragments) != len(q.Fragments) {
			t.Fatalf("%d fragments became %d", len(p.Fragments), len(q.Fragments))
		}
		for i := range p.Fragments {
			pf, qf := p.Fragments[i], q.Fragments[i]
			if qf.SequenceNumber != seq+uint32(i) {
				t.Fatalf("fragment %d: sequence %d", i, qf.SequenceNumber)
			}
			if qf.BaseMediaDecodeTime-base != pf.BaseMediaDecodeTime-p.Fragments[0].BaseMediaDecodeTime {
				t.Fatalf("fragment %d: tfdt %d", i, qf.BaseMediaDecodeTime)
			}
			if len(pf.Samples) != len(qf.Samples) {
				t.Fatalf("fragment %d: sample count changed", i)
			}
			for j := range pf.Samples {
				if !bytes.Equal(pf.Samples[j].Data, qf.Samples[j].Data) || pf.Samples[j].Duration != qf.Samples[j].Duration {
					t.Fatalf("fragment %d sample %d changed", i, j)
				}
			}
		}
	})
}

func FuzzRechunk(f *testing.F) {
	for i, s := range fuzzSeeds(f) {
		f.Add(s, uint8(i%4))
	}
	f.Fuzz(func(t *testing.T, b []byte, n uint8) {
		chunks, err := Rechunk(b, int(n))
		if err != nil {
			if !errors.Is(err, media.ErrInvalidMedia) && !errors.Is(err, media.ErrBadRequest) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		p, err := ParseSegment(b, TrackDefaults{})
		if err != nil {
			t.Fatalf("Rechunk accepted what ParseSegment refuses: %v", err)
		}
		if p.Duration() != sumDurations(chunks) {
			t.Fatalf("chunk durations %d, segment %d", sumDurations(chunks), p.Duration())
		}
		for i, c := range chunks {
			if _, err := ParseSegment(c.Data, TrackDefaults{}); err != nil {
				t.Fatalf("chunk %d invalid: %v", i, err)
			}
		}
	})
}

func sumDurations(cs []media.Chunk) uint64 {
	var d uint64
	for _, c := range cs {
		d += c.Duration
	}
	return d
}
