package player

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"time"

	segtemplate "github.com/streambed/streambed/internal/manifest" // ExpandTemplate: the origin's own, one implementation
	"github.com/streambed/streambed/internal/media"
)

// Manifest is a parsed MPD or HLS presentation, reduced to what the player needs. The
// dash and hls subpackages build it; the core never sees XML or playlists.
//
// Positions are presentation times as time.Duration on one timeline: for DASH the MPD
// timeline (period start + media time − presentationTimeOffset), for HLS the sum of
// segment durations (anchored on EXT-X-PROGRAM-DATE-TIME when present). For live
// streams, wall time = AvailabilityStart + position.
type Manifest struct {
	URL  string // where it was loaded from
	Live bool   // MPD@type="dynamic", or an HLS playlist without EXT-X-ENDLIST

	AvailabilityStart          time.Time     // live: wall time of position 0
	Duration                   time.Duration // on demand: presentation duration (0: from segments)
	MinimumUpdatePeriod        time.Duration // live: reload the manifest at least this often (0: only when needed)
	TimeShiftBufferDepth       time.Duration // live: the DVR window (0: unknown)
	SuggestedPresentationDelay time.Duration // live: how far behind the edge to play (0: unknown)
	MaxSegmentDuration         time.Duration
	UTCTiming                  []UTCTiming
	// ServiceDescription is the latency a low-latency stream asks the player to keep
	// (DASH ServiceDescription); nil when the manifest has none.
	ServiceDescription *ServiceDescription
	// Low-latency HLS (player/hls): reloads the origin holds until the next part is
	// listed (CAN-BLOCK-RELOAD), so a stream at the end of its list waits for the
	// reload in flight; PartTarget; and ListedEdge, the end of the newest part listed
	// when the manifest was loaded — hls.js's live edge is that plus the time since.
	BlockingReload bool
	PartTarget     time.Duration
	ListedEdge     time.Duration

	Sets []*AdaptationSet
}

// ServiceDescription is a low-latency stream's target latency (wall clock minus the
// wall time of the playhead) and the playback rates a player may steer it with.
type ServiceDescription struct {
	TargetLatency, MinLatency, MaxLatency time.Duration // 0: not given
	MinPlaybackRate, MaxPlaybackRate      float64       // 0: not given
	// Source names where it came from in the QoE report's target_source (""
	// "service-description"; HLS: "part-hold-back").
	Source string
	// CatchUp is whose latency rule the player imitates (target.go).
	CatchUp CatchUpRule
}

// CatchUpRule names a player's rule for keeping the target latency.
type CatchUpRule int

const (
	// CatchUpDashJS steers by a playback rate above or below 1 (dash.js).
	CatchUpDashJS CatchUpRule = iota
	// CatchUpHLSJS starts the target behind hls.js's live edge and only speeds up, with
	// more than a second buffered (hls.js 1.7 in low-latency mode).
	CatchUpHLSJS
)

// UTCTiming is one clock source of a DASH MPD.
type UTCTiming struct {
	Scheme string // e.g. "urn:mpeg:dash:utc:http-iso:2014"
	Value  string // absolute URL (resolved by the parser) or, for direct schemes, the time
}

// AdaptationSet is a set of interchangeable renditions of one kind.
type AdaptationSet struct {
	Kind            media.Kind
	Lang            string
	Representations []*Representation // ascending bandwidth
}

// Representation is one rendition and its segments.
type Representation struct {
	ID        string
	Bandwidth int // bit/s, as declared
	Width     int
	Height    int
	Codecs    string
	InitURL   string // absolute; "" when the media segments are self-initialising
	Index     *SegmentIndex
}

// Segment is one addressable media segment of a representation.
type Segment struct {
	Number   uint64
	Time     uint64        // media time in the index timescale ($Time$)
	Start    time.Duration // position of its first sample
	Duration time.Duration
	URL      string // absolute
	// AvailableAt is when a live segment may be requested (zero: listed means available).
	AvailableAt time.Time
	// Dependent is set on an entry that cannot be decoded without the one before it in
	// its representation (an LL-HLS part without INDEPENDENT=YES): playback that starts
	// or switches there starts at the last independent entry before it (SegmentIndex.
	// Independent), as hls.js does.
	Dependent bool
}

// End is the position just after the segment.
func (s Segment) End() time.Duration { return s.Start + s.Duration }

// SegmentIndex addresses the segments of a representation in one of two ways:
//
//   - Template: a constant segment Duration (ticks) and a Media URL template with
//     $Number$ (DASH SegmentTemplate@duration). Endless for live; bounded by End
//     for on demand.
//   - List: explicit segments (DASH SegmentTimeline, HLS media playlists), with
//     numbers, media times and URLs.
type SegmentIndex struct {
	Timescale   uint64
	PTO         uint64        // presentationTimeOffset, ticks
	PeriodStart time.Duration // position of media time PTO

	// Template addressing.
	Media          string   // template, with $RepresentationID$ and $Bandwidth$ already substituted
	Base           *url.URL // resolves Media
	StartNumber    uint64
	Duration       uint64        // ticks; > 0 selects template addressing
	End            time.Duration // on demand: end of the period (0: unbounded)
	AvailabilityTO time.Duration // availabilityTimeOffset (low latency): segments available that much earlier

	// List addressing. A listed segment without a URL takes it from Media.
	List []Segment

	// For availability of live segments: wall time of position 0 (0: always available).
	AvailabilityStart time.Time
}

