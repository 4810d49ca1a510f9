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
func (c *Client) readChunks(body io.Reader, req player.SegmentRequest, sink func(player.Chunk)) (int64, time.Duration, error) {
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
	var busy burstMeter
	last := time.Now()
	for {
		k, err := body.Read(buf)
		now := time.Now()
		busy.add(k, now.Sub(last))
		last = now
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
			return n, busy.busy(n), nil
		}
		if err != nil {
			return n, 0, err
		}
	}
}

// burstMeter measures a chunked body's receiving time without the origin's pauses.
// Reads that return within burstGap of the one before are part of a burst (a chunk, or
// the chunks made before the request, arriving packet by packet); a longer wait is the
// origin making the next chunk, and that read's bytes and wait are left out. On a link
// slower than the media a chunk's packets never pause that long, so it reads the link.
type burstMeter struct {
	bytes int64
	time  time.Duration
}

// burstGap is the longest pause inside a burst: under half a one-frame chunk (40 ms).
const burstGap = 15 * time.Millisecond

// Bursts shorter than minBurstBytes in all say nothing (a loopback origin delivers each
// chunk in one read): the whole download time then stands.
const minBurstBytes = 8 << 10

func (m *burstMeter) add(n int, wait time.Duration) {
	if n <= 0 || wait >= burstGap {
		return
	}
	m.bytes += int64(n)
	m.time += wait
}

// busy is the time total bytes take at the bursts' rate, or 0 when unmeasured.
func (m *burstMeter) busy(total int64) time.Duration {
	if m.bytes < minBurstBytes || m.time < time.Millisecond {
		return 0
	}
	return time.Duration(float64(m.time) * float64(total) / float64(m.bytes))
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
