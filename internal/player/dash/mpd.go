// Package dash parses DASH MPDs into the player's Manifest.
//
// Supported: static and dynamic MPDs; SegmentTemplate with $Number$ and @duration, or
// with a SegmentTimeline and $Time$ or $Number$ (S@r = -1 included); SegmentTemplate
// inherited from Period and AdaptationSet; BaseURL at every level; Period@start;
// availabilityStartTime, mediaPresentationDuration, minimumUpdatePeriod,
// timeShiftBufferDepth, suggestedPresentationDelay, maxSegmentDuration,
// availabilityTimeOffset (finite) and UTCTiming.
//
// Not supported: SegmentBase and SegmentList (one-file representations), several
// periods played in sequence (the first period of a static MPD is played, the last
// started period of a dynamic one), xlink, content protection, trick-mode sets.
package dash

import (
	"context"
	"encoding/xml"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player"
)

// Load fetches and parses the MPD at manifestURL; it is a player.ManifestLoader.
func Load(ctx context.Context, fetch player.FetcherFunc, manifestURL string, now time.Time) (*player.Manifest, error) {
	resp, err := fetch(ctx, player.SegmentRequest{Kind: player.RequestManifest, URL: manifestURL, KeepBody: true})
	if err != nil {
		return nil, err
	}
	return Parse(resp.Body, manifestURL, now)
}

type mpdXML struct {
	XMLName    xml.Name     `xml:"MPD"`
	Type       string       `xml:"type,attr"`
	AST        string       `xml:"availabilityStartTime,attr"`
	MPDur      string       `xml:"mediaPresentationDuration,attr"`
	MUP        string       `xml:"minimumUpdatePeriod,attr"`
	TSBD       string       `xml:"timeShiftBufferDepth,attr"`
	SPD        string       `xml:"suggestedPresentationDelay,attr"`
	MaxSegDur  string       `xml:"maxSegmentDuration,attr"`
	BaseURLs   []string     `xml:"BaseURL"`
	Periods    []periodXML  `xml:"Period"`
	UTCTimings []utcTiming  `xml:"UTCTiming"`
	Locations  []string     `xml:"Location"`
	Services   []serviceXML `xml:"ServiceDescription"`
}

// serviceXML is a ServiceDescription: latencies in milliseconds, rates as factors.
type serviceXML struct {
	Latency *struct {
		Target *int64 `xml:"target,attr"`
		Min    *int64 `xml:"min,attr"`
		Max    *int64 `xml:"max,attr"`
	} `xml:"Latency"`
	Rate *struct {
		Min *float64 `xml:"min,attr"`
		Max *float64 `xml:"max,attr"`
	} `xml:"PlaybackRate"`
}

type utcTiming struct {
	Scheme string `xml:"schemeIdUri,attr"`
	Value  string `xml:"value,attr"`
}

type periodXML struct {
	ID       string       `xml:"id,attr"`
	Start    string       `xml:"start,attr"`
	Duration string       `xml:"duration,attr"`
	BaseURLs []string     `xml:"BaseURL"`
	Template *templateXML `xml:"SegmentTemplate"`
	Sets     []setXML     `xml:"AdaptationSet"`
}

type setXML struct {
	ContentType string       `xml:"contentType,attr"`
	MimeType    string       `xml:"mimeType,attr"`
	Codecs      string       `xml:"codecs,attr"`
	Lang        string       `xml:"lang,attr"`
	BaseURLs    []string     `xml:"BaseURL"`
	Template    *templateXML `xml:"SegmentTemplate"`
	Reps        []repXML     `xml:"Representation"`
	HasBase     *struct{}    `xml:"SegmentBase"`
	HasList     *struct{}    `xml:"SegmentList"`
}

type repXML struct {
	ID        string       `xml:"id,attr"`
	Bandwidth int          `xml:"bandwidth,attr"`
	Width     int          `xml:"width,attr"`
	Height    int          `xml:"height,attr"`
	Codecs    string       `xml:"codecs,attr"`
	MimeType  string       `xml:"mimeType,attr"`
	BaseURLs  []string     `xml:"BaseURL"`
	Template  *templateXML `xml:"SegmentTemplate"`
	HasBase   *struct{}    `xml:"SegmentBase"`
	HasList   *struct{}    `xml:"SegmentList"`
}

