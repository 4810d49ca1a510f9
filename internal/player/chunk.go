package player

import (
	"sync"
	"time"
)

// Chunk-level buffering. A low-latency live segment arrives as CMAF chunks (moof+mdat)
// while it is still being made: pushed one by one (WebSocket, HTTP/2 push) or as the
// growing body of a chunked pull response (LL-DASH). A transport that sees the chunks
// reports each one as it completes, and the player appends its media at once instead
// of waiting for the segment's last byte — as MSE in a browser does.

// Chunk says how much of a segment being received is complete.
type Chunk struct {
	// Request names the segment as a delivery would: URL, or TrackID and Number.
	Request SegmentRequest
	// Decoded is the media duration of the chunks of the segment so far (from its first
	// chunk's tfdt to the end of the last sample), in ticks of Timescale.
	Decoded   uint64
	Timescale uint32 // 0: the representation index's timescale
	// Last is the duration of this chunk alone, in the same ticks (for the push target
	// latency, which keeps a margin above one chunk).
	Last uint64
	// At is when the chunk's last byte arrived (the transport's clock; for the log).
	At time.Time
}

// ChunkReporter is implemented by transports that report chunks as they complete:
// of the responses to requests with SegmentRequest.Chunks set (the player sets it in a
// low-latency live session) and of what they push. The player calls SetChunkSink
// once, in New; sink may be called from any goroutine, never blocks, and keeps only
// the newest report per segment.
type ChunkReporter interface {
	SetChunkSink(sink func(Chunk))
}

// EdgePusher is implemented by push transports that send a live stream from its edge
// chunk by chunk (WebSocket push): a segment is due from its start rather than from
// its end, and without a ServiceDescription the target latency follows the browser
// page's rule for push (see target.go).
type EdgePusher interface {
	PushesLiveEdge() bool
}

// chunkInbox collects chunk reports from transport goroutines for the scheduler.
type chunkInbox struct {
	mu     sync.Mutex
	latest map[chunkKey]Chunk // newest report per segment, not yet applied
	note   chan struct{}      // one pending wake-up for the scheduler
}

type chunkKey struct {
	url    string
	track  string
	number uint64
}

func keyOf(r SegmentRequest) chunkKey {
	if r.URL != "" {
		return chunkKey{url: r.URL}
	}
	return chunkKey{track: r.TrackID, number: r.Number}
}

// maxChunkReports bounds what a transport pushing far ahead of the player can make
// the player hold.
const maxChunkReports = 64

func newChunkInbox() *chunkInbox {
	return &chunkInbox{latest: map[chunkKey]Chunk{}, note: make(chan struct{}, 1)}
}

// add is the sink a transport calls.
func (in *chunkInbox) add(c Chunk) {
	in.mu.Lock()
	k := keyOf(c.Request)
	if old, ok := in.latest[k]; !ok || c.Decoded >= old.Decoded {
		if !ok && len(in.latest) >= maxChunkReports {
			clear(in.latest) // far behind: the segments themselves still come whole
		}
		in.latest[k] = c
	}
	in.mu.Unlock()
	select {
	case in.note <- struct{}{}:
	default:
	}
}

// each calls f with every report held; f says whether to drop it (applied, or of a
// segment the player is past).
func (in *chunkInbox) each(f func(Chunk) (drop bool)) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for k, c := range in.latest {
		if f(c) {
			delete(in.latest, k)
		}
	}
}

// applyChunks appends the media of the chunks reported for the segments the streams
// are getting (s.next: requested, or awaited as a push), and drops reports of
// segments the player is past.
func (p *Player) applyChunks() {
	if p.chunks == nil || p.ll == nil || len(p.streams) == 0 {
		return // not low-latency live: whole segments, as dash.js appends them
	}
	now := p.clock.Now()
	p.chunks.each(func(c Chunk) bool {
		for _, s := range p.streams {
			rep := chunkOf(s, c.Request)
			if rep == nil {
				continue
			}
			if pl := s.next; pl != nil && (c.Request.URL != "" && c.Request.URL == pl.seg.URL || c.Request.URL == "" && c.Request.Number == pl.seg.Number) {
				p.applyChunk(s, pl.seg, rep, c, now)
				return true
			}
			// A push ahead of the player's plan is kept until it plans that segment.
			cur, ok := rep.Index.Next(s.end)
			return c.Request.URL != "" || !ok || c.Request.Number < cur.Number
		}
		return true // of no stream being played
	})
}

// chunkOf is the representation of s a chunk report is of: by URL or by track ID.
func chunkOf(s *stream, r SegmentRequest) *Representation {
	for _, rep := range s.set.Representations {
		if r.TrackID != "" && rep.ID == r.TrackID {
			return rep
		}
	}
	if pl := s.next; pl != nil && r.URL != "" && r.URL == pl.seg.URL {
		return pl.rep
	}
	return nil
}

// applyChunk appends what c adds to seg (of rep) to the buffer of s.
func (p *Player) applyChunk(s *stream, seg Segment, rep *Representation, c Chunk, now time.Time) {
	if rep == nil || rep.Index == nil {
		return
	}
	ts := uint64(c.Timescale)
	if ts == 0 {
		ts = rep.Index.Timescale
	}
	if ts == 0 {
		return
	}
	done := ticks(c.Decoded, ts)
	if done > seg.Duration+seg.Duration/2 {
		// Not this segment's timescale (or not its media): the whole segment will do.
		p.log.Debug("chunk report longer than its segment; ignored", "segment", seg.Number, "decoded", done, "duration", seg.Duration)
		return
	}
	end := seg.Start + min(done, seg.Duration)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advance(now)
	p.noteChunk(now, ticks(c.Last, ts))
	if end <= s.end || end <= seg.Start {
		return
	}
	p.appendMedia(s, max(seg.Start, s.end), end, rep)
	s.chunked = true
	p.rec.ChunkAppended()
	p.appended(now)
}

// appendMedia adds [start, end) of rep to the buffer of s, merged with the piece
// before when it continues it. Callers hold p.mu.
func (p *Player) appendMedia(s *stream, start, end time.Duration, rep *Representation) {
	if n := len(s.queue); n > 0 && s.queue[n-1].rep == rep && s.queue[n-1].end == start {
		s.queue[n-1].end = end
	} else {
		s.queue = append(s.queue, bufSeg{start: start, end: end, rep: rep})
	}
	s.end = end
}

// forget drops the reports of a segment the player now has whole.
func (in *chunkInbox) forget(r SegmentRequest) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if r.URL != "" {
		delete(in.latest, chunkKey{url: r.URL})
	}
	delete(in.latest, chunkKey{track: r.TrackID, number: r.Number})
}

// lastChunk applies a chunk report of the segment of pl that came with (or just
// before) the segment itself, before the segment replaces it: the push rule learns the
// chunk duration from it even when chunks are as long as segments.
func (p *Player) lastChunk(s *stream, pl *plan, now time.Time) {
	if p.chunks == nil || p.ll == nil {
		return
	}
	var found []Chunk
	p.chunks.each(func(c Chunk) bool {
		if c.Request.URL != "" && c.Request.URL == pl.seg.URL || c.Request.URL == "" && c.Request.Number == pl.seg.Number && chunkOf(s, c.Request) != nil {
			found = append(found, c)
			return true
		}
		return false
	})
	for _, c := range found {
		rep := chunkOf(s, c.Request)
		if rep == nil {
			rep = pl.rep // reported by URL (s.next is already cleared): the plan's
		}
		p.applyChunk(s, pl.seg, rep, c, now)
	}
}
