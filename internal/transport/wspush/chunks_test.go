package wspush

import (
	"testing"

	"github.com/streambed/streambed/internal/cmaf"
)

func oneSampleChunk(t *testing.T, seq uint32, dur uint32) []byte {
	t.Helper()
	b, err := cmaf.AppendFragment(nil, seq, 1, uint64(seq)*uint64(dur), []cmaf.Sample{{Duration: dur, Size: 2, Data: []byte{1, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestChunkMeterReportsEachPushedChunk(t *testing.T) {
	r := &Ready{Base: 100, Tracks: []TrackInfo{{Index: 0, ID: "v180", Kind: "video", Timescale: 12800}, {Index: 1, ID: "a64", Kind: "audio", Timescale: 48000}}}
	m := newChunkMeter(r)
	frames := []struct {
		f        Frame
		ok       bool
		track    string
		number   uint64
		decoded  uint64
		lastTick uint64
	}{
		{Frame{Kind: KindInit, Track: 0, Payload: []byte("init")}, false, "", 0, 0, 0},
		{Frame{Kind: KindChunk, Track: 0, Sequence: 5, Start: true, Payload: oneSampleChunk(t, 1, 512)}, true, "v180", 105, 512, 512},
		{Frame{Kind: KindChunk, Track: 1, Sequence: 5, Start: true, Payload: oneSampleChunk(t, 1, 1024)}, true, "a64", 105, 1024, 1024},
		{Frame{Kind: KindChunk, Track: 0, Sequence: 1, Payload: oneSampleChunk(t, 2, 512)}, true, "v180", 105, 1024, 512},
		{Frame{Kind: KindChunk, Track: 0, Sequence: 2, End: true, Payload: oneSampleChunk(t, 3, 512)}, true, "v180", 105, 1536, 512},
		// After the end, a chunk that is not a segment start belongs to nothing seen.
		{Frame{Kind: KindChunk, Track: 0, Sequence: 3, Payload: oneSampleChunk(t, 4, 512)}, false, "", 0, 0, 0},
		{Frame{Kind: KindChunk, Track: 0, Sequence: 6, Start: true, Payload: oneSampleChunk(t, 5, 512)}, true, "v180", 106, 512, 512},
		// A gap (chunk 1 lost): nothing more of segment 106.
		{Frame{Kind: KindChunk, Track: 0, Sequence: 2, Payload: oneSampleChunk(t, 6, 512)}, false, "", 0, 0, 0},
		// Bytes that are not a chunk: no report, no panic.
		{Frame{Kind: KindChunk, Track: 1, Sequence: 1, Payload: []byte("garbage")}, false, "", 0, 0, 0},
		{Frame{Kind: KindChunk, Track: 9, Sequence: 0, Start: true, Payload: oneSampleChunk(t, 1, 512)}, false, "", 0, 0, 0},
	}
	for i, x := range frames {
		c, ok := m.add(&x.f)
		if ok != x.ok {
			t.Fatalf("frame %d: reported %v, want %v (%+v)", i, ok, x.ok, c)
		}
		if !ok {
			continue
		}
		if c.Request.TrackID != x.track || c.Request.Number != x.number || c.Decoded != x.decoded || c.Last != x.lastTick {
			t.Errorf("frame %d: %+v", i, c)
		}
		if want := r.Tracks[x.f.Track].Timescale; c.Timescale != want {
			t.Errorf("frame %d: timescale %d, want %d", i, c.Timescale, want)
		}
	}
}
