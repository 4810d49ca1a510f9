// Package dash renders MPEG-DASH MPDs (ISO/IEC 23009-1, live profile, CMAF segments)
// from a manifest.Presentation.
//
// Layout of every MPD: one Period starting at 0 (live: one per period in the window,
// see splitPeriods); one AdaptationSet for the video
// tracks and one per audio language; a Representation per track. Segments are
// addressed by a SegmentTemplate with either $Number$ and a nominal @duration, or a
// SegmentTimeline and $Time$. The SegmentTemplate sits on the AdaptationSet when it is
// the same for every Representation, else on each Representation (audio timelines
// differ from video ones because AAC frames do not divide the segment duration).
package dash

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"math/bits"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/streambed/streambed/internal/manifest"
	"github.com/streambed/streambed/internal/media"
)

// Render writes the MPD of p to w. Same input, same bytes; nothing is written when
// p is rejected.
//
// Static (on demand): the first listed segment of each track is presentation time 0
// (its start becomes presentationTimeOffset) and, with $Number$, its number the
// startNumber.
//
// Dynamic (live): media time 0 is p.Timeline.AvailabilityStart and the Period starts
// there, so presentationTimeOffset is 0. With $Number$, segment p.StartNumber+k covers
// [k·D, (k+1)·D) and becomes available at AvailabilityStart + (k+1)·D, exactly as
// media.Timeline says; no segment list is needed. With $Time$, the SegmentTimeline
// lists p.Segments, the current window.
//
// Errors wrap media.ErrInvalidMedia for a malformed presentation and media.ErrNotYet
// for a live $Time$ MPD whose window is still empty.
func Render(w io.Writer, p *manifest.Presentation) error {
	m, err := build(p)
	if err != nil {
		return err
	}
	return write(w, m, p.Stream.Name)
}

// write encodes m, indented, with empty elements self-closed.
func write(w io.Writer, m *mpdXML, name string) error {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "  ")
	if err := enc.Encode(m); err != nil {
		return fmt.Errorf("dash: encode MPD of %q: %w", name, err)
	}
	buf.WriteByte('\n')
	_, err := w.Write(selfClose.ReplaceAll(buf.Bytes(), []byte("<$1$2/>")))
	return err
}

// selfClose matches an element with no content, which encoding/xml writes as a pair of
// tags. Attribute values cannot contain '<' or '>' (the encoder escapes them), so the
// pattern cannot match across elements.
var selfClose = regexp.MustCompile(`<([A-Za-z]+)((?: [^<>]*)?)></([A-Za-z]+)>`)

func build(p *manifest.Presentation) (*mpdXML, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("dash: %w", err)
	}
	if err := checkTemplates(p); err != nil {
		return nil, fmt.Errorf("dash: stream %q: %w", p.Stream.Name, err)
	}
	if p.Addressing == manifest.Timeline {
		if err := p.RequireSegments(); err != nil {
			return nil, fmt.Errorf("dash: %w", err)
		}
	}

	m := &mpdXML{
		Xmlns:         mpdNamespace,
		Profiles:      profileLive,
		MinBufferTime: formatDuration(p.EffectiveMinBufferTime()),
	}
	if p.Live {
		m.Type = "dynamic"
		m.AvailabilityStartTime = formatDateTime(p.Timeline.AvailabilityStart)
		m.PublishTime = formatDateTime(publishTime(p))
		m.MinimumUpdatePeriod = formatDuration(p.EffectiveMinimumUpdatePeriod())
		m.TimeShiftBufferDepth = formatDuration(p.EffectiveTimeShiftBufferDepth())
		m.SuggestedPresentationDelay = formatDuration(p.EffectiveSuggestedPresentationDelay())
		m.MaxSegmentDuration = formatDuration(maxSegmentDuration(p))
		if p.UTCTimingURL != "" {
			m.UTCTimings = []descriptorXML{{SchemeIDURI: schemeUTCHTTPISO, Value: p.UTCTimingURL}}
		}
		if ll := p.LowLatency; ll != nil {
			m.ServiceDescriptions = []serviceDescriptionXML{{
				Latency: latencyXML{ReferenceID: producerReferenceID, Target: ll.TargetLatency.Milliseconds(),
					Min: ll.MinLatency.Milliseconds(), Max: ll.MaxLatency.Milliseconds()},
				PlaybackRate: playbackRateXML{Min: formatFloat(ll.MinPlaybackRate), Max: formatFloat(ll.MaxPlaybackRate)},
			}}
		}
	} else {
		m.Type = "static"
		m.MediaPresentationDuration = formatDuration(presentationDuration(p))
	}

	for _, pp := range splitPeriods(p) {
		per := periodXML{ID: fmt.Sprint(pp.index), Start: formatDuration(pp.start)}
		for i, g := range groups(pp.Stream) {
			as, err := adaptationSet(pp.Presentation, i+1, g)
			if err != nil {
				return nil, fmt.Errorf("dash: stream %q: %w", p.Stream.Name, err)
			}
			per.AdaptationSets = append(per.AdaptationSets, as)
		}
		m.Periods = append(m.Periods, per)
	}
	return m, nil
}