// IsTemplate reports whether segments are computed from a constant duration.
func (ix *SegmentIndex) IsTemplate() bool { return ix.Duration > 0 }

// NominalDuration is the template duration, or the longest listed segment.
func (ix *SegmentIndex) NominalDuration() time.Duration {
	if ix.IsTemplate() {
		return ticks(ix.Duration, ix.Timescale)
	}
	var d time.Duration
	for _, s := range ix.List {
		d = max(d, s.Duration)
	}
	return d
}

// Ticks converts a tick count in timescale to a duration, exactly to the nanosecond.
func Ticks(n, timescale uint64) time.Duration { return ticks(n, timescale) }

func ticks(n, timescale uint64) time.Duration {
	if timescale == 0 {
		return 0
	}
	s := n / timescale
	r := n % timescale
	return time.Duration(s)*time.Second + time.Duration(r*uint64(time.Second)/timescale)
}

// toTicks converts a duration to ticks, rounding down.
func toTicks(d time.Duration, timescale uint64) uint64 {
	if d <= 0 {
		return 0
	}
	s := uint64(d / time.Second)
	r := uint64(d % time.Second)
	return s*timescale + r*timescale/uint64(time.Second)
}

// eps absorbs rounding between tick and nanosecond positions.
const eps = time.Millisecond

// Next returns the segment that holds position pos, or the first one after it when
// pos falls in a gap. ok is false when there is none (past the end, or not listed yet).
func (ix *SegmentIndex) Next(pos time.Duration) (Segment, bool) {
	if ix.IsTemplate() {
		if ix.End > 0 && pos+eps >= ix.End {
			return Segment{}, false
		}
		rel := pos - ix.PeriodStart + eps
		if rel < 0 {
			rel = 0
		}
		k := toTicks(rel, ix.Timescale) / ix.Duration
		s := ix.template(k)
		if ix.End > 0 && s.Start >= ix.End-eps {
			return Segment{}, false
		}
		return s, true
	}
	i := sort.Search(len(ix.List), func(i int) bool { return ix.List[i].End() > pos+eps })
	if i == len(ix.List) {
		return Segment{}, false
	}
	return ix.listed(i), true
}

// listed returns List[i] with its URL (expanded from Media when the list has none).
func (ix *SegmentIndex) listed(i int) Segment {
	s := ix.List[i]
	if s.URL == "" && ix.Media != "" {
		n, t := s.Number, s.Time
		s.URL = ix.resolve(expandSegment(ix.Media, n, t))
	}
	return s
}

// Independent returns seg itself, or for a dependent listed entry the last
// independent one at or before it (where a decoder can start).
func (ix *SegmentIndex) Independent(seg Segment) Segment {
	if !seg.Dependent || ix.IsTemplate() {
		return seg
	}
	i := sort.Search(len(ix.List), func(i int) bool { return ix.List[i].Start > seg.Start })
	for i--; i >= 0; i-- {
		if !ix.List[i].Dependent {
			return ix.listed(i)
		}
	}
	return seg
}

// First returns the first segment (on demand: the start of the presentation).
func (ix *SegmentIndex) First() (Segment, bool) {
	if ix.IsTemplate() {
		return ix.template(0), true
	}
	if len(ix.List) == 0 {
		return Segment{}, false
	}
	return ix.listed(0), true
}

// Last returns the last segment of a bounded index: the last listed segment, or for
// templates the last one before End. For a live template it returns the newest
// segment available at wall time now.
func (ix *SegmentIndex) Last(now time.Time) (Segment, bool) {
	if ix.IsTemplate() {
		var end time.Duration
		bounded := ix.End > 0 // the end is the period's (its last segment may be short)
		switch {
		case !ix.AvailabilityStart.IsZero():
			// Live: what is out by now, up to the end of a period that has one (a
			// live period followed by another ends before the live edge does).
			end = now.Sub(ix.AvailabilityStart) + ix.AvailabilityTO
			if bounded && ix.End <= end {
				end = ix.End
			} else {
				bounded = false
			}
		case ix.End > 0:
			end = ix.End
		default:
			return Segment{}, false
		}
		rel := end - ix.PeriodStart
		if rel <= 0 {
			return Segment{}, false
		}
		var n uint64 // segments that fit completely
		if bounded {
			n = toTicks(rel+eps, ix.Timescale) / ix.Duration
			if toTicks(rel+eps, ix.Timescale)%ix.Duration > toTicks(2*eps, ix.Timescale) {
				n++ // a short last segment of an on-demand period
			}
		} else {
			n = toTicks(rel, ix.Timescale) / ix.Duration
		}
		if n == 0 {
			return Segment{}, false
		}
		return ix.template(n - 1), true
	}
	if len(ix.List) == 0 {
		return Segment{}, false
	}
	return ix.listed(len(ix.List) - 1), true
}

