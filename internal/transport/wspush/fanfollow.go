package wspush

import (
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// trackPos is where a fan-out viewer is in one track: the segment being sent, the
// next chunk index expected in it, and (the other track) whether it lost chunks of
// it and waits for its next segment.
type trackPos struct {
	seg  uint64
	next int
	wait bool
}

func (s *session) posOf(t *media.Track) *trackPos {
	if s.other != nil && t.ID == s.other.ID {
		return &s.aPos
	}
	return &s.vPos
}

// fanEvent is follower.event for a fan-out viewer: the hub event announces a chunk
// of the viewer's rung (its list membership); what the queue dropped before it is
// read from the store; each new segment goes through the viewer's boundary (an
// adaptive viewer's policy may switch rungs there, a stats viewer gets its adapt
// report); a viewer that skips resumes at the next segment's keyframe. now is read
// once per event, when needed.
func (s *session) fanEvent(ev hub.Event, now *time.Time) error {
	if s.other != nil && ev.Track == s.other.ID {
		return s.fanOtherEvent(ev, now)
	}
	t := s.ladder[s.rung]
	p := &s.vPos
	if ev.Track != t.ID || ev.Number < p.seg {
		return nil
	}
	if now.IsZero() && (ev.Number > p.seg || s.adaptive) {
		*now = s.now()
	}
	if ev.Number > p.seg {
		// The rest of the segment being sent and every segment between, from the
		// store (see catchUpTo), each through its boundary, then the new segment
		// begins.
		if !s.skipping {
			s.sendStored(t, p.seg, p.next, -1)
		}
		for m := p.seg + 1; m < ev.Number; m++ {
			if err := s.fanBegin(m, *now); err != nil {
				return err
			}
			if s.skipping {
				continue
			}
			if !s.sendStored(s.ladder[s.rung], m, 0, -1) {
				s.beginSkip("hub queue overflow", true)
			}
		}
		p.seg, p.next = ev.Number, 0
		if err := s.fanBegin(ev.Number, *now); err != nil {
			return err
		}
		if to := s.ladder[s.rung]; to != t {
			// Switched: this event is the old rung's. The new rung's chunks of the
			// segment stored so far go now, later ones come as its events.
			if !s.skipping {
				p.next = s.sendStoredFrom(to, ev.Number, 0)
			}
			return nil
		}
	}
	if s.skipping {
		s.lost++
		return nil
	}
	if ev.Chunk == nil {
		return nil // the segment ended after its last chunk went out
	}
	switch {
	case ev.Index < p.next:
		return nil // sent already (catch-up)
	case ev.Index > p.next && !s.sendStored(t, ev.Number, p.next, ev.Index):
		s.lost++
		s.beginSkip("hub queue overflow", true)
		return nil
	}
	if s.adaptive {
		s.observe(*now, false)
	}
	s.pushChunk(t, ev.Number, ev.Index, ev.Last, ev.Chunk)
	p.next = ev.Index + 1
	return nil
}

// fanBegin is follower.begin for a fan-out viewer: segment n is about to begin. The
// boundary lets an adaptive policy pick the rung (a switch moves the viewer to the
// new rung's list and queues the switch message and init) and queues a stats
// viewer's adapt report; a hold drops the segment, and the segment after a hold or
// a skip resumes.
func (s *session) fanBegin(n uint64, now time.Time) error {
	from := s.ladder[s.rung]
	hold, err := s.boundary(n, now)
	if err != nil {
		return err
	}
	if to := s.ladder[s.rung]; to != from && s.fan != nil {
		s.fan.move(s, from, to)
	}
	if hold {
		s.held = true
		s.beginSkip("policy: stopped until the output buffer drains", false)
	} else if s.held || s.skipping {
		s.held = false
		return s.endSkip(n, now)
	}
	return nil
}

// sendStoredFrom queues the chunks of segment n of t stored so far from chunk from
// on and returns the index of the next chunk to send.
func (s *session) sendStoredFrom(t *media.Track, n uint64, from int) int {
	c, ok := s.src.(*hub.Channel)
	if !ok {
		return from
	}
	seg, complete, err := c.Partial(t.ID, n)
	if err != nil {
		return from
	}
	for i := from; i < len(seg.Chunks); i++ {
		s.pushChunk(t, n, i, complete && i == len(seg.Chunks)-1, seg.Chunks[i])
	}
	return max(from, len(seg.Chunks))
}

// fanOtherEvent is follower.otherEvent: the other track (audio) in its own segment
// order, dropped while the video skips, resumed at its next segment.
func (s *session) fanOtherEvent(ev hub.Event, now *time.Time) error {
	p := &s.aPos
	if ev.Number < p.seg {
		return nil
	}
	if ev.Number > p.seg {
		if !s.skipping && !s.held && !p.wait {
			s.sendStoredUntil(s.other, p.seg, p.next, ev.Number)
		}
		p.seg, p.next, p.wait = ev.Number, 0, false
	}
	if ev.Chunk == nil {
		return nil
	}
	if s.skipping || s.held || p.wait {
		p.wait = true
		return nil
	}
	switch {
	case ev.Index < p.next:
		return nil
	case ev.Index > p.next && !s.sendStored(s.other, ev.Number, p.next, ev.Index):
		s.lost++
		p.wait = true
		return nil
	}
	if s.adaptive {
		if now.IsZero() {
			*now = s.now()
		}
		s.observe(*now, false)
	}
	s.pushChunk(s.other, ev.Number, ev.Index, ev.Last, ev.Chunk)
	p.next = ev.Index + 1
	return nil
}

// emit queues a message: into a fan-out viewer's frames due in this batch, or into
// a per-session queue for its writer.
func (s *session) emit(it item) {
	if fo := s.fan; fo != nil {
		if !s.touched {
			s.touched = true
			fo.touched = append(fo.touched, s)
		}
		s.due = append(s.due, it)
		return
	}
	s.q.push(it)
}

// dropDueMedia drops the chunks due in this batch (a skip); texts and inits stay.
func (s *session) dropDueMedia() int {
	kept, dropped := s.due[:0], 0
	for _, it := range s.due {
		if it.media {
			dropped++
			continue
		}
		kept = append(kept, it)
	}
	clear(s.due[len(kept):])
	s.due = kept
	return dropped
}
