// Package manifest holds what the DASH and HLS renderers (subpackages dash and hls)
// need to describe one stream, on demand or live.
package manifest

import (
	"time"

	"github.com/streambed/streambed/internal/media"
)

// Addressing selects how segments are named in an MPD.
type Addressing int

const (
	// Number: SegmentTemplate with $Number$ and a nominal @duration.
	Number Addressing = iota
	// Timeline: SegmentTemplate with a SegmentTimeline and $Time$.
	Timeline
)

// Presentation is everything a renderer needs. Renderers are pure: same input, same bytes.
type Presentation struct {
	Stream     *media.Stream
	Addressing Addressing
	// Segments lists, per track ID, the segments to describe: every segment of an asset,
	// or a live channel's current window, oldest first.
	Segments map[string][]media.SegmentRef

	// URL templates, relative to the manifest, with DASH identifiers
	// ($RepresentationID$, $Number$, $Time$). HLS renderers substitute them per segment.
	InitTemplate   string // "$RepresentationID$/init.mp4"
	MediaTemplate  string // "$RepresentationID$/$Number$.m4s" or "$RepresentationID$/t$Time$.m4s"
	PlaylistFormat string // HLS media playlist per track, "%s/playlist.m3u8" (track ID)

	// Live only.
	Live                       bool
	Timeline                   media.Timeline // availability start, segment duration, DVR window
	PublishTime                time.Time
	MinimumUpdatePeriod        time.Duration
	SuggestedPresentationDelay time.Duration
	UTCTimingURL               string // absolute or root-relative URL of /time
	StartNumber                uint64 // $Number$ of media time 0 (live: 0)
}
