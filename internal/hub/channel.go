package hub

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/media"
)

// Generator makes a live channel's segments on demand. A looped VOD source is one: the
// same number always yields the same bytes, so a segment can be built when first asked
// for (by a viewer or by the channel's clock) and the clock can be pinned in tests.
type Generator interface {
	// Segment builds segment n of a track (numbers per media.Timeline).
	Segment(trackID string, n uint64) (*media.Segment, error)
}

// Clock returns the current time; tests pin it.
type Clock func() time.Time

// Channel is a live stream: tracks with init segments, a window of segments made of
// chunks, and subscribers that receive every chunk the moment it is due.
//
// Memory is bounded by the DVR window: segments older than the window are dropped.
// Each chunk is stored once and shared by reference with every reader.
type Channel struct {
	info     *media.Stream
	timeline media.Timeline
	inits    map[string][]byte
	gen      Generator
	now      Clock
	archive  *archive // nil: no archive

	mu     sync.Mutex
	window map[string]map[uint64]*media.Segment // track → number → segment
	subs   map[*Subscription]struct{}
}

// ChannelConfig configures NewChannel.
type ChannelConfig struct {
	Info      *media.Stream     // name, tracks, segment duration (Live is set for you)
	Inits     map[string][]byte // track ID → init segment
	Timeline  media.Timeline
	Generator Generator // nil for channels fed by Publish (ingest)
	Clock     Clock     // nil: time.Now
	// ArchiveDir, when set, receives every segment that enters the window, laid out
	// like a packaged asset, so the recording outlives the DVR window.
	ArchiveDir string
}

// NewChannel returns a live channel.
func NewChannel(cfg ChannelConfig) (*Channel, error) {
	if cfg.Timeline.SegmentDuration <= 0 {
		return nil, fmt.Errorf("channel %q: segment duration must be positive", cfg.Info.Name)
	}
	info := *cfg.Info
	info.Live = true
	for _, t := range info.Tracks {
		if _, ok := cfg.Inits[t.ID]; !ok {
			return nil, fmt.Errorf("channel %q: track %q has no init segment", info.Name, t.ID)
		}
	}
	now := cfg.Clock
	if now == nil {
		now = time.Now
	}
	c := &Channel{
		info: &info, timeline: cfg.Timeline, inits: cfg.Inits, gen: cfg.Generator, now: now,
		window: map[string]map[uint64]*media.Segment{}, subs: map[*Subscription]struct{}{},
	}
	if cfg.ArchiveDir != "" {
		a, err := newArchive(cfg.ArchiveDir, cfg.Inits)
		if err != nil {
			return nil, fmt.Errorf("channel %q: %w", info.Name, err)
		}
		c.archive = a
	}
	return c, nil
}

// Info describes the channel.
func (c *Channel) Info() *media.Stream { return c.info }

// Timeline maps the channel's segment numbers to wall-clock time.
func (c *Channel) Timeline() media.Timeline { return c.timeline }

// Now is the channel's clock.
func (c *Channel) Now() time.Time { return c.now() }

// Init returns a track's init segment.
func (c *Channel) Init(trackID string) ([]byte, error) {
	if b, ok := c.inits[trackID]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("channel %q has no track %q: %w", c.info.Name, trackID, media.ErrNotFound)
}

// Segment returns segment n of a track as seen at time now (pass c.Now() unless a
// request pins the clock): ErrNotYet before it is complete, ErrGone once it left the
// DVR window.
func (c *Channel) Segment(trackID string, n uint64, now time.Time) (*media.Segment, error) {
	if _, err := c.info.Track(trackID); err != nil {
		return nil, err
	}
	if err := c.timeline.Check(n, now); err != nil {
		return nil, err
	}
	return c.segment(trackID, n)
}

// SegmentAt returns the segment of a track that starts at media time start ($Time$).
func (c *Channel) SegmentAt(trackID string, start uint64, now time.Time) (*media.Segment, error) {
	t, err := c.info.Track(trackID)
	if err != nil {
		return nil, err
	}
	// Segment n starts near n·D; audio segments start at the first sample at or after it.
	n := uint64(t.Duration(start) / c.timeline.SegmentDuration)
	for _, cand := range []uint64{n, n + 1} {
		s, err := c.Segment(trackID, cand, now)
		if err != nil {
			return nil, err
		}
		if s.Start == start {
			return s, nil
		}
	}
	return nil, fmt.Errorf("channel %q track %q has no segment at time %d: %w", c.info.Name, trackID, start, media.ErrNotFound)
}

