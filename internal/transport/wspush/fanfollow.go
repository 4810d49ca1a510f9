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

// fanEvent is follower.event for a fan-out viewer at a fixed rung: the hub event
// announces a chunk; what the queue dropped before it is read from the store; a
// viewer that skips resumes at the next segment's keyframe. now is read once per
// event, when needed.
func (s *session) fanEvent(ev hub.Event, now *time.Time) error {
	if s.other != nil && ev.Track == s.other.ID {
		return s.fanOtherEvent(ev)
	}
	t := s.ladder[s.rung]
	p := &s.vPos
	if ev.Track != t.ID || ev.Number < p.seg {
		return nil
	}
	if ev.Number > p.seg {
		if now.IsZero() {
			*now = s.now()
		}
		// The rest of the segment being sent and every segment between, from the
		// store (see catchUpTo), then the new segment begins.
		if !s.skipping {
			s.sendStored(t, p.seg, p.next, -1)
		}
		for m := p.seg + 1; m < ev.Number; m++ {
			if s.skipping {
				if err := s.endSkip(m, *now); err != nil {
					return err
				}
			}
			if !s.sendStored(t, m, 0, -1) {
				s.beginSkip("hub queue overflow", true)
			}
		}
		p.seg, p.next = ev.Number, 0
		if s.skipping {
			if err := s.endSkip(ev.Number, *now); err != nil {
				return err
			}
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
	s.pushChunk(t, ev.Number, ev.Index, ev.Last, ev.Chunk)
	p.next = ev.Index + 1
	return nil
}

// fanOtherEvent is follower.otherEvent: the other track (audio) in its own segment
// order, dropped while the video skips, resumed at its next segment.
func (s *session) fanOtherEvent(ev hub.Event) error {
	p := &s.aPos
	if ev.Number < p.seg {
		return nil
	}
	if ev.Number > p.seg {
		if !s.skipping && !p.wait {
			s.sendStoredUntil(s.other, p.seg, p.next, ev.Number)
		}
		p.seg, p.next, p.wait = ev.Number, 0, false
	}
	if ev.Chunk == nil {
		return nil
	}
	if s.skipping || p.wait {
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
