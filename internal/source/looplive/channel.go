package looplive

import (
	"fmt"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// ChannelOptions configure NewChannel.
type ChannelOptions struct {
	Name              string        // the channel's name (its URL)
	ChunkDuration     time.Duration // see Options.ChunkDuration
	DVRWindow         time.Duration // timeShiftBufferDepth; 0: 60 s
	AvailabilityStart time.Time     // the timeline's anchor (required)
	ArchiveDir        string        // optional: keep every segment on disk
	Clock             hub.Clock     // nil: time.Now
}

// NewChannel makes a live channel that loops asset a forever.
func NewChannel(a *hub.Asset, o ChannelOptions) (*hub.Channel, error) {
	if o.AvailabilityStart.IsZero() {
		return nil, fmt.Errorf("channel %q: no availability start", o.Name)
	}
	loop, err := New(a, Options{ChunkDuration: o.ChunkDuration})
	if err != nil {
		return nil, fmt.Errorf("channel %q: %w", o.Name, err)
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
	return hub.NewChannel(hub.ChannelConfig{
		Info: &info, Inits: inits, Generator: loop, ArchiveDir: o.ArchiveDir, Clock: o.Clock,
		Timeline: media.Timeline{AvailabilityStart: o.AvailabilityStart.UTC(), SegmentDuration: info.SegmentDuration, TimeShiftBufferDepth: dvr},
	})
}