// period is one Period of an MPD: the presentation narrowed to its segments (and,
// with a SegmentTimeline, to the tracks that have some), and where it starts.
type period struct {
	*manifest.Presentation
	index uint32
	start time.Duration // Period@start; its media time is presentationTimeOffset
}

// splitPeriods cuts a live window at its period boundaries (SegmentRef.Period): an
// encoder restarted there, and the Period tells players to reset their decoders.
// Media time stays the channel's (the ingest shifted it), so a later period's
// presentationTimeOffset is its start; a window within one period, and every
// on-demand presentation, is a single Period as it always was (start 0, id "0",
// unless the window holds only a later period).
func splitPeriods(p *manifest.Presentation) []period {
	var indexes []uint32
	seen := map[uint32]bool{}
	for _, t := range p.Stream.Tracks {
		for _, r := range p.Segments[t.ID] {
			if !seen[r.Period] {
				seen[r.Period] = true
				indexes = append(indexes, r.Period)
			}
		}
	}
	if !p.Live || len(indexes) == 0 || len(indexes) == 1 && indexes[0] == 0 {
		return []period{{Presentation: p}}
	}
	sort.Slice(indexes, func(i, j int) bool { return indexes[i] < indexes[j] })
	out := make([]period, 0, len(indexes))
	for _, idx := range indexes {
		q := *p
		q.Segments = map[string][]media.SegmentRef{}
		stream := *p.Stream
		stream.Tracks = nil
		for _, t := range p.Stream.Tracks {
			var refs []media.SegmentRef
			for _, r := range p.Segments[t.ID] {
				if r.Period == idx {
					refs = append(refs, r)
				}
			}
			if len(refs) == 0 && p.Addressing == manifest.Timeline {
				continue // a SegmentTimeline cannot be empty: the track sits this period out
			}
			q.Segments[t.ID] = refs
			stream.Tracks = append(stream.Tracks, t)
		}
		q.Stream = &stream
		pp := period{Presentation: &q, index: idx}
		if idx > 0 {
			pp.start = periodStart(p, idx)
			q.PeriodStart = pp.start
			if p.Addressing == manifest.Number {
				q.StartNumber = uint64(pp.start / p.SegmentDuration())
			}
		}
		out = append(out, pp)
	}
	return out
}

// periodStart is where live period idx starts: as recorded, else (a presentation
// that lost the record) its earliest listed segment.
func periodStart(p *manifest.Presentation, idx uint32) time.Duration {
	for _, pr := range p.Periods {
		if pr.Index == idx {
			return pr.Start
		}
	}
	start := time.Duration(-1)
	for _, t := range p.Stream.Tracks {
		for _, r := range p.Segments[t.ID] {
			if r.Period == idx && (start < 0 || t.Duration(r.Start) < start) {
				start = t.Duration(r.Start)
			}
		}
	}
	return max(start, 0)
}

// checkTemplates rejects identifiers the addressing cannot resolve: $Time$ needs a
// SegmentTimeline (23009-1 5.3.9.4.4), and every template needs $RepresentationID$
// unless there is a single track.
func checkTemplates(p *manifest.Presentation) error {
	for _, tmpl := range []string{p.InitTemplate, p.MediaTemplate} {
		if _, err := manifest.ExpandTemplate(tmpl, manifest.TemplateValues{}); err != nil {
			return err
		}
		if len(p.Stream.Tracks) > 1 && !manifest.UsesIdentifier(tmpl, "RepresentationID") && !manifest.UsesIdentifier(tmpl, "Bandwidth") {
			return fmt.Errorf("template %q names no representation: %w", tmpl, media.ErrInvalidMedia)
		}
	}
	usesNumber := manifest.UsesIdentifier(p.MediaTemplate, "Number")
	usesTime := manifest.UsesIdentifier(p.MediaTemplate, "Time")
	switch {
	case p.Addressing == manifest.Number && !usesNumber:
		return fmt.Errorf("$Number$ addressing with media template %q: %w", p.MediaTemplate, media.ErrInvalidMedia)
	case p.Addressing == manifest.Number && usesTime:
		return fmt.Errorf("$Time$ needs a SegmentTimeline, media template %q: %w", p.MediaTemplate, media.ErrInvalidMedia)
	case p.Addressing == manifest.Timeline && !usesNumber && !usesTime:
		return fmt.Errorf("media template %q has neither $Time$ nor $Number$: %w", p.MediaTemplate, media.ErrInvalidMedia)
	}
	return nil
}