// template builds the k-th segment (0-based from StartNumber) of a template index.
func (ix *SegmentIndex) template(k uint64) Segment {
	t := ix.PTO + k*ix.Duration
	start := ix.PeriodStart + ticks(k*ix.Duration, ix.Timescale)
	d := ticks(ix.Duration, ix.Timescale)
	if ix.End > 0 && start+d > ix.End {
		d = ix.End - start
	}
	s := Segment{Number: ix.StartNumber + k, Time: t, Start: start, Duration: d}
	s.URL = ix.resolve(expandSegment(ix.Media, s.Number, t))
	if !ix.AvailabilityStart.IsZero() {
		s.AvailableAt = ix.AvailabilityStart.Add(s.End() - ix.AvailabilityTO)
	}
	return s
}

func (ix *SegmentIndex) resolve(ref string) string {
	if ix.Base == nil {
		return ref
	}
	u, err := ix.Base.Parse(ref)
	if err != nil {
		return ref
	}
	return u.String()
}

// expandSegment fills a representation's media template (its $RepresentationID$ and
// $Bandwidth$ already substituted) for one segment. A template the MPD got wrong stays
// as it is: the request for it then fails where a person can see the URL.
func expandSegment(tmpl string, number, t uint64) string {
	u, err := segtemplate.ExpandTemplate(tmpl, segtemplate.TemplateValues{Number: number, Time: t})
	if err != nil {
		return tmpl
	}
	return u
}

// ExpandRepresentation substitutes a representation's $RepresentationID$ and
// $Bandwidth$ in a template, leaving the per-segment identifiers for later.
func ExpandRepresentation(tmpl, repID string, bandwidth int) string {
	u, err := segtemplate.ExpandTemplate(tmpl, segtemplate.TemplateValues{
		RepresentationID: repID, Bandwidth: bandwidth, Only: segtemplate.IdentRepresentationID | segtemplate.IdentBandwidth,
	})
	if err != nil {
		return tmpl
	}
	return u
}

// Set returns the first adaptation set of kind k, or nil.
func (m *Manifest) Set(k media.Kind) *AdaptationSet {
	for _, s := range m.Sets {
		if s.Kind == k {
			return s
		}
	}
	return nil
}

// Representation returns the representation with the given ID and its set.
func (m *Manifest) Representation(id string) (*AdaptationSet, *Representation) {
	for _, s := range m.Sets {
		for _, r := range s.Representations {
			if r.ID == id {
				return s, r
			}
		}
	}
	return nil, nil
}

// Validate checks what the player relies on.
func (m *Manifest) Validate() error {
	if len(m.Sets) == 0 {
		return fmt.Errorf("manifest %s: no playable adaptation set: %w", m.URL, media.ErrInvalidMedia)
	}
	for _, s := range m.Sets {
		if len(s.Representations) == 0 {
			return fmt.Errorf("manifest %s: empty %s adaptation set: %w", m.URL, s.Kind, media.ErrInvalidMedia)
		}
		for _, r := range s.Representations {
			if r.Index == nil || (!r.Index.IsTemplate() && len(r.Index.List) == 0 && !m.Live) {
				return fmt.Errorf("manifest %s: representation %q has no segments: %w", m.URL, r.ID, media.ErrInvalidMedia)
			}
			if r.Index.Timescale == 0 {
				return fmt.Errorf("manifest %s: representation %q has no timescale: %w", m.URL, r.ID, media.ErrInvalidMedia)
			}
		}
		sort.SliceStable(s.Representations, func(i, j int) bool {
			return s.Representations[i].Bandwidth < s.Representations[j].Bandwidth
		})
	}
	if m.Live && m.AvailabilityStart.IsZero() {
		return fmt.Errorf("manifest %s: live without availability start: %w", m.URL, media.ErrInvalidMedia)
	}
	return nil
}

// ManifestLoader loads (and reloads) a manifest through fetch, which is the player's
// counting wrapper around its Fetcher. now is the player's best estimate of wall time
// (server-synchronised once a UTCTiming source has been read), used to expand
// open-ended live timelines.
type ManifestLoader func(ctx context.Context, fetch FetcherFunc, manifestURL string, now time.Time) (*Manifest, error)

type playingKey struct{}

// WithPlaying tells a ManifestLoader, through ctx, the representations the player
// plays — the ones its next requests are for (IDs) — so that a loader of one live
// playlist per representation may reload only those, as hls.js reloads only the
// level it loads (package hls, low-latency reloads).
func WithPlaying(ctx context.Context, ids []string) context.Context {
	return context.WithValue(ctx, playingKey{}, ids)
}

// Playing is what WithPlaying put in ctx; nil when the player has not said (on the
// first load): load every representation.
func Playing(ctx context.Context) []string {
	ids, _ := ctx.Value(playingKey{}).([]string)
	return ids
}
