package h2push

import (
	"context"
	"errors"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/media"
)

// Live segments in progress. A promised live segment leaves as soon as it has begun:
// the origin's pull handler answers a segment in progress chunk by chunk as the source
// appends them (streamSegment: HTTP/2 DATA frames flushed per chunk), so a push of it
// carries each chunk when it is made, as an LL-DASH pull does, and the player appends
// it then (chunk-level latency). Such a response is paced by the source, not by the
// link, so it neither waits for nor takes the one-at-a-time turn of promised responses
// (conn.go), and a client request for one does not hold promised responses back: the
// turn and the hold order bandwidth, and a paced response needs little.

// maxLiveWait bounds how long a promised live segment waits to begin.
const maxLiveWait = 10 * time.Minute

// beginPoll is how often a promised segment's wait looks again without news from the
// channel (a looped channel served on demand, with no paced source appending).
const beginPoll = 100 * time.Millisecond

// awaitLive holds a promised live segment's response until the segment has begun (a
// chunk of it is stored) and says whether it is still in progress then.
func (p *Pusher) awaitLive(ctx context.Context, res layout.Resource) (inProgress bool, err error) {
	if res.Kind != layout.KindSegment || !res.Live || res.ByTime {
		return false, nil
	}
	c, err := p.hub.Channel(res.Stream)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, maxLiveWait)
	defer cancel()
	for {
		e, ok, grew, err := c.Edge(res.Track, c.Now()) // grew taken before the look: no change missed
		if err != nil {
			return false, err
		}
		if ok && res.Number > e.Last+1 {
			// Not the next to begin ("all" promises a DVR window ahead): wait for the one
			// before it to complete, woken once rather than by every chunk of the track.
			if _, err := c.Await(ctx, res.Track, res.Number-1); err == nil {
				continue
			} else if ctx.Err() != nil {
				return false, ctx.Err()
			}
			// That one will not come (skipped, gone): look at this one as it grows.
		}
		if _, err := c.Segment(res.Track, res.Number, c.Now()); err == nil {
			return false, nil
		} else if !errors.Is(err, media.ErrNotYet) {
			return false, err
		}
		if _, complete, err := c.Partial(res.Track, res.Number); err == nil {
			return !complete, nil
		}
		if c.Ended() {
			return false, media.ErrNotFound
		}
		t := time.NewTimer(beginPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		case <-grew:
		case <-t.C:
		}
		t.Stop()
	}
}

// inProgress says whether res is a live segment begun and not complete: a client's
// request for it is answered at the source's pace.
func (p *Pusher) inProgress(res layout.Resource) bool {
	if res.Kind != layout.KindSegment || !res.Live || res.ByTime {
		return false
	}
	c, err := p.hub.Channel(res.Stream)
	if err != nil {
		return false
	}
	return partial(c, res)
}

func partial(c *hub.Channel, res layout.Resource) bool {
	_, complete, err := c.Partial(res.Track, res.Number)
	return err == nil && !complete
}
