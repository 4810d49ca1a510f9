package hub

import (
	"time"

	"github.com/streambed/streambed/internal/media"
)

// Edge is a track's live edge at a moment: the newest complete segment available
// then, and the one after it as stored so far. LL-HLS lists the latter's parts and
// holds a blocking playlist reload until the edge passes the part it asks for.
type Edge struct {
	Last uint64 // newest complete segment available at the moment
	// Next is segment Last+1 as stored: its chunks so far (none when it has not
	// begun; Number is set either way). Its slice is a copy of the stored header, so
	// it never sees a chunk appended later.
	Next  media.Segment
	Ended bool // the channel ended: the edge will not move again
}

// Edge returns a track's live edge at now (ok is false before the track has a
// complete segment) and a channel that is closed when the track next grows: a chunk
// of it stored, one of its segments completed, the channel ended. Taken under the same lock as
// the edge, so a reader that waits on it misses no change; it costs nothing per
// chunk while nobody waits (the Follow broadcast).
func (c *Channel) Edge(trackID string, now time.Time) (e Edge, ok bool, grew <-chan struct{}, err error) {
	lt, err := c.track(trackID)
	if err != nil {
		return Edge{}, false, nil, err
	}
	var odLast uint64
	odOK := false
	if c.od != nil {
		_, odLast, odOK = c.od.Window(now)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	grew, e.Ended = lt.grewLocked(), c.ended
	switch {
	case c.od != nil:
		e.Last, ok = odLast, odOK
	default:
		if w := c.windowLocked(lt, now); len(w) > 0 {
			e.Last, ok = w[len(w)-1].seg.Number, true
		}
	}
	if !ok {
		return Edge{Ended: e.Ended}, false, grew, nil
	}
	e.Next.Number = e.Last + 1
	if n := lt.find(e.Last + 1); n != nil {
		e.Next = n.seg // a copy: the chunks so far
	} else if k := len(lt.segs); k > 0 {
		e.Next.Period = lt.segs[k-1].seg.Period
	}
	return e, true, grew, nil
}