// group is the tracks of one AdaptationSet.
type group struct {
	kind   media.Kind
	lang   string
	tracks []*media.Track
}

// groups puts every video track in one AdaptationSet and the audio tracks in one per
// language (@lang belongs to the AdaptationSet), in stream order.
func groups(s *media.Stream) []group {
	var out []group
	if v := s.TracksOf(media.Video); len(v) > 0 {
		out = append(out, group{kind: media.Video, tracks: v})
	}
	idx := map[string]int{}
	for _, t := range s.TracksOf(media.Audio) {
		i, ok := idx[t.Language]
		if !ok {
			i = len(out)
			idx[t.Language] = i
			out = append(out, group{kind: media.Audio, lang: t.Language})
		}
		out[i].tracks = append(out[i].tracks, t)
	}
	return out
}

func adaptationSet(p *manifest.Presentation, id int, g group) (adaptationSetXML, error) {
	as := adaptationSetXML{
		ID:               id,
		ContentType:      string(g.kind),
		Lang:             g.lang,
		MimeType:         g.tracks[0].MimeType(),
		SegmentAlignment: true,
		StartWithSAP:     1,
	}
	if g.kind == media.Video || isFirstAudio(p.Stream, g) {
		as.Roles = []descriptorXML{{SchemeIDURI: schemeRole, Value: "main"}}
	}
	if p.Live && p.LowLatency != nil {
		as.ProducerReferenceTimes = []producerReferenceTimeXML{producerReferenceTime(p)}
	}

	templates := make([]*segmentTemplateXML, len(g.tracks))
	var maxRate manifest.FrameRate
	par, sameParForAll := "", true
	for i, t := range g.tracks {
		st, err := segmentTemplate(p, t)
		if err != nil {
			return as, err
		}
		templates[i] = st
		r := representationXML{ID: t.ID, Bandwidth: t.Bandwidth, Codecs: t.Codec}
		switch g.kind {
		case media.Video:
			r.Width, r.Height = t.Width, t.Height
			as.MaxWidth = max(as.MaxWidth, t.Width)
			as.MaxHeight = max(as.MaxHeight, t.Height)
			fr, err := manifest.ParseFrameRate(t.FrameRate)
			if err != nil {
				return as, fmt.Errorf("track %q: %w", t.ID, err)
			}
			if !fr.IsZero() {
				r.FrameRate = fr.DASH()
				if fr.Float() > maxRate.Float() {
					maxRate = fr
				}
			}
			tp := ratio(t.Width, t.Height)
			if i == 0 {
				par = tp
			} else if tp != par {
				sameParForAll = false
			}
		case media.Audio:
			if t.SampleRate > 0 {
				r.AudioSamplingRate = fmt.Sprint(t.SampleRate)
			}
			if t.Channels > 0 {
				r.AudioChannels = []descriptorXML{{SchemeIDURI: schemeAudioConfig, Value: fmt.Sprint(t.Channels)}}
			}
		}
		as.Representations = append(as.Representations, r)
	}
	if g.kind == media.Video {
		if !maxRate.IsZero() {
			as.MaxFrameRate = maxRate.DASH()
		}
		if sameParForAll {
			as.Par = par
		}
	}
	// Hoist what every Representation shares to the AdaptationSet.
	if allEqual(templates) {
		as.SegmentTemplate = templates[0]
	} else {
		for i := range as.Representations {
			as.Representations[i].SegmentTemplate = templates[i]
		}
	}
	if g.kind == media.Audio {
		chans := make([][]descriptorXML, len(as.Representations))
		for i, r := range as.Representations {
			chans[i] = r.AudioChannels
		}
		if allEqual(chans) {
			as.AudioChannels = chans[0]
			for i := range as.Representations {
				as.Representations[i].AudioChannels = nil
			}
		}
	}
	return as, nil
}

func isFirstAudio(s *media.Stream, g group) bool {
	a := s.TracksOf(media.Audio)
	return g.kind == media.Audio && len(a) > 0 && a[0] == g.tracks[0]
}

func allEqual[T any](xs []T) bool {
	for _, x := range xs[1:] {
		if !reflect.DeepEqual(x, xs[0]) {
			return false
		}
	}
	return true
}

