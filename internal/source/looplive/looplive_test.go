package looplive

import (
	"bytes"
	"testing"
	"time"

	"github.com/Eyevinn/mp4ff/mp4"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/testmedia"
)

// fragments decodes a segment and returns each fragment's tfdt, sequence number and
// summed sample duration.
func fragments(t *testing.T, b []byte) (tfdts []uint64, seqs []uint32, durs []uint64) {
	t.Helper()
	f, err := mp4.DecodeFile(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if len(f.Segments) == 0 {
		t.Fatal("no segment in output")
	}
	for _, s := range f.Segments {
		for _, frag := range s.Fragments {
			traf := frag.Moof.Traf
			tfdts = append(tfdts, traf.Tfdt.BaseMediaDecodeTime())
			seqs = append(seqs, frag.Moof.Mfhd.SequenceNumber)
			var d uint64
			for _, trun := range traf.Truns {
				for _, smp := range trun.Samples {
					d += uint64(smp.Dur)
				}
			}
			if d == 0 && traf.Tfhd.HasDefaultSampleDuration() {
				d = uint64(traf.Tfhd.DefaultSampleDuration) * uint64(traf.Truns[0].SampleCount())
			}
			durs = append(durs, d)
		}
	}
	return tfdts, seqs, durs
}

// TestTfdtContinuousAcrossLoops walks each track over two loop boundaries and checks
// that every segment starts where the previous one ended, that video segment n starts
// at n·D, and that sequence numbers increase.
func TestTfdtContinuousAcrossLoops(t *testing.T) {
	for _, chunk := range []time.Duration{0, 40 * time.Millisecond} {
		a, err := hub.OpenAsset(testmedia.Asset(t))
		if err != nil {
			t.Fatal(err)
		}
		l, err := New(a, Options{ChunkDuration: chunk})
		if err != nil {
			t.Fatal(err)
		}
		info := a.Info()
		k := uint64(len(info.Tracks[0].Segments))
		var longest time.Duration // of the chunks made, which low-latency MPDs announce
		for _, tr := range info.Tracks {
			var prevEnd uint64
			var prevSeq uint32
			// Far into the epoch-anchored timeline, as a real channel is.
			first := 40_000_000 * k
			for n := first - 1; n <= first+2*k+1; n++ {
				s, err := l.Segment(tr.ID, n)
				if err != nil {
					t.Fatal(err)
				}
				for _, ch := range s.Chunks {
					longest = max(longest, tr.Duration(ch.Duration))
				}
				tfdts, seqs, durs := fragments(t, s.Bytes())
				if chunk > 0 && len(tfdts) < 2 {
					t.Fatalf("%s chunk %v: segment %d has %d fragments, want several", tr.ID, chunk, n, len(tfdts))
				}
				if tfdts[0] != s.Start {
					t.Errorf("%s segment %d: tfdt %d, ref start %d", tr.ID, n, tfdts[0], s.Start)
				}
				if n > first-1 && tfdts[0] != prevEnd {
					t.Errorf("%s chunk %v: segment %d starts at %d, previous ended at %d (loop %d idx %d)", tr.ID, chunk, n, tfdts[0], prevEnd, n/k, n%k)
				}
				if tr.Kind == media.Video {
					want := n * uint64(info.SegmentDuration/time.Millisecond) * uint64(tr.Timescale) / 1000
					if tfdts[0] != want {
						t.Errorf("%s segment %d: tfdt %d, want n·D = %d", tr.ID, n, tfdts[0], want)
					}
				}
				end := tfdts[0]
				for i := range tfdts {
					if tfdts[i] != end {
						t.Errorf("%s segment %d fragment %d: tfdt %d, want %d", tr.ID, n, i, tfdts[i], end)
					}
					end += durs[i]
					if seqs[i] <= prevSeq && n > first-1 {
						t.Errorf("%s segment %d: sequence %d after %d", tr.ID, n, seqs[i], prevSeq)
					}
					prevSeq = seqs[i]
				}
				if end-tfdts[0] != s.Duration {
					t.Errorf("%s segment %d: samples last %d, ref says %d", tr.ID, n, end-tfdts[0], s.Duration)
				}
				prevEnd = end
			}
		}
		if want := map[bool]time.Duration{true: longest}[chunk > 0]; l.ChunkDuration() != want {
			t.Errorf("chunk %v: ChunkDuration %v, want %v (the longest chunk made; 0 for whole segments)", chunk, l.ChunkDuration(), want)
		}
	}
}

// TestSameNumberSameBytes: a looped channel is deterministic, so any origin (or a
// restarted one) serves identical bytes for the same URL.
func TestSameNumberSameBytes(t *testing.T) {
	a, err := hub.OpenAsset(testmedia.Asset(t))
	if err != nil {
		t.Fatal(err)
	}
	l1, _ := New(a, Options{})
	l2, _ := New(a, Options{})
	id := a.Info().Tracks[0].ID
	s1, _ := l1.Segment(id, 123456)
	s2, _ := l2.Segment(id, 123456)
	if !bytes.Equal(s1.Bytes(), s2.Bytes()) {
		t.Error("segment 123456 differs between two loops of the same asset")
	}
}

func TestSamplesPerChunk(t *testing.T) {
	v := &media.Track{Kind: media.Video, FrameRate: "25"}
	ntsc := &media.Track{Kind: media.Video, FrameRate: "30000/1001"}
	aud := &media.Track{Kind: media.Audio, SampleRate: 48000}
	tests := []struct {
		tr   *media.Track
		d    time.Duration
		want int
	}{
		{v, 0, 0}, {v, 40 * time.Millisecond, 1}, {v, 10 * time.Millisecond, 1}, {v, 200 * time.Millisecond, 5},
		{ntsc, time.Second, 30}, {aud, 40 * time.Millisecond, 2}, {aud, 500 * time.Millisecond, 23},
		{&media.Track{Kind: media.Video, FrameRate: "x"}, time.Second, 0},
	}
	for _, tt := range tests {
		if got := samplesPerChunk(tt.tr, tt.d); got != tt.want {
			t.Errorf("samplesPerChunk(%s %s, %v) = %d, want %d", tt.tr.Kind, tt.tr.FrameRate, tt.d, got, tt.want)
		}
	}
}