type templateXML struct {
	Timescale      *uint64      `xml:"timescale,attr"`
	Duration       *uint64      `xml:"duration,attr"`
	StartNumber    *uint64      `xml:"startNumber,attr"`
	EndNumber      *uint64      `xml:"endNumber,attr"`
	PTO            *uint64      `xml:"presentationTimeOffset,attr"`
	Media          *string      `xml:"media,attr"`
	Initialization *string      `xml:"initialization,attr"`
	ATO            *string      `xml:"availabilityTimeOffset,attr"`
	Timeline       *timelineXML `xml:"SegmentTimeline"`
}

type timelineXML struct {
	S []sXML `xml:"S"`
}

type sXML struct {
	T *uint64 `xml:"t,attr"`
	D uint64  `xml:"d,attr"`
	R int64   `xml:"r,attr"`
}

// merge returns child's attributes over parent's (DASH inheritance).
func merge(parent, child *templateXML) *templateXML {
	if parent == nil {
		return child
	}
	if child == nil {
		return parent
	}
	m := *parent
	if child.Timescale != nil {
		m.Timescale = child.Timescale
	}
	if child.Duration != nil {
		m.Duration = child.Duration
	}
	if child.StartNumber != nil {
		m.StartNumber = child.StartNumber
	}
	if child.EndNumber != nil {
		m.EndNumber = child.EndNumber
	}
	if child.PTO != nil {
		m.PTO = child.PTO
	}
	if child.Media != nil {
		m.Media = child.Media
	}
	if child.Initialization != nil {
		m.Initialization = child.Initialization
	}
	if child.ATO != nil {
		m.ATO = child.ATO
	}
	if child.Timeline != nil {
		m.Timeline = child.Timeline
	}
	return &m
}

// maxSegments bounds a SegmentTimeline's expansion (a hostile or broken MPD).
const maxSegments = 1 << 18

