// Package manifest holds what the DASH and HLS renderers (subpackages dash and hls)
// need to describe one stream, on demand or live.
//
// Time model. Segment times are integers in each track's timescale. For a live
// channel, media time 0 of every track is Timeline.AvailabilityStart: segment n of a
// $Number$ channel covers [n·D, (n+1)·D) and its tfdt is n·D·timescale, so the MPD
// needs no presentationTimeOffset (it is 0) and HLS program dates are
// AvailabilityStart + tfdt/timescale. On demand, the first listed segment's start is
// the presentation's time 0 (the MPD carries it as presentationTimeOffset).
package manifest

import (
	"fmt"
	"strings"
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

// String names the addressing mode as it appears in file names and logs.
func (a Addressing) String() string {
	switch a {
	case Number:
		return "number"
	case Timeline:
		return "timeline"
	}
	return fmt.Sprintf("Addressing(%d)", int(a))
}

// Presentation is everything a renderer needs. Renderers are pure: same input, same bytes.
//
// Zero values of the optional durations are replaced by defaults derived from the
// segment duration (see the Effective* methods), so every caller gets the same MPD.
type Presentation struct {
	Stream     *media.Stream
	Addressing Addressing
	// Segments lists, per track ID, the segments to describe: every segment of an asset,
	// or a live channel's current window, oldest first. Required by HLS and by the
	// Timeline addressing; a live $Number$ MPD does not need it (it is only used for
	// maxSegmentDuration and publishTime when present).
	Segments map[string][]media.SegmentRef

	// URL templates, relative to the manifest, with DASH identifiers
	// ($RepresentationID$, $Number$, $Time$, $Bandwidth$, with optional %0Nd widths).
	// HLS renderers substitute them per segment.
	InitTemplate   string // "$RepresentationID$/init.mp4"
	MediaTemplate  string // "$RepresentationID$/$Number$.m4s" or "$RepresentationID$/t$Time$.m4s"
	PlaylistFormat string // HLS media playlist per track, "%s/playlist.m3u8" (track ID)

	// MinBufferTime is the MPD@minBufferTime; 0 means one segment duration.
	MinBufferTime time.Duration

	// Live only.
	Live                       bool
	Timeline                   media.Timeline // availability start, segment duration, DVR window
	PublishTime                time.Time      // 0: the end of the newest listed segment
	MinimumUpdatePeriod        time.Duration  // 0: one segment duration
	SuggestedPresentationDelay time.Duration  // 0: three segment durations
	UTCTimingURL               string         // absolute or root-relative URL of /time; "" omits UTCTiming
	// Periods are the live periods after the first (where each starts); segments
	// say which they belong to (SegmentRef.Period). A DASH MPD lists a Period per
	// period in the window, an HLS playlist an EXT-X-DISCONTINUITY before each.
	Periods []media.Period
	// PeriodStart is set by a renderer on the part of a presentation that is one
	// later period: its start, whose media time is the presentationTimeOffset.
	PeriodStart time.Duration
	// StartNumber is the $Number$ of the segment at media time 0 (live: 0). On demand,
	// the MPD uses the first listed segment's number instead, when segments are listed.
	StartNumber uint64
	// LowLatency, when set on a live presentation, makes it low-latency DASH: the
	// origin serves a segment in progress chunk by chunk, and players are told so
	// (see LowLatency). nil: segments are announced when complete.
	LowLatency *LowLatency
	// Edges, with LowLatency, make HLS media playlists LL-HLS: per track, the parts
	// near the live edge (see Edge). A track without one gets a plain playlist.
	Edges map[string]*Edge
	// Skip asks for an LL-HLS delta update (_HLS_skip): the oldest segments are
	// replaced by EXT-X-SKIP when the playlist is long enough to offer it.
	Skip bool
}

// Edge is one track's LL-HLS live edge: the complete parts of its newest listed
// segments and of the segment in progress (the one after the newest listed), oldest
// first, and the part to come, which the playlist hints so a player asks for it
// before it exists.
type Edge struct {
	Parts []Part
	Hint  Part // Number and Index of the next part
	// Period is the live period of the segment in progress (SegmentRef.Period).
	Period uint32
}

// LowLatency is what a low-latency DASH MPD announces (DASH-IF "Low-latency Modes for
// DASH"; ISO/IEC 23009-1 ServiceDescription): segments become available for request
// one chunk after they start (SegmentTemplate@availabilityTimeOffset = D − chunk,
// @availabilityTimeComplete="false": the response grows as the chunks are made), the
// latency to play at and the playback rates to steer it with.
type LowLatency struct {
	ChunkDuration time.Duration // the longest chunk
	// TargetLatency, MinLatency and MaxLatency are ServiceDescription/Latency (wall
	// clock minus the playhead's time).
	TargetLatency, MinLatency, MaxLatency time.Duration
	// MinPlaybackRate and MaxPlaybackRate bound the rate a player may steer with.
	MinPlaybackRate, MaxPlaybackRate float64
	// PartTarget is the LL-HLS EXT-X-PART-INF:PART-TARGET: the longest part.
	PartTarget time.Duration
	// PartHoldBack is the LL-HLS PART-HOLD-BACK asked for (serve
	// --ll-hls-part-hold-back); 0: DefaultPartHoldBackParts part targets. HLSPartHoldBack
	// is what a playlist announces.
	PartHoldBack time.Duration
}

// DefaultPartHoldBackParts and MinPartHoldBackParts are PART-HOLD-BACK in part targets:
// the LL-HLS spec says it SHOULD be at least three and MUST be at least two
// (RFC 8216bis 4.4.3.8).
const (
	DefaultPartHoldBackParts = 3
	MinPartHoldBackParts     = 2
)

// HLSPartHoldBack is the PART-HOLD-BACK of the channel's playlists: the one asked for,
// else three part targets; never below two part targets, the spec's floor, so a
// channel whose parts are longer than configured for (an encoder's long chunks) still
// gets a valid playlist. Players (hls.js, the headless player) aim this far behind the
// newest part.
func (l *LowLatency) HLSPartHoldBack() time.Duration {
	if l.PartHoldBack <= 0 {
		return DefaultPartHoldBackParts * l.PartTarget
	}
	return max(l.PartHoldBack, MinPartHoldBackParts*l.PartTarget)
}

// Low-latency defaults: three chunks in flight plus a margin for a request's round
// trip, the MSE append and a clock that is a little off; dash.js's low-latency mode
// steers to the target within these rates (its own default is ±50%, which is audible).
const (
	lowLatencyMargin  = time.Second
	lowLatencyMinRate = 0.96
	lowLatencyMaxRate = 1.04
)

// NewLowLatency is the low-latency description of a live stream whose segments of
// nominal duration segment are made in chunks of at most chunk; nil when chunks are
// not shorter than segments, so nothing is gained by taking a segment in progress.
// The target is three chunks plus a margin, the minimum half a margin less, and the
// maximum one segment more: beyond it a player is better off jumping to the edge.
func NewLowLatency(segment, chunk time.Duration) *LowLatency {
	if chunk <= 0 || segment <= 0 || chunk >= segment {
		return nil
	}
	target := (3*chunk + lowLatencyMargin).Round(time.Millisecond)
	return &LowLatency{
		ChunkDuration:   chunk,
		TargetLatency:   target,
		MinLatency:      target - lowLatencyMargin/2,
		MaxLatency:      target + segment,
		MinPlaybackRate: lowLatencyMinRate,
		MaxPlaybackRate: lowLatencyMaxRate,
		PartTarget:      PartTarget(chunk),
	}
}

// AvailabilityTimeOffset is how long before its end a segment may be requested: its
// nominal duration less one chunk, in whole milliseconds, rounded down so a request
// is never early.
func (l *LowLatency) AvailabilityTimeOffset(segment time.Duration) time.Duration {
	return (segment - l.ChunkDuration).Truncate(time.Millisecond)
}

// SegmentDuration is the nominal segment duration D: the live timeline's, else the stream's.
func (p *Presentation) SegmentDuration() time.Duration {
	if p.Live && p.Timeline.SegmentDuration > 0 {
		return p.Timeline.SegmentDuration
	}
	return p.Stream.SegmentDuration
}

// EffectiveMinBufferTime is MinBufferTime, or D when it is 0.
func (p *Presentation) EffectiveMinBufferTime() time.Duration {
	if p.MinBufferTime > 0 {
		return p.MinBufferTime
	}
	return p.SegmentDuration()
}

// EffectiveMinimumUpdatePeriod is MinimumUpdatePeriod, or D when it is 0.
func (p *Presentation) EffectiveMinimumUpdatePeriod() time.Duration {
	if p.MinimumUpdatePeriod > 0 {
		return p.MinimumUpdatePeriod
	}
	return p.SegmentDuration()
}

// EffectiveSuggestedPresentationDelay is SuggestedPresentationDelay, or 3·D when it is 0.
func (p *Presentation) EffectiveSuggestedPresentationDelay() time.Duration {
	if p.SuggestedPresentationDelay > 0 {
		return p.SuggestedPresentationDelay
	}
	return 3 * p.SegmentDuration()
}

// EffectiveTimeShiftBufferDepth is the DVR window a channel really keeps: whole
// segments, at least one. Advertising more would send players to
// segments the origin answers with 410.
func (p *Presentation) EffectiveTimeShiftBufferDepth() time.Duration {
	d := p.SegmentDuration()
	keep := p.Timeline.TimeShiftBufferDepth / d
	if keep < 1 {
		keep = 1
	}
	return keep * d
}

// Validate checks what every renderer relies on. Errors wrap media.ErrInvalidMedia
// (a malformed presentation is a programming or packaging error, not a request error)
// or media.ErrNotYet (a live window with no segment yet).
func (p *Presentation) Validate() error {
	if p == nil || p.Stream == nil || len(p.Stream.Tracks) == 0 {
		return fmt.Errorf("presentation has no stream or no tracks: %w", media.ErrInvalidMedia)
	}
	if p.SegmentDuration() <= 0 {
		return fmt.Errorf("stream %q: no segment duration: %w", p.Stream.Name, media.ErrInvalidMedia)
	}
	if p.InitTemplate == "" || p.MediaTemplate == "" {
		return fmt.Errorf("stream %q: empty init or media template: %w", p.Stream.Name, media.ErrInvalidMedia)
	}
	if p.Addressing != Number && p.Addressing != Timeline {
		return fmt.Errorf("stream %q: unknown %s: %w", p.Stream.Name, p.Addressing, media.ErrInvalidMedia)
	}
	if p.Live && p.Timeline.AvailabilityStart.IsZero() {
		return fmt.Errorf("live stream %q: no availability start: %w", p.Stream.Name, media.ErrInvalidMedia)
	}
	for _, t := range p.Stream.Tracks {
		if t.Timescale == 0 {
			return fmt.Errorf("stream %q track %q: no timescale: %w", p.Stream.Name, t.ID, media.ErrInvalidMedia)
		}
		segs := p.Segments[t.ID]
		for i := 1; i < len(segs); i++ {
			if segs[i].Number != segs[i-1].Number+1 || segs[i].Start < segs[i-1].End() {
				return fmt.Errorf("stream %q track %q: segment %d does not follow %d: %w",
					p.Stream.Name, t.ID, segs[i].Number, segs[i-1].Number, media.ErrInvalidMedia)
			}
		}
	}
	return nil
}

// RequireSegments checks that every track lists at least one segment, as HLS and the
// Timeline addressing need. A live channel without any is not yet playable
// (media.ErrNotYet); an asset without any is broken (media.ErrInvalidMedia).
func (p *Presentation) RequireSegments() error {
	for _, t := range p.Stream.Tracks {
		if len(p.Segments[t.ID]) == 0 {
			kind := media.ErrInvalidMedia
			if p.Live {
				kind = media.ErrNotYet
			}
			return fmt.Errorf("stream %q track %q: no segments to describe: %w", p.Stream.Name, t.ID, kind)
		}
	}
	return nil
}

// PlaylistURI is the HLS media playlist of track id, relative to the multivariant playlist.
func (p *Presentation) PlaylistURI(id string) (string, error) {
	if strings.Count(p.PlaylistFormat, "%s") != 1 || strings.Count(p.PlaylistFormat, "%") != 1 {
		return "", fmt.Errorf("playlist format %q must contain exactly one %%s: %w", p.PlaylistFormat, media.ErrInvalidMedia)
	}
	return strings.Replace(p.PlaylistFormat, "%s", id, 1), nil
}
