package h2push

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/transport/h2push/pushclient"
)

// Chunk reports (player.ChunkReporter): the DATA of every stream — a response to a
// request, or a push — is scanned for CMAF chunks as it arrives, and each complete
// moof+mdat is reported by the stream's URL, so the player plays a low-latency
// segment in progress (a chunked LL-DASH response, or a push of one) before its end.
// Streams that are not CMAF media (manifests, inits, clocks) fail the scan at their
// first bytes and are not looked at again.

type chunkScans struct {
	sink atomic.Pointer[func(player.Chunk)]
	mu   sync.Mutex
	m    map[*pushclient.Stream]*streamScan
}

type streamScan struct {
	scan    *cmaf.ChunkScanner
	decoded uint64
	dead    bool // not CMAF media: ignore the rest
}

// maxScans bounds the streams scanned at once; above it, finished ones are dropped.
const maxScans = 256

// SetChunkSink implements player.ChunkReporter.
func (f *Fetcher) SetChunkSink(sink func(player.Chunk)) { f.chunks.sink.Store(&sink) }

// onData is the client's OnData hook (the connection's reader: must not block).
func (f *Fetcher) onData(s *pushclient.Stream, data []byte, end bool) {
	sink := f.chunks.sink.Load()
	if sink == nil {
		return
	}
	c := &f.chunks
	c.mu.Lock()
	if c.m == nil {
		c.m = map[*pushclient.Stream]*streamScan{}
	}
	st := c.m[s]
	if st == nil {
		if len(c.m) >= maxScans {
			c.sweepLocked()
		}
		st = &streamScan{scan: cmaf.NewChunkScanner()}
		c.m[s] = st
	}
	var reports []player.Chunk
	if !st.dead {
		frags, err := st.scan.Write(data)
		for i := range frags {
			d := frags[i].Duration()
			st.decoded += d
			reports = append(reports, player.Chunk{Request: player.SegmentRequest{Kind: player.RequestMedia, URL: s.URL}, Decoded: st.decoded, Last: d, At: time.Now()})
		}
		st.dead = err != nil
	}
	if end {
		delete(c.m, s)
	}
	c.mu.Unlock()
	for _, r := range reports {
		(*sink)(r)
	}
}

// sweepLocked drops the scans of streams that are over (reset, failed).
func (c *chunkScans) sweepLocked() {
	for s := range c.m {
		select {
		case <-s.Done():
			delete(c.m, s)
		default:
		}
	}
	if len(c.m) >= maxScans {
		clear(c.m) // still too many open at once: stop scanning them
	}
}