// Parse parses an MPD fetched from manifestURL. now (wall time, server-synchronised
// when known) bounds open-ended live timelines (S@r = -1).
func Parse(data []byte, manifestURL string, now time.Time) (*player.Manifest, error) {
	var x mpdXML
	if err := xml.Unmarshal(data, &x); err != nil {
		return nil, fmt.Errorf("MPD %s: %w: %w", manifestURL, err, media.ErrInvalidMedia)
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("MPD %s: %s: %w", manifestURL, fmt.Sprintf(format, a...), media.ErrInvalidMedia)
	}
	base, err := url.Parse(manifestURL)
	if err != nil {
		return nil, bad("bad URL: %v", err)
	}
	m := &player.Manifest{URL: manifestURL, Live: x.Type == "dynamic"}
	durs := []struct {
		s   string
		d   *time.Duration
		key string
	}{
		{x.MPDur, &m.Duration, "mediaPresentationDuration"},
		{x.MUP, &m.MinimumUpdatePeriod, "minimumUpdatePeriod"},
		{x.TSBD, &m.TimeShiftBufferDepth, "timeShiftBufferDepth"},
		{x.SPD, &m.SuggestedPresentationDelay, "suggestedPresentationDelay"},
		{x.MaxSegDur, &m.MaxSegmentDuration, "maxSegmentDuration"},
	}
	for _, d := range durs {
		if d.s == "" {
			continue
		}
		if *d.d, err = ParseDuration(d.s); err != nil {
			return nil, bad("%s: %v", d.key, err)
		}
	}
	if x.AST != "" {
		if m.AvailabilityStart, err = player.ParseISOTime(x.AST); err != nil {
			return nil, bad("availabilityStartTime: %v", err)
		}
	}
	if m.Live && m.AvailabilityStart.IsZero() {
		return nil, bad("dynamic MPD without availabilityStartTime")
	}
	base = withBase(base, x.BaseURLs)
	for _, u := range x.UTCTimings {
		v := u.Value
		if strings.Contains(u.Scheme, ":http-") {
			first, _, _ := strings.Cut(strings.TrimSpace(v), " ")
			if r, err := base.Parse(first); err == nil {
				v = r.String()
			}
		}
		m.UTCTiming = append(m.UTCTiming, player.UTCTiming{Scheme: u.Scheme, Value: v})
	}
	if len(x.Periods) == 0 {
		return nil, bad("no Period")
	}
	if len(x.Services) > 0 {
		m.ServiceDescription = serviceDescription(x.Services[0])
	}

	// Period starts: @start, or the end of the previous period.
	starts := make([]time.Duration, len(x.Periods))
	durations := make([]time.Duration, len(x.Periods))
	for i, p := range x.Periods {
		if p.Start != "" {
			if starts[i], err = ParseDuration(p.Start); err != nil {
				return nil, bad("Period@start: %v", err)
			}
		} else if i > 0 && durations[i-1] > 0 {
			starts[i] = starts[i-1] + durations[i-1]
		}
		if p.Duration != "" {
			if durations[i], err = ParseDuration(p.Duration); err != nil {
				return nil, bad("Period@duration: %v", err)
			}
		}
	}
	pi := 0
	if m.Live {
		el := now.Sub(m.AvailabilityStart)
		for i := range x.Periods {
			if starts[i] <= el {
				pi = i
			}
		}
	}
	period := x.Periods[pi]
	pStart := starts[pi]
	pEnd := time.Duration(0)
	switch {
	case durations[pi] > 0:
		pEnd = pStart + durations[pi]
	case pi+1 < len(x.Periods) && x.Periods[pi+1].Start != "":
		pEnd = starts[pi+1]
	case !m.Live && m.Duration > 0:
		pEnd = m.Duration
	}
	if !m.Live && m.Duration == 0 && pEnd > 0 {
		m.Duration = pEnd
	}
	pBase := withBase(base, period.BaseURLs)

	for _, as := range period.Sets {
		kind, ok := kindOf(as)
		if !ok {
			continue
		}
		set := &player.AdaptationSet{Kind: kind, Lang: as.Lang}
		asBase := withBase(pBase, as.BaseURLs)
		asTmpl := merge(period.Template, as.Template)
		for _, r := range as.Reps {
			if r.ID == "" {
				return nil, bad("Representation without @id")
			}
			t := merge(asTmpl, r.Template)
			if t == nil || t.Media == nil {
				if r.HasBase != nil || r.HasList != nil || as.HasBase != nil || as.HasList != nil {
					return nil, bad("representation %q uses SegmentBase or SegmentList, which the player does not support (only SegmentTemplate)", r.ID)
				}
				return nil, bad("representation %q has no SegmentTemplate@media", r.ID)
			}
			rep := &player.Representation{ID: r.ID, Bandwidth: r.Bandwidth, Width: r.Width, Height: r.Height, Codecs: r.Codecs}
			if rep.Codecs == "" {
				rep.Codecs = as.Codecs
			}
			rBase := withBase(asBase, r.BaseURLs)
			if t.Initialization != nil {
				init := player.ExpandRepresentation(*t.Initialization, r.ID, r.Bandwidth)
				u, err := rBase.Parse(init)
				if err != nil {
					return nil, bad("initialization %q: %v", init, err)
				}
				rep.InitURL = u.String()
			}
			ix, err := index(t, r, rBase, pStart, pEnd, m, now)
			if err != nil {
				return nil, bad("representation %q: %v", r.ID, err)
			}
			rep.Index = ix
			set.Representations = append(set.Representations, rep)
		}
		if len(set.Representations) > 0 {
			m.Sets = append(m.Sets, set)
		}
	}
	if len(m.Sets) == 0 {
		return nil, bad("no video or audio AdaptationSet")
	}
	return m, nil
}

