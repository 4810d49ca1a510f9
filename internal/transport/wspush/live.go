package wspush

import (
	"context"
	"errors"
	"fmt"
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
	t := time.NewTicker(sampleEvery(s.segDur))
	return t.C, t.Stop
}

// sampleEvery is how often an adaptive session's output buffer is observed between
// chunks: a tenth of a segment, within 20–250 ms.
func sampleEvery(segDur time.Duration) time.Duration {
	if segDur <= 0 {
		segDur = 2 * time.Second
	}
	return min(max(segDur/10, 20*time.Millisecond), 250*time.Millisecond)
}

// feedChannel streams a live channel: completed segments first when the client asked
// for a position behind the live edge (paced, as VOD), then chunks as the hub
// releases them, starting at the latest keyframe.
func (s *session) feedChannel(ctx context.Context, c *hub.Channel) error {
	n, live, err := s.startLive(c, s.ladder[s.rung])
	if err != nil {
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

// startLive picks a live session's first segment by track ref — the latest keyframe
// out, or the position the start message asked for — sends ready and the first inits,
// and returns that segment and the one in progress.
func (s *session) startLive(c *hub.Channel, ref *media.Track) (n, live uint64, err error) {
	tl := c.Timeline()
	now := c.Now()
	n, live = s.liveStart(c, ref, now)
	s.base = n
	return n, live, s.ready(startOf(c, ref, n, now), true, tl.AvailabilityStart, 0)
}

// liveStart is startLive's choice of the first segment, and the one in progress.
func (s *session) liveStart(c *hub.Channel, ref *media.Track, now time.Time) (n, live uint64) {
	tl := c.Timeline()
	latest, complete := c.Latest(now)
	if complete {
		live = latest + 1
	} else if m, ok := c.Newest(ref.ID); ok {
		live = m // none complete yet: the one the source has begun
	}
	n = live
	if s.start.At.Position {
		pos := s.start.At.Seconds
		if pos < 0 {
			pos += now.Sub(tl.AvailabilityStart).Seconds()
		}
		n = segmentAt(c, ref, pos, now, live)
	} else if complete && !keyframeOut(c, ref, live) {
		// The latest keyframe out is the newest complete segment's (with one chunk per
		// segment nothing of the segment in progress is out until it completes).
		n = latest
	}
	return n, live
}

// awaitKeyframe waits until the keyframe a live session would start at is stored
// (the fan-out joins only then): a channel that has just begun may announce a
// segment by its schedule before its source stored it, and a session that began
// there would start with the next segment, one sequence on (up to StartTimeout).
func (s *session) awaitKeyframe(c *hub.Channel, ref *media.Track) {
	end := time.Now().Add(s.opts.StartTimeout)
	for time.Now().Before(end) {
		now := c.Now()
		n, _ := s.liveStart(c, ref, now)
		if keyframeOut(c, ref, n) {
			return
		}
		e, _, grew, err := c.Edge(ref.ID, now)
		if err != nil || e.Ended {
			return
		}
		select {
		case <-grew:
		case <-s.closed:
			return
		case <-time.After(100 * time.Millisecond): // the schedule moves without a chunk stored
		}
	}
}

// segmentAt is the segment of track t that holds media position pos (seconds from
// the channel's availability start) in the window at now: the first when pos is
// older, live when pos is at or past the newest segment's end.
func segmentAt(c *hub.Channel, t *media.Track, pos float64, now time.Time, live uint64) uint64 {
	w, err := c.Window(now)
	refs := w[t.ID]
	if err != nil || len(refs) == 0 {
		return live
	}
	at := uint64(max(pos, 0)*float64(t.Timescale) + 0.5)
	if at >= refs[len(refs)-1].End() {
		return live
	}
	k := 0
	for k+1 < len(refs) && refs[k+1].Start <= at {
		k++
	}
	return refs[k].Number
}

// startOf is where segment n of track t starts, as a duration after the channel's
// availability start: from the stored segment, or for one not yet begun, where the
// newest complete one ends.
func startOf(c *hub.Channel, t *media.Track, n uint64, now time.Time) time.Duration {
	if seg, _, err := c.Partial(t.ID, n); err == nil {
		return t.Duration(seg.Start)
	}
	if n > 0 {
		if prev, err := c.Ref(t.ID, n-1, now); err == nil {
			return t.Duration(prev.End())
		}
	}
	return time.Duration(n) * c.Timeline().SegmentDuration
}

// keyframeOut says whether the first chunk (a keyframe) of segment n is stored.
func keyframeOut(c *hub.Channel, t *media.Track, n uint64) bool {
	if m, ok := c.Newest(t.ID); !ok || m < n {
		return false // not begun: no look-up (and error) needed
	}
	_, _, err := c.Partial(t.ID, n)
	return err == nil
}

// walkChannel sends completed segments from n on, paced at most Lead ahead of real
// time by their media durations, and returns the first segment that is not complete
// yet.
func (s *session) walkChannel(ctx context.Context, c *hub.Channel, n uint64) (uint64, error) {
	t0 := c.Now()
	ref := s.ladder[0]
	var sent time.Duration // media time sent since t0
	tick, stop := s.ticker()
	defer stop()
	for {
		now := c.Now()
		latest, ok := c.Latest(now)
		if !ok || n > latest {
			return n, nil
		}
		seg, err := c.Ref(ref.ID, n, now)
		if errors.Is(err, media.ErrGone) {
			s.beginSkip("left the DVR window", false)
			w, _ := c.Window(now)
			if refs := w[ref.ID]; len(refs) > 0 {
				n = refs[0].Number
			} else {
				n = latest
			}
			if err := s.endSkip(n, now); err != nil {
				return 0, err
			}
			continue
		}
		if err != nil {
			return 0, err
		}
		if err := s.pace(ctx, t0.Add(sent-s.opts.Lead), c.Now, tick); err != nil {
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
		sent += ref.Duration(seg.Duration)
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
	sub := c.Notify(s.opts.SubscriptionCapacity, ids...)
	defer sub.Stop()
	now := c.Now()
	f := &follower{s: s, seg: n, otherSeg: n, next: map[string]int{}}
	if err := f.begin(n, now); err != nil {
		return err
	}
	if latest, ok := c.Latest(now); !f.hold && (!ok || n <= latest+1) {
		// Catch up to the live edge from n: the chunks of the segment in progress
		// stored so far, and before it any segment that completed while the session
		// was being set up (a busy origin can take longer than a segment to get here).
		// Later ones come from the subscription (taken out first, so none falls
		// between); the follower drops what it has sent already.
		// A track may be ahead of the others (an encoder posts each on its own
		// request): it sends what it has stored from n on, segment by segment.
		for _, t := range s.tracksNow() {
			for m := n; ; m++ {
				seg, complete, err := c.Partial(t.ID, m)
				if err != nil {
					break // nothing of it stored yet: all of it comes by the subscription
				}
				f.next[t.ID] = 0
				for i, ch := range seg.Chunks {
					s.pushChunk(t, m, i, complete && i == len(seg.Chunks)-1, ch)
					f.next[t.ID] = i + 1
				}
				if s.other != nil && t.ID == s.other.ID {
					f.otherSeg = m
				} else {
					f.seg = m
				}
				if !complete {
					break
				}
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

// follower is the state of a live session between hub events. The video ladder and
// the other track (audio) keep their own segment: an encoder posts each track on
// its own request, so audio's segment n+1 may begin before video's segment n has
// ended (a looped channel appends every track in step, an ingested one does not).
type follower struct {
	s    *session
	seg  uint64         // the video segment being sent
	hold bool           // the policy holds seg
	next map[string]int // next chunk index expected per track in its segment

	otherSeg  uint64 // the other track's segment being sent
	otherWait bool   // the other track lost chunks of otherSeg: wait for its next segment
}

func (f *follower) begin(n uint64, now time.Time) error {
	f.seg = n
	for id := range f.next {
		// Only the video ladder's: the other track keeps its own segment, whose last
		// chunk may still come after video's segment n began (an encoder's audio
		// chunk that straddles the boundary). Clearing it dropped that chunk and
		// left a hole in the audio that stalled the browser.
		if f.s.other == nil || id != f.s.other.ID {
			delete(f.next, id)
		}
	}
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
	if s.other != nil && ev.Track == s.other.ID {
		return f.otherEvent(ev, now)
	}
	if ev.Number < f.seg {
		return nil
	}
	if ev.Number > f.seg {
		if err := f.catchUpTo(ev.Number, now); err != nil {
			return err
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
	if ev.Chunk == nil {
		// The segment ended after its last chunk went out: the wire marks a
		// segment's end on its last chunk only, and the next segment's first chunk
		// (start flag) tells the client as much.
		return nil
	}
	want := f.next[ev.Track]
	switch {
	case ev.Index < want:
		return nil // sent already (catch-up)
	case ev.Index > want && !s.sendStored(t, ev.Number, want, ev.Index):
		s.lost++
		s.beginSkip("hub queue overflow", true)
		return nil
	}
	s.observe(now, false)
	s.pushChunk(t, ev.Number, ev.Index, ev.Last, ev.Chunk)
	f.next[ev.Track] = ev.Index + 1
	if _, queued := s.q.level(); queued > s.queueLimit() {
		s.beginSkip(fmt.Sprintf("output queue over %v", s.queueLimit()), true)
	}
	return nil
}

// otherEvent sends the other track's chunks in its own segment order. While the
// video skips or is held, they are dropped too; the other track then resumes at its
// next segment, since a segment cannot start without its first chunk.
func (f *follower) otherEvent(ev hub.Event, now time.Time) error {
	s := f.s
	if ev.Number < f.otherSeg {
		return nil
	}
	if ev.Number > f.otherSeg {
		if !f.hold && !s.skipping && !f.otherWait {
			// The rest of its segment and any between, from the store (see catchUpTo).
			s.sendStoredUntil(s.other, f.otherSeg, f.next[ev.Track], ev.Number)
		}
		f.otherSeg, f.otherWait = ev.Number, false
		f.next[ev.Track] = 0
	}
	if ev.Chunk == nil {
		return nil
	}
	if f.hold || s.skipping || f.otherWait {
		f.otherWait = true
		return nil
	}
	want := f.next[ev.Track]
	switch {
	case ev.Index < want:
		return nil // sent already (catch-up)
	case ev.Index > want && !s.sendStored(s.other, ev.Number, want, ev.Index):
		s.lost++
		f.otherWait = true
		return nil
	}
	s.observe(now, false)
	s.pushChunk(s.other, ev.Number, ev.Index, ev.Last, ev.Chunk)
	f.next[ev.Track] = ev.Index + 1
	return nil
}

// catchUpTo is called when segment target begins: it sends from the store what the
// hub's queue for this session dropped before it (a source that appends in bursts,
// such as a relay filling a gap or an encoder posting whole segments), the rest of
// the segment being sent and every segment between, each through its boundary so
// the policy still decides per segment. A segment no longer stored is skipped.
func (f *follower) catchUpTo(target uint64, now time.Time) error {
	s := f.s
	if !f.hold && !s.skipping {
		t := s.ladder[s.rung]
		s.sendStored(t, f.seg, f.next[t.ID], -1)
	}
	for m := f.seg + 1; m < target; m++ {
		if err := f.begin(m, now); err != nil {
			return err
		}
		if f.hold || s.skipping {
			continue
		}
		if !s.sendStored(s.ladder[s.rung], m, 0, -1) {
			s.beginSkip("hub queue overflow", true)
		}
	}
	return nil
}

// sendStored queues chunks from..to-1 of segment n of track t (to < 0: to the last
// stored) from the channel's store: what the hub's queue for this session dropped
// when a source appended in bursts (a relay catching up, an encoder posting whole
// segments); the events only announce, the chunks stay stored unless they left the
// window. It reports false when the store does not hold them.
func (s *session) sendStored(t *media.Track, n uint64, from, to int) bool {
	c, ok := s.src.(*hub.Channel)
	if !ok {
		return false
	}
	seg, complete, err := c.Partial(t.ID, n)
	if err != nil || len(seg.Chunks) < to {
		return false
	}
	if to < 0 {
		to = len(seg.Chunks)
	}
	for i := from; i < to; i++ {
		s.pushChunk(t, n, i, complete && i == len(seg.Chunks)-1, seg.Chunks[i])
	}
	return true
}

// sendStoredUntil queues, from the store, the rest of track t's segment seg from
// chunk next and every segment between it and target (one track's own order; the
// video ladder goes through catchUpTo, which lets the policy decide per segment).
func (s *session) sendStoredUntil(t *media.Track, seg uint64, next int, target uint64) {
	s.sendStored(t, seg, next, -1)
	for m := seg + 1; m < target; m++ {
		s.sendStored(t, m, 0, -1)
	}
}

func (s *session) queueLimit() time.Duration {
	if s.opts.QueueLimit > 0 {
		return s.opts.QueueLimit
	}
	return max(2*s.segDur, 2*time.Second)
}
