package hub

import (
	"sync"

	"github.com/streambed/streambed/internal/media"
)

// Event is one chunk handed to a subscriber, or the end of a segment.
type Event struct {
	Track  string
	Number uint64 // segment number
	Index  int    // chunk index within the segment
	Last   bool   // the segment is complete with this chunk
	// Chunk is nil in an end-only event: the segment's last chunk went out before its
	// source knew it was the last (an encoder ends a segment by starting the next).
	Chunk *media.Chunk
}

// Subscription receives a channel's chunks as they become due. Each subscriber has its
// own bounded queue, so a slow reader loses chunks instead of slowing the channel or
// other readers; after an overflow it skips to the next keyframe of each track and
// Lost counts what it missed.
type Subscription struct {
	c      *Channel
	tracks map[string]bool // nil: all tracks
	C      <-chan Event
	ch     chan Event

	mu      sync.Mutex
	notify  bool            // an overflow skips nothing (Notify)
	skip    map[string]bool // tracks waiting for a keyframe after an overflow
	lost    int
	stopped bool
}

// Subscribe starts a subscription to the given tracks (none: all) with a queue of
// capacity chunks. Call Stop when done.
func (c *Channel) Subscribe(capacity int, tracks ...string) *Subscription {
	return c.subscribe(false, capacity, tracks)
}

// Notify is Subscribe for a reader that takes events as announcements and reads
// what its queue dropped from the store (Partial): after an overflow the queue goes
// on with the next event instead of waiting for a keyframe, so the reader learns of
// the gap within a chunk and fills it, rather than a segment later.
func (c *Channel) Notify(capacity int, tracks ...string) *Subscription {
	return c.subscribe(true, capacity, tracks)
}

func (c *Channel) subscribe(notify bool, capacity int, tracks []string) *Subscription {
	if capacity < 1 {
		capacity = 1
	}
	s := &Subscription{c: c, ch: make(chan Event, capacity), skip: map[string]bool{}, notify: notify}
	s.C = s.ch
	if len(tracks) > 0 {
		s.tracks = map[string]bool{}
		for _, t := range tracks {
			s.tracks[t] = true
		}
	}
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		s.stopped = true
		close(s.ch)
		return s
	}
	c.subs[s] = struct{}{}
	c.mu.Unlock()
	return s
}

// Lost is how many chunks the subscriber missed because its queue was full.
func (s *Subscription) Lost() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost
}

// Stop ends the subscription and closes C.
func (s *Subscription) Stop() {
	s.c.mu.Lock()
	delete(s.c.subs, s)
	s.c.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped {
		s.stopped = true
		close(s.ch)
	}
}

// Subscribers counts the channel's current subscribers.
func (c *Channel) Subscribers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.subs)
}

func (c *Channel) deliver(ev Event) {
	c.mu.Lock()
	subs := make([]*Subscription, 0, len(c.subs))
	for s := range c.subs {
		subs = append(subs, s)
	}
	c.mu.Unlock()
	for _, s := range subs {
		s.offer(ev)
	}
}

func (s *Subscription) offer(ev Event) {
	if s.tracks != nil && !s.tracks[ev.Track] {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	if s.skip[ev.Track] {
		if ev.Chunk == nil {
			return // the end of a segment being skipped
		}
		if !(ev.Index == 0 && ev.Chunk.Keyframe) {
			s.lost++
			return
		}
		delete(s.skip, ev.Track)
	}
	select {
	case s.ch <- ev:
	default:
		s.lost++
		s.skip[ev.Track] = !s.notify
	}
}