// segment returns n from the window, generating it when the channel has a generator.
func (c *Channel) segment(trackID string, n uint64) (*media.Segment, error) {
	c.mu.Lock()
	s, ok := c.window[trackID][n]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	if c.gen == nil {
		return nil, fmt.Errorf("channel %q track %q segment %d is not here (encoder late?): %w", c.info.Name, trackID, n, media.ErrUnavailable)
	}
	s, err := c.gen.Segment(trackID, n)
	if err != nil {
		return nil, fmt.Errorf("channel %q track %q segment %d: %w", c.info.Name, trackID, n, err)
	}
	return c.store(trackID, s), nil
}

// store keeps s if it is inside the current window (by the real clock), so a pinned
// clock in a test cannot grow memory, and drops segments that left the window. It
// returns the stored copy: when two readers build the same segment, both share one.
// A newly stored segment also goes to the archive, outside the lock.
func (c *Channel) store(trackID string, s *media.Segment) *media.Segment {
	kept, isNew := c.keep(trackID, s)
	if isNew && c.archive != nil {
		c.archive.save(trackID, kept)
	}
	return kept
}

func (c *Channel) keep(trackID string, s *media.Segment) (kept *media.Segment, isNew bool) {
	first, _, ok := c.timeline.Window(c.now())
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok && s.Number+1 < first {
		return s, false
	}
	w := c.window[trackID]
	if w == nil {
		w = map[uint64]*media.Segment{}
		c.window[trackID] = w
	}
	if old, dup := w[s.Number]; dup {
		return old, false
	}
	w[s.Number] = s
	for num := range w {
		if ok && num+1 < first { // keep one segment before the window for late readers
			delete(w, num)
		}
	}
	return s, true
}

// Window lists each track's segments available at now, oldest first, for manifests.
// Durations and start times come from the segments themselves (audio segment durations
// vary by a sample or so around the nominal duration).
func (c *Channel) Window(now time.Time) (map[string][]media.SegmentRef, error) {
	first, last, ok := c.timeline.Window(now)
	out := map[string][]media.SegmentRef{}
	if !ok {
		return out, nil
	}
	for _, t := range c.info.Tracks {
		refs := make([]media.SegmentRef, 0, last-first+1)
		for n := first; n <= last; n++ {
			s, err := c.segment(t.ID, n)
			if err != nil {
				return nil, err
			}
			refs = append(refs, s.SegmentRef)
		}
		out[t.ID] = refs
	}
	return out, nil
}

// Publish adds a complete segment fed by a source without a generator (live ingest)
// and hands its chunks to subscribers.
func (c *Channel) Publish(trackID string, s *media.Segment) error {
	if _, err := c.info.Track(trackID); err != nil {
		return err
	}
	s = c.store(trackID, s)
	for i, ch := range s.Chunks {
		c.deliver(Event{Track: trackID, Number: s.Number, Index: i, Last: i == len(s.Chunks)-1, Chunk: ch})
	}
	return nil
}

// Run is the channel's clock for push transports: it hands every chunk to subscribers
// when the chunk's media end time has passed, and warms the window for pull viewers.
// It returns when ctx ends. Channels fed by Publish need not run it.
func (c *Channel) Run(ctx context.Context) error {
	if c.gen == nil {
		<-ctx.Done()
		return nil
	}
	n := c.timeline.NumberAt(c.now())
	for {
		segs := make([]*media.Segment, len(c.info.Tracks))
		for i, t := range c.info.Tracks {
			s, err := c.segment(t.ID, n)
			if err != nil {
				return err
			}
			segs[i] = s
		}
		if err := c.release(ctx, n, segs); err != nil {
			return nil //nolint:nilerr // ctx ended: a clean stop
		}
		n++
	}
}

// release delivers the chunks of segment n of every track in order of their due time.
func (c *Channel) release(ctx context.Context, n uint64, segs []*media.Segment) error {
	segStart := c.timeline.AvailabilityStart.Add(time.Duration(n) * c.timeline.SegmentDuration)
	type due struct {
		at    time.Time
		ev    Event
		track int
	}
	var queue []due
	for i, s := range segs {
		t := c.info.Tracks[i]
		var offset uint64
		for k, ch := range s.Chunks {
			offset += ch.Duration
			at := segStart.Add(t.Duration(offset))
			if k == len(s.Chunks)-1 {
				at = c.timeline.Availability(n) // the segment's last chunk completes it
			}
			queue = append(queue, due{at, Event{Track: t.ID, Number: n, Index: k, Last: k == len(s.Chunks)-1, Chunk: ch}, i})
		}
	}
	// Stable insertion sort by due time: a few dozen chunks per segment.
	for i := 1; i < len(queue); i++ {
		for j := i; j > 0 && queue[j].at.Before(queue[j-1].at); j-- {
			queue[j], queue[j-1] = queue[j-1], queue[j]
		}
	}
	for _, d := range queue {
		if wait := d.at.Sub(c.now()); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return ctx.Err()
			case <-timer.C:
			}
		}
		c.deliver(d.ev)
	}
	return nil
}
