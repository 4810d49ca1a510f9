package wspush

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// ticker returns a sampling ticker for adaptive sessions (nil channel otherwise), so
// the output buffer is observed between chunks too.
func (s *session) ticker() (<-chan time.Time, func()) {
	if !s.adaptive {
		return nil, func() {}
	}
	every := min(max(s.segDur/10, 20*time.Millisecond), 250*time.Millisecond)
	t := time.NewTicker(every)
	return t.C, t.Stop
}

// feedChannel streams a live channel: completed segments first when the client asked
// for a position behind the live edge (paced, as VOD), then chunks as the hub
// releases them, starting at the latest keyframe.
func (s *session) feedChannel(ctx context.Context, c *hub.Channel) error {
	tl := c.Timeline()
	now := c.Now()
	live := tl.NumberAt(now)
	n := live
	if s.start.At.Position {
		pos := s.start.At.Seconds
		if pos < 0 {
			pos += now.Sub(tl.AvailabilityStart).Seconds()
		}
		k := uint64(0)
		if pos > 0 {
			k = uint64(math.Floor(pos/tl.SegmentDuration.Seconds() + 1e-6))
		}
		if first, _, ok := tl.Window(now); ok && k < first {
			k = first
		}
		n = min(k, live)
	} else if !s.keyframeOut(c, live, now) && live > 0 {
		// The latest keyframe out is the newest complete segment's (with one chunk per
		// segment nothing of the segment in progress is out until it completes).
		if first, _, ok := tl.Window(now); ok && live-1 >= first {
			n = live - 1
		}
	}
	s.base = n
	if err := s.ready(time.Duration(n)*tl.SegmentDuration, true, tl.AvailabilityStart, 0); err != nil {
		return err
	}
	if n < live {
		var err error
		if n, err = s.walkChannel(ctx, c, n); err != nil {
			return err
		}
	}
	return s.followChannel(ctx, c, n)
}

// keyframeOut says whether the first chunk of segment n (in progress) is out at now.
func (s *session) keyframeOut(c *hub.Channel, n uint64, now time.Time) bool {
	tl := c.Timeline()
	t := s.ladder[s.rung]
	seg, err := c.Segment(t.ID, n, tl.Availability(n))
	if err != nil || len(seg.Chunks) == 0 {
		return false
	}
	if len(seg.Chunks) == 1 {
		return !tl.Availability(n).After(now)
	}
	segStart := tl.AvailabilityStart.Add(time.Duration(n) * tl.SegmentDuration)
	return !segStart.Add(t.Duration(seg.Chunks[0].Duration)).After(now)
}

// walkChannel sends completed segments from n on, paced at most Lead ahead of real
// time, and returns the first segment that is not complete yet.
func (s *session) walkChannel(ctx context.Context, c *hub.Channel, n uint64) (uint64, error) {
	tl := c.Timeline()
	t0, n0 := c.Now(), n
	tick, stop := s.ticker()
	defer stop()
	for {
		now := c.Now()
		last, ok := tl.Latest(now)
		if !ok || n > last {
			return n, nil
		}
		if first, _, _ := tl.Window(now); n < first {
			s.beginSkip("left the DVR window", false)
			n = first
			if err := s.endSkip(n, now); err != nil {
				return 0, err
			}
		}
		due := t0.Add(time.Duration(n-n0)*tl.SegmentDuration - s.opts.Lead)
		if err := s.pace(ctx, due, c.Now, tick); err != nil {
			return 0, err
		}
		if _, err := s.holdWhileDraining(ctx, n, c.Now, tick); err != nil {
			return 0, err
		}
		for _, t := range s.tracksNow() {
			seg, err := c.Segment(t.ID, n, c.Now())
			if err != nil {
				if errors.Is(err, media.ErrGone) {
					break // caught at the top of the loop
				}
				return 0, err
			}
			for i, ch := range seg.Chunks {
				s.pushChunk(t, n, i, i == len(seg.Chunks)-1, ch)
			}
		}
		n++
	}
}

// tracksNow lists the tracks sent in the current segment: the rung and the other kind.
func (s *session) tracksNow() []*media.Track {
	if s.other == nil {
		return []*media.Track{s.ladder[s.rung]}
	}
	return []*media.Track{s.ladder[s.rung], s.other}
}

// pace waits until due (and until at most one segment of media is queued), observing
// the output buffer meanwhile.
func (s *session) pace(ctx context.Context, due time.Time, now func() time.Time, tick <-chan time.Time) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		t := now()
		_, queued := s.q.level()
		if !t.Before(due) && queued < s.segDur {
			return nil
		}
		var fire <-chan time.Time
		if t.Before(due) {
			if timer == nil {
				timer = time.NewTimer(due.Sub(t))
			} else {
				timer.Reset(due.Sub(t))
			}
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closed:
			return errClosed
		case <-s.q.space:
		case <-fire:
		case <-tick:
		}
		s.observe(now(), false)
	}
}

