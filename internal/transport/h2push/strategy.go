package h2push

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/media"
)

// Mode names a push strategy.
type Mode string

const (
	None      Mode = "none"       // push nothing
	All       Mode = "all"        // everything of one video rendition and the audio
	Init      Mode = "init"       // page/MPD → MPD, page assets, every init segment
	InitFirst Mode = "init-first" // init, plus the first audio and middle-rung video segment
	Audio     Mode = "audio"      // the audio init request → every audio segment
	KPush     Mode = "k"          // each segment request → the next K−1 of its rendition
)

// maxK bounds K-push: more than this is "all" in disguise and would let one request
// promise an unbounded number of streams.
const maxK = 100

// Strategy is a push strategy: a mode and, for K-push, K.
type Strategy struct {
	Mode Mode
	K    int // K-push only: 2…100 (k1 pushes nothing)
}

// ParseStrategy reads none, all, init, init-first, audio or k<K> (k2…k100).
func ParseStrategy(s string) (Strategy, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch Mode(s) {
	case None, All, Init, InitFirst, Audio:
		return Strategy{Mode: Mode(s)}, nil
	}
	if rest, ok := strings.CutPrefix(s, "k"); ok && rest != "" {
		k, err := strconv.Atoi(rest)
		if err == nil && k >= 1 && k <= maxK {
			return Strategy{Mode: KPush, K: k}, nil
		}
	}
	return Strategy{}, fmt.Errorf("push strategy %q: want none, all, init, init-first, audio or k<K> with K from 1 to %d (e.g. k5)", s, maxK)
}

// String is the strategy as ParseStrategy reads it: "init-first", "k5".
func (s Strategy) String() string {
	if s.Mode == KPush {
		return "k" + strconv.Itoa(s.K)
	}
	if s.Mode == "" {
		return string(None)
	}
	return string(s.Mode)
}

