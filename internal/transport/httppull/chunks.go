package httppull

import (
	"errors"
	"io"
	"time"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/player"
)

// Chunk reports (player.ChunkReporter). A low-latency DASH origin answers a request
// for a segment in progress with a chunked response that grows as the chunks are
// made; the body is read as it arrives and each moof+mdat is reported the moment its
// last byte is in, so the player plays it before the segment is complete (dash.js
// with the Fetch API does the same). A whole segment reads the same way: its chunks
// are reported just before the end of its body.

// SetChunkSink implements player.ChunkReporter.
func (c *Client) SetChunkSink(sink func(player.Chunk)) { c.sink.Store(&sink) }

// readChunks reads a media body to its end, reporting its chunks to sink, and
// returns its size. A body that is not CMAF (or a malformed one) is still read whole:
// the player then takes the segment when it is complete.
func (c *Client) readChunks(body io.Reader, req player.SegmentRequest, sink func(player.Chunk)) (int64, error) {
	scan := cmaf.NewChunkScanner()
	var timescale uint32 // 0: the player takes its index's
	if v, ok := c.tracks.Load(req.TrackID); ok {
		in := v.(*cmaf.Init)
		timescale, scan.Defaults = in.Info.Timescale, in.Defaults
	}
	buf := make([]byte, 32<<10)
	var n int64
	var decoded uint64
	scanning := true
	for {
		k, err := body.Read(buf)
		n += int64(k)
		if k > 0 && scanning {
			frags, serr := scan.Write(buf[:k])
			for i := range frags {
				d := frags[i].Duration()
				decoded += d
				sink(player.Chunk{Request: req, Decoded: decoded, Timescale: timescale, Last: d, At: time.Now()})
			}
			scanning = serr == nil
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// maxInitBytes bounds an init segment read to learn its track's timescale.
const maxInitBytes = 1 << 20

// readInit reads an init segment and keeps its track's timescale and sample defaults
// for the chunk reports of the track's media segments (an HLS index counts in
// milliseconds, not in the track's timescale). A body that does not parse is still
// read whole; the reports of that track then go without a timescale.
func (c *Client) readInit(body io.Reader, track string) (int64, error) {
	b, err := io.ReadAll(io.LimitReader(body, maxInitBytes))
	n := int64(len(b))
	if err != nil {
		return n, err
	}
	if n == maxInitBytes {
		m, err := io.Copy(io.Discard, body)
		return n + m, err
	}
	if in, err := cmaf.ParseInit(b); err == nil && in.Info.Timescale > 0 {
		c.tracks.Store(track, in)
	}
	return n, nil
}
