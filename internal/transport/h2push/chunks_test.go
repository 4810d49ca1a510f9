package h2push

import (
	"testing"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/transport/h2push/pushclient"
)

// chunkedSegment is a segment of n one-sample chunks of dur ticks each.
func chunkedSegment(t *testing.T, n int, dur uint32) []byte {
	t.Helper()
	seg := cmaf.StypBox()
	for i := range n {
		var err error
		seg, err = cmaf.AppendFragment(seg, uint32(i+1), 1, uint64(i)*uint64(dur), []cmaf.Sample{{Duration: dur, Size: 4, Data: []byte{0, 0, 0, byte(i)}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	return seg
}

func TestEveryStreamsChunksAreReportedAsTheyArrive(t *testing.T) {
	f := &Fetcher{}
	var got []player.Chunk
	f.SetChunkSink(func(c player.Chunk) { got = append(got, c) })
	seg := chunkedSegment(t, 3, 512)
	media := &pushclient.Stream{URL: "http://o/live/c/v1/5.m4s"}
	mpd := &pushclient.Stream{URL: "http://o/live/c/manifest.mpd"}
	// DATA frames of two streams interleaved, cut anywhere.
	xml := []byte(`<?xml version="1.0"?><MPD type="dynamic"></MPD>`)
	for off := 0; off < len(seg); off += 10 {
		end := min(off+10, len(seg))
		f.onData(media, seg[off:end], end == len(seg))
		if off < len(xml) {
			f.onData(mpd, xml[off:min(off+10, len(xml))], min(off+10, len(xml)) == len(xml))
		}
	}
	if len(got) != 3 {
		t.Fatalf("%d reports, want one per chunk (3): %+v", len(got), got)
	}
	for i, c := range got {
		if c.Request.URL != media.URL || c.Request.Kind != player.RequestMedia || c.Decoded != uint64(i+1)*512 || c.Last != 512 {
			t.Errorf("report %d: %+v", i, c)
		}
	}
	if n := len(f.chunks.m); n != 0 {
		t.Errorf("%d scans left after both streams ended", n)
	}
}