// holdWhileDraining asks the policy about segment n; while it says hold (the
// published rule's "stop until drained"), it waits and asks again. On demand nothing
// is skipped: holding only delays.
func (s *session) holdWhileDraining(ctx context.Context, n uint64, now func() time.Time, tick <-chan time.Time) (bool, error) {
	held := false
	for {
		hold, err := s.boundary(n, now())
		if err != nil || !hold {
			return held, err
		}
		held = true
		select {
		case <-ctx.Done():
			return held, ctx.Err()
		case <-s.closed:
			return held, errClosed
		case <-s.q.space:
		case <-tick:
		case <-time.After(s.segDur / 4):
		}
		s.observe(now(), false)
	}
}

// followChannel sends the chunks of segment n on (n is in progress or ahead) as the
// hub releases them. It starts at n's keyframe: the chunks of n already released are
// taken from the channel's window, later ones from the subscription.
func (s *session) followChannel(ctx context.Context, c *hub.Channel, n uint64) error {
	// An adaptive session needs every rung's chunks to switch at a boundary; a fixed
	// one only its own.
	ladder := s.ladder
	if !s.adaptive {
		ladder = s.ladder[s.rung : s.rung+1]
	}
	ids := make([]string, 0, len(ladder)+1)
	for _, t := range ladder {
		ids = append(ids, t.ID)
	}
	if s.other != nil {
		ids = append(ids, s.other.ID)
	}
	sub := c.Subscribe(s.opts.SubscriptionCapacity, ids...)
	defer sub.Stop()
	tl := c.Timeline()
	now := c.Now()
	f := &follower{s: s, seg: n, next: map[string]int{}}
	if err := f.begin(n, now); err != nil {
		return err
	}
	if !f.hold && n == tl.NumberAt(now) {
		// Catch up to the live edge within n: the chunks due by now, as Run computes
		// their due times. Pinning the clock at n's end lets an in-progress segment
		// be read; a channel fed by ingest has none, and starts at the next keyframe.
		segStart := tl.AvailabilityStart.Add(time.Duration(n) * tl.SegmentDuration)
		for _, t := range s.tracksNow() {
			seg, err := c.Segment(t.ID, n, tl.Availability(n))
			if err != nil {
				s.beginSkip("no keyframe in the window yet", false)
				break
			}
			var off uint64
			for i, ch := range seg.Chunks {
				off += ch.Duration
				due := segStart.Add(t.Duration(off))
				if i == len(seg.Chunks)-1 {
					due = tl.Availability(n)
				}
				if due.After(now) {
					break
				}
				s.pushChunk(t, n, i, i == len(seg.Chunks)-1, ch)
				f.next[t.ID] = i + 1
			}
		}
	}
	tick, stop := s.ticker()
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closed:
			return errClosed
		case <-tick:
			s.observe(c.Now(), false)
		case ev, ok := <-sub.C:
			if !ok {
				return errors.New("the channel ended the subscription")
			}
			if err := f.event(ev, c.Now()); err != nil {
				return err
			}
		}
	}
}

// follower is the state of a live session between hub events.
type follower struct {
	s    *session
	seg  uint64         // the segment being sent
	hold bool           // the policy holds seg
	next map[string]int // next chunk index expected per track in seg
}

func (f *follower) begin(n uint64, now time.Time) error {
	f.seg = n
	clear(f.next)
	hold, err := f.s.boundary(n, now)
	if err != nil {
		return err
	}
	if hold {
		f.hold = true
		f.s.beginSkip("policy: stopped until the output buffer drains", false)
	} else if f.hold || f.s.skipping {
		f.hold = false
		return f.s.endSkip(n, now)
	}
	return nil
}

func (f *follower) event(ev hub.Event, now time.Time) error {
	s := f.s
	if ev.Number < f.seg {
		return nil
	}
	if ev.Number > f.seg {
		if ev.Number > f.seg+1 && !s.skipping {
			s.beginSkip("hub queue overflow", true)
		}
		if err := f.begin(ev.Number, now); err != nil {
			return err
		}
	}
	var t *media.Track
	for _, c := range s.tracksNow() {
		if c.ID == ev.Track {
			t = c
		}
	}
	if t == nil {
		return nil // another rung
	}
	if f.hold || s.skipping {
		s.lost++
		return nil
	}
	want := f.next[ev.Track]
	switch {
	case ev.Index < want:
		return nil // sent already (catch-up)
	case ev.Index > want:
		s.lost++
		s.beginSkip("hub queue overflow", true)
		return nil
	}
	s.observe(now, false)
	s.pushChunk(t, ev.Number, ev.Index, ev.Last, ev.Chunk)
	f.next[ev.Track] = want + 1
	if _, queued := s.q.level(); queued > s.queueLimit() {
		s.beginSkip(fmt.Sprintf("output queue over %v", s.queueLimit()), true)
	}
	return nil
}

func (s *session) queueLimit() time.Duration {
	if s.opts.QueueLimit > 0 {
		return s.opts.QueueLimit
	}
	return max(2*s.segDur, 2*time.Second)
}