// ratio reduces w:h ("16:9"); "" when either is unknown.
func ratio(w, h int) string {
	if w <= 0 || h <= 0 {
		return ""
	}
	a, b := w, h
	for b != 0 {
		a, b = b, a%b
	}
	return fmt.Sprintf("%d:%d", w/a, h/a)
}

// producerReferenceID ties the ServiceDescription's latency to the AdaptationSets'
// ProducerReferenceTime.
const producerReferenceID = 0

// producerReferenceTime says when media time 0 was made: at the availability start,
// as every live channel's timeline has it (a looped asset is retimed so, an encoder's
// media is shifted so). presentationTime 0 means the same instant at any timescale
// and in any Period (a later Period's presentationTimeOffset is its start), so one
// element serves every Representation. A player that measures latency against it
// (dash.js, TS 103 285 10.20.4) then finds no offset to correct.
func producerReferenceTime(p *manifest.Presentation) producerReferenceTimeXML {
	prt := producerReferenceTimeXML{ID: producerReferenceID, Type: "encoder", WallClockTime: formatDateTime(p.Timeline.AvailabilityStart)}
	if p.UTCTimingURL != "" {
		prt.UTCTiming = &descriptorXML{SchemeIDURI: schemeUTCHTTPISO, Value: p.UTCTimingURL}
	}
	return prt
}

// formatFloat writes a rate as the shortest decimal that reads back the same.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func segmentTemplate(p *manifest.Presentation, t *media.Track) (*segmentTemplateXML, error) {
	segs := p.Segments[t.ID]
	st := &segmentTemplateXML{Initialization: p.InitTemplate, Media: p.MediaTemplate}
	if p.Live && p.LowLatency != nil {
		st.AvailabilityTimeOffset = formatFloat(float64(p.LowLatency.AvailabilityTimeOffset(p.SegmentDuration()).Milliseconds()) / 1000)
		st.AvailabilityTimeComplete = "false"
	}
	switch p.Addressing {
	case manifest.Number:
		ts, dur, err := numberTimescale(t.Timescale, p.SegmentDuration())
		if err != nil {
			return nil, fmt.Errorf("track %q: %w", t.ID, err)
		}
		st.Timescale, st.Duration = ts, &dur
		start := p.StartNumber
		if p.Live && p.PeriodStart > 0 {
			st.PresentationTimeOffset, _ = rescale(uint64(p.PeriodStart), uint64(ts), uint64(time.Second))
		}
		if !p.Live && len(segs) > 0 {
			start = segs[0].Number
			pto, ok := rescale(segs[0].Start, uint64(ts), uint64(t.Timescale))
			if !ok {
				return nil, fmt.Errorf("track %q: first segment start %d overflows: %w", t.ID, segs[0].Start, media.ErrInvalidMedia)
			}
			st.PresentationTimeOffset = pto
		}
		if start > math.MaxUint32 {
			return nil, fmt.Errorf("track %q: startNumber %d exceeds the MPD's 32 bits: %w", t.ID, start, media.ErrInvalidMedia)
		}
		st.StartNumber = &start
	case manifest.Timeline:
		st.Timescale = t.Timescale
		first := segs[0]
		if !p.Live {
			st.PresentationTimeOffset = first.Start
		} else if p.PeriodStart > 0 {
			st.PresentationTimeOffset, _ = rescale(uint64(p.PeriodStart), uint64(t.Timescale), uint64(time.Second))
		}
		// startNumber lets $Number$ templates work with a timeline too; @startNumber is
		// 32-bit, so a long-running channel numbered from the epoch may not fit. Then
		// $Time$ must do the addressing.
		if first.Number <= math.MaxUint32 {
			n := first.Number
			st.StartNumber = &n
		} else if manifest.UsesIdentifier(p.MediaTemplate, "Number") {
			return nil, fmt.Errorf("track %q: segment number %d exceeds the MPD's 32-bit startNumber; use $Time$: %w", t.ID, first.Number, media.ErrInvalidMedia)
		}
		st.Timeline = &segmentTimelineXML{S: compact(segs)}
	}
	return st, nil
}

// compact run-length encodes segments as S elements: @t on the first and after any
// gap, @r for each following segment with the same duration.
func compact(segs []media.SegmentRef) []sXML {
	var out []sXML
	for i, s := range segs {
		contiguous := i > 0 && s.Start == segs[i-1].End()
		if contiguous && out[len(out)-1].D == s.Duration {
			out[len(out)-1].R++
			continue
		}
		e := sXML{D: s.Duration}
		if !contiguous {
			t := s.Start
			e.T = &t
		}
		out = append(out, e)
	}
	return out
}

