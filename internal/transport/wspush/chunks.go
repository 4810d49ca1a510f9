package wspush

import (
	"time"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/player"
)

// Chunk reports for the headless player (player.ChunkReporter): each pushed chunk is
// measured as it arrives — the media duration of its moof+mdat — so the player
// appends it at once instead of when its segment is complete, as the browser page
// appends every chunk to MSE.

// SetChunkSink implements player.ChunkReporter.
func (t *PlayerTransport) SetChunkSink(sink func(player.Chunk)) {
	t.mu.Lock()
	t.chunkSink = sink
	t.mu.Unlock()
}

// PushesLiveEdge implements player.EdgePusher: a live session pushes every chunk the
// moment it exists.
func (t *PlayerTransport) PushesLiveEdge() bool { return true }

// chunkMeter sums the media duration of the chunks of each track's segment in progress.
type chunkMeter struct {
	ready *Ready
	parts map[uint8]*meterPart
}

type meterPart struct {
	number  uint64
	next    uint64 // the chunk sequence expected next
	decoded uint64 // ticks so far
}

func newChunkMeter(r *Ready) *chunkMeter { return &chunkMeter{ready: r, parts: map[uint8]*meterPart{}} }

// add measures one chunk frame and returns its report; ok is false for an init, a
// chunk whose segment start was not seen, or one that does not parse (outside bytes:
// the segment still arrives whole through the assembler, or is pulled).
func (m *chunkMeter) add(f *Frame) (player.Chunk, bool) {
	if f.Kind != KindChunk || int(f.Track) >= len(m.ready.Tracks) {
		return player.Chunk{}, false
	}
	p := m.parts[f.Track]
	if f.Start {
		p = &meterPart{number: m.ready.Base + f.Sequence}
		m.parts[f.Track] = p
	} else if p == nil || p.next != f.Sequence {
		delete(m.parts, f.Track) // a gap: no more reports for this segment
		return player.Chunk{}, false
	}
	frags, err := cmaf.ParseFragments(f.Payload)
	if err != nil {
		delete(m.parts, f.Track)
		return player.Chunk{}, false
	}
	var d uint64
	for i := range frags {
		d += frags[i].Duration()
	}
	p.decoded += d
	p.next++
	if f.End {
		delete(m.parts, f.Track)
	}
	tr := m.ready.Tracks[f.Track]
	return player.Chunk{
		Request:   player.SegmentRequest{Kind: player.RequestMedia, TrackID: tr.ID, Number: p.number},
		Decoded:   p.decoded,
		Timescale: tr.Timescale,
		Last:      d,
	}, d > 0
}

// reportChunk hands a chunk report of session c to the player's sink.
func (t *PlayerTransport) reportChunk(c *Client, ch player.Chunk, at time.Time) {
	t.mu.Lock()
	sink := t.chunkSink
	current := c == t.client
	t.mu.Unlock()
	if sink == nil || !current {
		return
	}
	ch.At = at
	sink(ch)
}