// index builds the segment index of one representation.
func index(t *templateXML, r repXML, base *url.URL, pStart, pEnd time.Duration, m *player.Manifest, now time.Time) (*player.SegmentIndex, error) {
	ix := &player.SegmentIndex{Timescale: 1, StartNumber: 1, PeriodStart: pStart, Base: base}
	if t.Timescale != nil {
		ix.Timescale = *t.Timescale
	}
	if ix.Timescale == 0 {
		return nil, fmt.Errorf("timescale 0")
	}
	if t.StartNumber != nil {
		ix.StartNumber = *t.StartNumber
	}
	if t.PTO != nil {
		ix.PTO = *t.PTO
	}
	if t.ATO != nil && *t.ATO != "INF" {
		f, err := strconv.ParseFloat(*t.ATO, 64)
		if err != nil || f < 0 || math.IsNaN(f) || f > 86400 {
			return nil, fmt.Errorf("availabilityTimeOffset %q", *t.ATO)
		}
		ix.AvailabilityTO = time.Duration(f * float64(time.Second))
	}
	if m.Live {
		ix.AvailabilityStart = m.AvailabilityStart
	}
	ix.Media = player.ExpandRepresentation(*t.Media, r.ID, r.Bandwidth)
	ticks := func(n uint64) time.Duration {
		return time.Duration(float64(n) / float64(ix.Timescale) * float64(time.Second))
	}

	if t.Timeline == nil {
		if t.Duration == nil || *t.Duration == 0 {
			return nil, fmt.Errorf("SegmentTemplate has neither @duration nor a SegmentTimeline")
		}
		if !strings.Contains(ix.Media, "$Number") {
			return nil, fmt.Errorf("SegmentTemplate@duration needs $Number$ in @media %q", ix.Media)
		}
		ix.Duration = *t.Duration
		ix.End = pEnd
		if t.EndNumber != nil && *t.EndNumber >= ix.StartNumber {
			end := pStart + ticks((*t.EndNumber-ix.StartNumber+1)*ix.Duration)
			if ix.End == 0 || end < ix.End {
				ix.End = end
			}
		}
		if !m.Live && ix.End == 0 {
			return nil, fmt.Errorf("static MPD without a duration: cannot tell the last segment")
		}
		return ix, nil
	}

	// SegmentTimeline.
	var endTicks uint64 // where an S@r=-1 stops
	switch {
	case pEnd > 0:
		endTicks = ix.PTO + uint64((pEnd-pStart).Seconds()*float64(ix.Timescale))
	case m.Live:
		if el := now.Sub(m.AvailabilityStart) - pStart; el > 0 {
			endTicks = ix.PTO + uint64(el.Seconds()*float64(ix.Timescale))
		}
	}
	pos := func(tt uint64) time.Duration {
		if tt >= ix.PTO {
			return pStart + ticks(tt-ix.PTO)
		}
		return pStart - ticks(ix.PTO-tt)
	}
	var cur uint64
	number := ix.StartNumber
	ss := t.Timeline.S
	for i, s := range ss {
		if s.T != nil {
			cur = *s.T
		}
		if s.D == 0 {
			return nil, fmt.Errorf("segment timeline entry with d=0")
		}
		repeat := s.R
		if repeat < 0 {
			stop := endTicks
			if i+1 < len(ss) && ss[i+1].T != nil {
				stop = *ss[i+1].T
			}
			repeat = 0
			if stop > cur {
				repeat = int64((stop-cur+s.D-1)/s.D) - 1
			}
			if m.Live && i+1 == len(ss) {
				// Only segments complete by now.
				repeat = int64((max(stop, cur)-cur)/s.D) - 1
			}
		}
		for k := int64(0); k <= repeat; k++ {
			if len(ix.List) >= maxSegments {
				return nil, fmt.Errorf("SegmentTimeline longer than %d segments", maxSegments)
			}
			seg := player.Segment{Number: number, Time: cur, Start: pos(cur), Duration: ticks(s.D)}
			if m.Live {
				seg.AvailableAt = m.AvailabilityStart.Add(seg.End() - ix.AvailabilityTO)
			}
			ix.List = append(ix.List, seg)
			cur += s.D
			number++
		}
	}
	return ix, nil
}