// numberTimescale picks the SegmentTemplate timescale for $Number$ addressing: the
// track's own when the nominal duration d is a whole number of its ticks, else the
// first of ms, µs that is exact. @duration is 32-bit in the schema.
func numberTimescale(track uint32, d time.Duration) (uint32, uint64, error) {
	for _, ts := range []uint32{track, 1000, 1_000_000} {
		ticks, ok := rescale(uint64(d), uint64(ts), uint64(time.Second))
		if !ok || ticks == 0 || ticks > math.MaxUint32 {
			continue
		}
		if back, _ := rescale(ticks, uint64(time.Second), uint64(ts)); time.Duration(back) == d {
			return ts, ticks, nil
		}
	}
	return 0, 0, fmt.Errorf("segment duration %s is not a whole number of ticks at timescale %d, 1000 or 1000000: %w", d, track, media.ErrInvalidMedia)
}

// rescale returns v·num/den rounded down, with a 128-bit intermediate; ok is false
// when the result does not fit 64 bits.
func rescale(v, num, den uint64) (uint64, bool) {
	hi, lo := bits.Mul64(v, num)
	if den == 0 || hi >= den {
		return 0, false
	}
	q, _ := bits.Div64(hi, lo, den)
	return q, true
}

// presentationDuration is the stream's duration, else the longest listed track.
func presentationDuration(p *manifest.Presentation) time.Duration {
	if p.Stream.Duration > 0 {
		return p.Stream.Duration
	}
	var d time.Duration
	for _, t := range p.Stream.Tracks {
		if segs := p.Segments[t.ID]; len(segs) > 0 {
			d = max(d, t.Duration(segs[len(segs)-1].End()-segs[0].Start))
		}
	}
	return d
}

// maxSegmentDuration is the longest listed segment, at least the nominal duration.
func maxSegmentDuration(p *manifest.Presentation) time.Duration {
	d := p.SegmentDuration()
	for _, t := range p.Stream.Tracks {
		for _, s := range p.Segments[t.ID] {
			d = max(d, t.Duration(s.Duration))
		}
	}
	return d
}

// publishTime is p.PublishTime, else when the newest listed segment ended (the MPD
// cannot have changed since), else the availability start.
func publishTime(p *manifest.Presentation) time.Time {
	if !p.PublishTime.IsZero() {
		return p.PublishTime
	}
	latest := p.Timeline.AvailabilityStart
	for _, t := range p.Stream.Tracks {
		if segs := p.Segments[t.ID]; len(segs) > 0 {
			end := p.Timeline.AvailabilityStart.Add(t.Duration(segs[len(segs)-1].End()))
			if end.After(latest) {
				latest = end
			}
		}
	}
	return latest
}

// RenderWaiting writes the MPD of a live channel with nothing to play yet (no encoder
// connected, or no segment complete): dynamic and schema-valid, one Period with no
// AdaptationSet, to be re-read after minimumUpdatePeriod. A player that opens a
// channel before its encoder starts then waits for it instead of failing on a 404.
// p needs its live Timeline (an availability start not yet known is taken as now)
// and may have no tracks.
func RenderWaiting(w io.Writer, p *manifest.Presentation, now time.Time) error {
	if !p.Live || p.SegmentDuration() <= 0 {
		return fmt.Errorf("dash: a waiting MPD is for a live channel with a segment duration: %w", media.ErrInvalidMedia)
	}
	ast := p.Timeline.AvailabilityStart
	if ast.IsZero() || ast.After(now) {
		ast = now
	}
	m := &mpdXML{
		Xmlns:                      mpdNamespace,
		Profiles:                   profileLive,
		MinBufferTime:              formatDuration(p.EffectiveMinBufferTime()),
		Type:                       "dynamic",
		AvailabilityStartTime:      formatDateTime(ast),
		PublishTime:                formatDateTime(now),
		MinimumUpdatePeriod:        formatDuration(p.EffectiveMinimumUpdatePeriod()),
		TimeShiftBufferDepth:       formatDuration(p.EffectiveTimeShiftBufferDepth()),
		SuggestedPresentationDelay: formatDuration(p.EffectiveSuggestedPresentationDelay()),
		Periods:                    []periodXML{{ID: "0", Start: "PT0S"}},
	}
	if p.UTCTimingURL != "" {
		m.UTCTimings = []descriptorXML{{SchemeIDURI: schemeUTCHTTPISO, Value: p.UTCTimingURL}}
	}
	name := ""
	if p.Stream != nil {
		name = p.Stream.Name
	}
	return write(w, m, name)
}
