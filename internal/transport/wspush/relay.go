package wspush

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// A relay session (start message with "relay": true) sends every track of a live
// channel at once, each from its own init and segment starts and with no adaptation:
// the upstream of a relay edge, which stores the chunks in a channel of its own and
// chooses renditions for its viewers itself (internal/source/wsrelay). The wire is
// unchanged: ready lists the tracks, every init follows it, then chunks as the hub
// releases them.

// setupRelay chooses a relay session's tracks: the playable video ladder (after
// codecs and maxBitrate) and every audio track, or only the tracks start names.
func (s *session) setupRelay(st Start, audio []*media.Track) error {
	c, ok := s.src.(*hub.Channel)
	if !ok {
		return fmt.Errorf("%w: relay is for live channels; an on-demand asset is fetched, not relayed", ErrStart)
	}
	all := append(slices.Clone(s.ladder), audio...)
	if len(st.Tracks) > 0 {
		var named []*media.Track
		for _, id := range st.Tracks {
			i := slices.IndexFunc(all, func(t *media.Track) bool { return t.ID == id })
			if i < 0 {
				return fmt.Errorf("%w: no playable track %q in %q", ErrStart, id, c.Info().Name)
			}
			if !slices.Contains(named, all[i]) {
				named = append(named, all[i])
			}
		}
		all = named
	}
	if len(all) > 255 {
		return fmt.Errorf("%w: too many tracks", ErrStart)
	}
	s.relay = all
	s.ladder, s.other, s.rung = all[:1], nil, 0 // the first track is the reference for positions and the queue
	s.index = map[string]uint8{}
	for i, t := range all {
		s.index[t.ID] = uint8(i)
	}
	s.segDur = c.Info().SegmentDuration
	if s.segDur <= 0 {
		s.segDur = 2 * time.Second
	}
	s.policy, _ = NewPolicy(PolicyFixed)
	s.adaptive = false
	return nil
}

// feedRelay starts where a viewer would (the latest keyframe, or the position
// asked for), sends the complete segments from there as fast as the socket takes
// them (a relay resuming after a lost upstream fills its gap), then follows the
// channel.
func (s *session) feedRelay(ctx context.Context, c *hub.Channel) error {
	ref := s.relay[0]
	n, _, err := s.startLive(c, ref)
	if err != nil {
		return err
	}
	for {
		latest, ok := c.Latest(c.Now())
		if !ok || n > latest {
			break
		}
		// One complete segment of every track at a time, at most one queued.
		if err := s.pace(ctx, time.Time{}, c.Now, nil); err != nil {
			return err
		}
		sent := false
		for _, t := range s.relay {
			seg, err := c.Segment(t.ID, n, c.Now())
			if errors.Is(err, media.ErrGone) {
				break
			}
			if err != nil {
				continue // not stored for this track (a track that joined later): skip it
			}
			for i, ch := range seg.Chunks {
				s.pushChunk(t, n, i, i == len(seg.Chunks)-1, ch)
			}
			sent = true
		}
		if !sent { // left the window meanwhile: continue from its start
			w, _ := c.Window(c.Now())
			if refs := w[ref.ID]; len(refs) > 0 && refs[0].Number > n {
				n = refs[0].Number
				continue
			}
		}
		n++
	}
	return s.followRelay(ctx, c, n)
}

// relayTrack is one track's place in a relay session: the segment being sent, the
// next chunk index expected in it, and whether it lost chunks of it (then it waits
// for its next segment, since a segment cannot be stored without its start).
type relayTrack struct {
	t    *media.Track
	seg  uint64
	next int
	wait bool
}

// followRelay sends the chunks of segment n on, of every track, as the hub releases
// them; each track keeps its own segment (an encoder posts each track on its own).
func (s *session) followRelay(ctx context.Context, c *hub.Channel, n uint64) error {
	ids := make([]string, len(s.relay))
	tracks := make(map[string]*relayTrack, len(s.relay))
	for i, t := range s.relay {
		ids[i] = t.ID
		tracks[t.ID] = &relayTrack{t: t, seg: n}
	}
	sub := c.Notify(s.opts.SubscriptionCapacity, ids...)
	defer sub.Stop()
	// Catch up: what each track stored from n on; later chunks come from the
	// subscription (taken out first, so none falls between).
	for _, rt := range tracks {
		for m := n; ; m++ {
			seg, complete, err := c.Partial(rt.t.ID, m)
			if err != nil {
				break
			}
			rt.seg, rt.next = m, 0
			for i, ch := range seg.Chunks {
				s.pushChunk(rt.t, m, i, complete && i == len(seg.Chunks)-1, ch)
				rt.next = i + 1
			}
			if !complete {
				break
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closed:
			return errClosed
		case ev, ok := <-sub.C:
			if !ok {
				return errors.New("the channel ended the subscription")
			}
			if err := s.relayEvent(tracks, ev); err != nil {
				return err
			}
		}
	}
}

func (s *session) relayEvent(tracks map[string]*relayTrack, ev hub.Event) error {
	rt := tracks[ev.Track]
	if rt == nil || ev.Number < rt.seg {
		return nil
	}
	if ev.Number > rt.seg {
		if !rt.wait && !s.skipping {
			// What the hub's queue dropped before this segment began, from the store.
			s.sendStoredUntil(rt.t, rt.seg, rt.next, ev.Number)
		}
		rt.seg, rt.next, rt.wait = ev.Number, 0, false
	}
	if ev.Chunk == nil {
		return nil // the segment ended after its last chunk went out
	}
	switch {
	case rt.wait:
		s.lost++
		return nil
	case ev.Index < rt.next:
		return nil // sent already (catch-up)
	case ev.Index > rt.next && !s.sendStored(rt.t, ev.Number, rt.next, ev.Index):
		s.lost++ // the hub's queue for this session overflowed, and the store no longer has them
		rt.wait = true
		s.beginSkip("hub queue overflow", false)
		return nil
	}
	if s.skipping && ev.Index == 0 {
		if err := s.endSkip(ev.Number, s.now()); err != nil {
			return err
		}
	}
	s.pushChunk(rt.t, ev.Number, ev.Index, ev.Last, ev.Chunk)
	rt.next = ev.Index + 1
	if _, queued := s.q.level(); queued > s.queueLimit() {
		// A slow relay: drop what is queued; every track resumes at its next segment.
		s.beginSkip(fmt.Sprintf("output queue over %v", s.queueLimit()), true)
		for _, o := range tracks {
			o.wait = true
		}
	}
	return nil
}