func withBase(base *url.URL, refs []string) *url.URL {
	if len(refs) == 0 {
		return base
	}
	u, err := base.Parse(strings.TrimSpace(refs[0]))
	if err != nil {
		return base
	}
	return u
}

// kindOf classifies an adaptation set; ok is false for anything but video and audio.
func kindOf(as setXML) (media.Kind, bool) {
	probe := []string{as.ContentType, as.MimeType}
	for _, r := range as.Reps {
		probe = append(probe, r.MimeType)
	}
	for _, p := range probe {
		switch {
		case strings.HasPrefix(p, "video"):
			return media.Video, true
		case strings.HasPrefix(p, "audio"):
			return media.Audio, true
		case p == "text" || strings.HasPrefix(p, "text/") || strings.HasPrefix(p, "application/") || p == "image" || strings.HasPrefix(p, "image/"):
			return "", false
		}
	}
	codecs := as.Codecs
	if codecs == "" && len(as.Reps) > 0 {
		codecs = as.Reps[0].Codecs
	}
	for _, v := range []string{"avc", "hvc", "hev", "vp0", "vp9", "av01", "dvh"} {
		if strings.HasPrefix(codecs, v) {
			return media.Video, true
		}
	}
	for _, a := range []string{"mp4a", "opus", "ac-3", "ec-3", "flac"} {
		if strings.HasPrefix(codecs, a) {
			return media.Audio, true
		}
	}
	return "", false
}

// ParseDuration parses an xs:duration such as "PT2S", "PT1M30.5S" or "P1DT2H".
// Years and months are not accepted (their length is not fixed).
func ParseDuration(s string) (time.Duration, error) {
	orig := s
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if !strings.HasPrefix(s, "P") || len(s) < 2 {
		return 0, fmt.Errorf("xs:duration %q", orig)
	}
	s = s[1:]
	var total float64
	inTime := false
	for s != "" {
		if s[0] == 'T' {
			inTime = true
			s = s[1:]
			continue
		}
		i := strings.IndexAny(s, "YMWDHS")
		if i <= 0 {
			return 0, fmt.Errorf("xs:duration %q", orig)
		}
		v, err := strconv.ParseFloat(s[:i], 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("xs:duration %q", orig)
		}
		switch unit := s[i]; {
		case unit == 'D' && !inTime:
			total += v * 86400
		case unit == 'W' && !inTime:
			total += v * 7 * 86400
		case unit == 'H' && inTime:
			total += v * 3600
		case unit == 'M' && inTime:
			total += v * 60
		case unit == 'S' && inTime:
			total += v
		default:
			return 0, fmt.Errorf("xs:duration %q: years and months are not supported", orig)
		}
		s = s[i+1:]
	}
	if total > float64(math.MaxInt64)/float64(time.Second) {
		return 0, fmt.Errorf("xs:duration %q too long", orig)
	}
	d := time.Duration(math.Round(total * float64(time.Second)))
	if neg {
		d = -d
	}
	return d, nil
}

// serviceDescription keeps the sane values of a ServiceDescription: latencies from
// 0 to an hour, rates from 0.5 to 2 with min ≤ 1 ≤ max (others are left out, so the
// player's defaults apply).
func serviceDescription(x serviceXML) *player.ServiceDescription {
	sd := &player.ServiceDescription{}
	ms := func(v *int64) time.Duration {
		if v == nil || *v <= 0 || *v > 3_600_000 {
			return 0
		}
		return time.Duration(*v) * time.Millisecond
	}
	if l := x.Latency; l != nil {
		sd.TargetLatency, sd.MinLatency, sd.MaxLatency = ms(l.Target), ms(l.Min), ms(l.Max)
	}
	if r := x.Rate; r != nil {
		if r.Min != nil && *r.Min >= 0.5 && *r.Min <= 1 {
			sd.MinPlaybackRate = *r.Min
		}
		if r.Max != nil && *r.Max >= 1 && *r.Max <= 2 {
			sd.MaxPlaybackRate = *r.Max
		}
	}
	return sd
}
