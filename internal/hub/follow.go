package hub

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/streambed/streambed/internal/media"
)

// ErrCutShort is Follow's answer when a segment it was handing out chunk by chunk
// cannot be finished: its source stalled, or the segment left the store. Part of it
// went to the reader already, so the reader must not take what it has for the
// segment (an HTTP response is aborted, not ended).
var ErrCutShort = errors.New("segment cut short")

// Follow hands segment n of a track to emit as its source produces it: first the
// chunks stored so far, then each new batch as it is appended, in order and each
// chunk once. It returns nil once the segment is complete and all of it went to emit;
// a channel that ends completes its open segments, so that ends a follow cleanly too.
// It is how a pull request for a segment in progress is answered at the live edge.
//
// A segment that is not begun is waited for only when it is the next one, the one
// after the newest the track has begun (a looped channel's schedule counts as begun,
// so a source that fell a little behind is waited for too), and then for at most
// wait; a segment farther ahead is not waited for. Errors before anything went to
// emit: media.ErrNotYet (not begun in time, or farther ahead), media.ErrGone (it left
// the DVR window), media.ErrNotFound (the source skipped it, or the channel ended
// without it). After: ErrCutShort, when no new chunk came for wait or the segment
// left the store; ctx's error when ctx ended; emit's own error.
func (c *Channel) Follow(ctx context.Context, trackID string, n uint64, wait time.Duration, emit func([]*media.Chunk) error) error {
	lt, err := c.track(trackID)
	if err != nil {
		return err
	}
	if wait <= 0 {
		return fmt.Errorf("channel %q: follow needs a positive wait: %w", c.name, media.ErrBadRequest)
	}
	c.following.Add(1)
	defer c.following.Add(-1)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	sent := 0
	for {
		c.mu.Lock()
		grew := lt.grewLocked()
		var chunks []*media.Chunk
		complete := false
		e := lt.find(n)
		switch {
		case e == nil && sent > 0:
			c.mu.Unlock()
			return fmt.Errorf("channel %q track %q segment %d left the store after %d chunks: %w", c.name, trackID, n, sent, ErrCutShort)
		case e == nil:
			if err := c.notBegunLocked(lt, n); err != nil {
				c.mu.Unlock()
				return err
			}
		case sent > len(e.seg.Chunks):
			// Only a segment made again with other chunks could shrink; the same
			// source makes the same chunks, so this is a defect, reported as such.
			c.mu.Unlock()
			return fmt.Errorf("channel %q track %q segment %d has %d chunks, %d were handed out: %w", c.name, trackID, n, len(e.seg.Chunks), sent, ErrCutShort)
		default:
			chunks, complete = e.seg.Chunks[sent:], e.complete
		}
		c.mu.Unlock()
		if len(chunks) > 0 {
			if err := emit(chunks); err != nil {
				return err
			}
			sent += len(chunks)
			timer.Reset(wait)
		}
		if complete {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-grew:
		case <-timer.C:
			if sent == 0 {
				return fmt.Errorf("channel %q track %q segment %d did not begin within %s: %w", c.name, trackID, n, wait, media.ErrNotYet)
			}
			return fmt.Errorf("channel %q track %q segment %d: no new chunk for %s after %d: %w", c.name, trackID, n, wait, sent, ErrCutShort)
		}
	}
}

// notBegunLocked says whether a follower may wait for segment n of lt, which is not
// stored: nil when it is the next one to begin (or, on a looped channel, in progress
// by the schedule while its paced source is behind), else why not.
func (c *Channel) notBegunLocked(lt *liveTrack, n uint64) error {
	if c.ended {
		return fmt.Errorf("channel %q ended without segment %d: %w", c.name, n, media.ErrNotFound)
	}
	var newest uint64
	begun := false
	if k := len(lt.segs); k > 0 {
		newest, begun = lt.segs[k-1].seg.Number, true
		if n < lt.segs[0].seg.Number {
			return fmt.Errorf("channel %q track %q segment %d left the %s DVR window: %w", c.name, lt.track.ID, n, c.timeline.TimeShiftBufferDepth, media.ErrGone)
		}
	}
	if c.od != nil {
		if _, last, ok := c.od.Window(c.now()); ok && (!begun || last+1 > newest) {
			newest, begun = last+1, true // in progress by the schedule
		}
	}
	switch {
	case !begun || n > newest+1:
		return fmt.Errorf("channel %q track %q segment %d is not the next to begin: %w", c.name, lt.track.ID, n, media.ErrNotYet)
	case n == newest+1, c.od != nil && n == newest:
		return nil
	}
	return fmt.Errorf("channel %q track %q has no segment %d (the source skipped it): %w", c.name, lt.track.ID, n, media.ErrNotFound)
}

// NumberAt is the number of a track's segment that starts at media time start, when
// one is stored (in progress or complete) or, on a looped channel, scheduled.
func (c *Channel) NumberAt(trackID string, start uint64) (uint64, bool) {
	if c.od != nil {
		return c.od.Number(trackID, start)
	}
	lt, err := c.track(trackID)
	if err != nil {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	i := sort.Search(len(lt.segs), func(i int) bool { return lt.segs[i].seg.Start >= start })
	if i < len(lt.segs) && lt.segs[i].seg.Start == start {
		return lt.segs[i].seg.Number, true
	}
	return 0, false
}

// Followers counts the Follow calls in progress.
func (c *Channel) Followers() int { return int(c.following.Load()) }
