package looplive

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// DefaultAvailabilityStart anchors looped channels. Not the Unix epoch (as livesim2
// uses): FFmpeg's DASH demuxer (5.1) takes availabilityStartTime=1970 for "absent" and
// then computes a $Number$ hours in the future, so ffprobe could not open the channel.
var DefaultAvailabilityStart = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// ChannelOptions configure NewChannel.
type ChannelOptions struct {
	Name              string        // the channel's name (its URL)
	ChunkDuration     time.Duration // see Options.ChunkDuration
	DVRWindow         time.Duration // timeShiftBufferDepth; 0: 60 s
	PresentationDelay time.Duration // MPD@suggestedPresentationDelay; 0: two segments
	AvailabilityStart time.Time     // the timeline's anchor (required)
	ArchiveDir        string        // optional: keep every segment on disk
	Clock             hub.Clock     // nil: time.Now
}

// Source is a looped asset as a channel's source. Run paces every chunk into the
// channel when it is due; as a hub.OnDemand it also makes any segment when a reader
// asks first, so the same URL yields the same bytes on any origin, at any time, and a
// request may pin the clock (`?nowMS=`).
type Source struct {
	loop  *Loop
	sched Schedule
	info  *media.Stream
	now   hub.Clock
}

var (
	_ hub.Source   = (*Source)(nil)
	_ hub.OnDemand = (*Source)(nil)
)

// NewChannel makes a live channel that loops asset a forever, and its source. Register
// both with Hub.AddChannel, which runs the source; or use AddChannel.
func NewChannel(a *hub.Asset, o ChannelOptions) (*hub.Channel, *Source, error) {
	if o.AvailabilityStart.IsZero() {
		return nil, nil, fmt.Errorf("channel %q: no availability start", o.Name)
	}
	loop, err := New(a, Options{ChunkDuration: o.ChunkDuration})
	if err != nil {
		return nil, nil, fmt.Errorf("channel %q: %w", o.Name, err)
	}
	info := *a.Info()
	info.Name = o.Name
	inits := map[string][]byte{}
	for _, t := range info.Tracks {
		inits[t.ID], _ = a.Init(t.ID)
	}
	dvr := o.DVRWindow
	if dvr == 0 {
		dvr = 60 * time.Second
	}
	now := o.Clock
	if now == nil {
		now = time.Now
	}
	src := &Source{loop: loop, info: &info, now: now,
		sched: Schedule{Start: o.AvailabilityStart.UTC(), SegmentDuration: info.SegmentDuration, DVRWindow: dvr}}
	c, err := hub.NewChannel(hub.ChannelConfig{
		Info: &info, Inits: inits, OnDemand: src, ArchiveDir: o.ArchiveDir, Clock: o.Clock,
		PresentationDelay: o.PresentationDelay, ChunkDuration: loop.ChunkDuration(),
		Timeline: media.Timeline{AvailabilityStart: src.sched.Start, SegmentDuration: info.SegmentDuration, TimeShiftBufferDepth: dvr},
	})
	if err != nil {
		return nil, nil, err
	}
	return c, src, nil
}

// AddChannel makes a looped channel and registers it with h, which runs its source
// until the channel is removed or ctx ends.
func AddChannel(ctx context.Context, h *hub.Hub, a *hub.Asset, o ChannelOptions) (*hub.Channel, error) {
	c, src, err := NewChannel(a, o)
	if err != nil {
		return nil, err
	}
	if err := h.AddChannel(ctx, c, src); err != nil {
		return nil, err
	}
	return c, nil
}

// Window is the schedule's complete segments at now (hub.OnDemand).
func (s *Source) Window(now time.Time) (first, last uint64, ok bool) { return s.sched.Window(now) }

// AvailableAt is when segment n completes (hub.OnDemand).
func (s *Source) AvailableAt(n uint64) time.Time { return s.sched.Availability(n) }

// Number is the segment of a track that starts at media time start (hub.OnDemand).
func (s *Source) Number(trackID string, start uint64) (uint64, bool) {
	lt, ok := s.loop.tracks[trackID]
	if !ok || lt.loopDur == 0 {
		return 0, false
	}
	k := uint64(len(lt.segs))
	loop, off := start/lt.loopDur, start%lt.loopDur+lt.first
	i := sort.Search(len(lt.segs), func(i int) bool { return lt.segs[i].ref.Start >= off })
	if i == len(lt.segs) || lt.segs[i].ref.Start != off {
		return 0, false
	}
	return loop*k + uint64(i), true
}

// Segment makes segment n of a track (hub.OnDemand).
func (s *Source) Segment(trackID string, n uint64) (*media.Segment, error) {
	return s.loop.Segment(trackID, n)
}

// Run paces the loop into c: every chunk is appended when its media end time has
// passed (a segment's last chunk at the segment's availability), from the segment in
// progress at start on, until ctx ends.
func (s *Source) Run(ctx context.Context, c *hub.Channel) error {
	n := s.sched.NumberAt(s.now())
	for {
		if err := s.release(ctx, c, n); err != nil {
			if ctx.Err() != nil {
				return nil // a clean stop
			}
			return err
		}
		n++
	}
}

// release appends the chunks of segment n of every track in order of their due time.
func (s *Source) release(ctx context.Context, c *hub.Channel, n uint64) error {
	segStart := s.sched.Start.Add(time.Duration(n) * s.sched.SegmentDuration)
	type due struct {
		at    time.Time
		track string
		chunk *media.Chunk
		last  bool
	}
	var queue []due
	for _, t := range s.info.Tracks {
		seg, err := s.loop.Segment(t.ID, n)
		if err != nil {
			return err
		}
		var offset uint64
		for k, ch := range seg.Chunks {
			offset += ch.Duration
			at := segStart.Add(t.Duration(offset))
			last := k == len(seg.Chunks)-1
			if last {
				at = s.sched.Availability(n) // the segment's last chunk completes it
			}
			queue = append(queue, due{at, t.ID, ch, last})
		}
	}
	sort.SliceStable(queue, func(i, j int) bool { return queue[i].at.Before(queue[j].at) })
	for _, d := range queue {
		if wait := d.at.Sub(s.now()); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return ctx.Err()
			case <-timer.C:
			}
		}
		if err := c.AppendChunk(d.track, n, d.chunk, d.last); err != nil {
			return fmt.Errorf("channel %q: %w", c.Info().Name, err)
		}
	}
	return nil
}