// MarshalText and UnmarshalText let a Strategy be a JSON or YAML string.
func (s Strategy) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a strategy name.
func (s *Strategy) UnmarshalText(b []byte) error {
	v, err := ParseStrategy(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// StreamView is what a strategy needs to know about the stream a request is for.
type StreamView struct {
	Base string        // URL path of the stream folder: "/vod/NAME/" or "/live/NAME/"
	Info *media.Stream // tracks: video rungs ascending, then audio; assets list segments
	Live bool
	// ByTime names segments $Time$ ("t{time}.m4s", the SegmentTimeline MPDs) instead of
	// $Number$, so pushed URLs are the ones the client will look for.
	ByTime bool
	// Live only, at the request: the newest segment complete in every track
	// (HasLatest false before there is one), the nominal segment duration and the
	// DVR window.
	Latest          uint64
	HasLatest       bool
	SegmentDuration time.Duration
	DVRWindow       time.Duration
}

// Push is one resource to promise.
type Push struct {
	Path   string // absolute path on this origin
	Kind   layout.Kind
	Track  string // init and segments
	Number uint64 // segments
	// Prio orders the promised responses on the connection: media time in seconds for
	// segments; manifests, page assets and inits go first (−1).
	Prio float64
}

// liveWindowCap bounds how many future live segments "all" and "audio" promise.
const liveWindowCap = 60

// PushSet is the push set of strategy st for the request trig on stream v, in the
// order to promise. trig.Number must be resolved for segment requests (also those
// named by time). Page requests get the set of their MPD, plus the MPD itself; the
// page's own assets are the caller's business. Duplicates of what a connection
// already has are the caller's business too.
func PushSet(st Strategy, v *StreamView, trig layout.Resource) []Push {
	if v == nil || v.Info == nil || st.Mode == None || st.Mode == "" {
		return nil
	}
	var out []Push
	switch trig.Kind {
	case layout.KindPage:
		if st.Mode != Init && st.Mode != InitFirst && st.Mode != All {
			return nil
		}
		mpd := "manifest.mpd"
		if v.ByTime {
			mpd = "manifest-timeline.mpd"
		}
		out = append(out, Push{Path: v.Base + mpd, Kind: layout.KindManifest, Prio: -1})
		trig = layout.Resource{Kind: layout.KindManifest, Live: v.Live, File: mpd}
		fallthrough
	case layout.KindManifest:
		switch st.Mode {
		case Init:
			out = append(out, v.inits(v.tracks(media.Audio), v.tracks(media.Video))...)
		case InitFirst:
			out = append(out, v.inits(v.tracks(media.Audio), v.tracks(media.Video))...)
			first, ok := v.firstNumber()
			if !ok {
				break
			}
			if a := v.firstAudio(); a != nil {
				out = append(out, v.segments(a, first, first)...)
			}
			if m := v.middleVideo(); m != nil {
				out = append(out, v.segments(m, first, first)...)
			}
		case All:
			a, lo := v.firstAudio(), v.lowestVideo()
			out = append(out, v.inits(nonNil(a), nonNil(lo))...)
			first, ok := v.firstNumber()
			if !ok {
				break
			}
			last := v.lastNumber(first)
			out = append(out, interleave(v.segments(lo, first, last), v.segments(a, first, last))...)
		}
	case layout.KindInit:
		t := v.track(trig.Track)
		if st.Mode != Audio || t == nil || t.Kind != media.Audio {
			return nil
		}
		first, ok := v.firstNumber()
		if !ok {
			return nil
		}
		out = v.segments(t, first, v.lastNumber(first))
	case layout.KindSegment:
		t := v.track(trig.Track)
		if t == nil {
			return nil
		}
		n := trig.Number
		switch st.Mode {
		case KPush:
			if st.K > 1 {
				out = v.segments(t, n+1, n+uint64(st.K-1))
			}
		case All:
			last := v.lastNumber(n + 1)
			if t.Kind == media.Audio {
				out = v.segments(t, n+1, last)
				break
			}
			// The request chose this rendition: the rest of it, and the audio from
			// the same point (the player asks for audio after video).
			out = interleave(v.segments(t, n+1, last), v.segments(v.firstAudio(), n, last))
		}
	}
	return out
}

func nonNil(ts ...*media.Track) []*media.Track {
	var out []*media.Track
	for _, t := range ts {
		if t != nil {
			out = append(out, t)
		}
	}
	return out
}

// interleave merges pushes by media time (stable), so video and audio of the same
// period go out together.
func interleave(sets ...[]Push) []Push {
	var out []Push
	for _, s := range sets {
		out = append(out, s...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Prio < out[j].Prio })
	return out
}

func (v *StreamView) tracks(k media.Kind) []*media.Track { return v.Info.TracksOf(k) }

func (v *StreamView) track(id string) *media.Track {
	t, err := v.Info.Track(id)
	if err != nil {
		return nil
	}
	return t
}

func (v *StreamView) firstAudio() *media.Track {
	if a := v.tracks(media.Audio); len(a) > 0 {
		return a[0]
	}
	return nil
}

// lowestVideo is the rendition a player without a throughput estimate starts with.
func (v *StreamView) lowestVideo() *media.Track {
	if vs := v.tracks(media.Video); len(vs) > 0 {
		return vs[0]
	}
	return nil
}

// middleVideo is the middle rung (the lower of the two middle ones).
func (v *StreamView) middleVideo() *media.Track {
	if vs := v.tracks(media.Video); len(vs) > 0 {
		return vs[(len(vs)-1)/2]
	}
	return nil
}

func (v *StreamView) inits(groups ...[]*media.Track) []Push {
	var out []Push
	for _, g := range groups {
		for _, t := range g {
			out = append(out, Push{Path: v.Base + t.ID + "/init.mp4", Kind: layout.KindInit, Track: t.ID, Prio: -1})
		}
	}
	return out
}

// firstNumber is the segment a player starts with: the first of an asset; for live,
// the one before the newest complete segment (a player starts about two segment
// durations behind the live edge, the origin's default presentation delay).
func (v *StreamView) firstNumber() (uint64, bool) {
	if v.Live {
		last, ok := v.Latest, v.HasLatest
		if !ok {
			return 0, false
		}
		if last > 0 {
			last--
		}
		return last, true
	}
	for _, t := range v.Info.Tracks {
		if len(t.Segments) > 0 {
			return t.Segments[0].Number, true
		}
	}
	return 0, false
}

// lastNumber is the last segment "all" and "audio" push: the asset's last; for live,
// a DVR window's worth after from (at most liveWindowCap), pushed as they appear.
func (v *StreamView) lastNumber(from uint64) uint64 {
	if v.Live {
		w := uint64(1)
		if d := v.SegmentDuration; d > 0 {
			w = uint64(v.DVRWindow / d)
		}
		w = min(max(w, 1), liveWindowCap)
		return from + w - 1
	}
	var last uint64
	for _, t := range v.Info.Tracks {
		if n := len(t.Segments); n > 0 {
			last = max(last, t.Segments[n-1].Number)
		}
	}
	return last
}

// segments lists the pushes of segments from…to of t (inclusive), clipped to what
// exists: an asset's segment list; for live, anything not yet out of the window.
func (v *StreamView) segments(t *media.Track, from, to uint64) []Push {
	if t == nil || from > to {
		return nil
	}
	var out []Push
	if v.Live {
		if v.ByTime {
			return nil // live $Time$ names of future audio segments are not known in advance
		}
		// A future segment's promised response waits for it (Pusher.servePushed).
		d := v.SegmentDuration
		for n := from; n <= to; n++ {
			out = append(out, Push{
				Path: v.Base + t.ID + "/" + strconv.FormatUint(n, 10) + ".m4s", Kind: layout.KindSegment, Track: t.ID, Number: n,
				Prio: float64(n) * d.Seconds(),
			})
		}
		return out
	}
	if len(t.Segments) == 0 {
		return nil
	}
	first := t.Segments[0].Number
	lo := max(from, first)
	hi := min(to, t.Segments[len(t.Segments)-1].Number)
	for n := lo; n <= hi && n >= lo; n++ {
		s := t.Segments[n-first]
		name := strconv.FormatUint(n, 10) + ".m4s"
		if v.ByTime {
			name = "t" + strconv.FormatUint(s.Start, 10) + ".m4s"
		}
		out = append(out, Push{
			Path: v.Base + t.ID + "/" + name, Kind: layout.KindSegment, Track: t.ID, Number: n,
			Prio: float64(s.Start) / float64(t.Timescale),
		})
	}
	return out
}
