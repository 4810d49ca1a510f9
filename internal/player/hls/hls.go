// Package hls parses HLS playlists (RFC 8216) into the player's Manifest: a
// multivariant playlist with EXT-X-STREAM-INF variants and EXT-X-MEDIA audio
// renditions, or a single media playlist; fMP4 media playlists with EXT-X-MAP,
// on demand (EXT-X-ENDLIST) or live (a sliding window, reloaded every target
// duration).
//
// Positions: with EXT-X-PROGRAM-DATE-TIME a segment's position is its date minus the
// Unix epoch, so positions agree across reloads and variants, and live latency is
// exact. Without it, on-demand positions are the sum of EXTINF durations; live ones
// are media sequence × target duration (and each segment lasts a target duration),
// the only numbering that stays put as the window slides — with live latency then
// measured against the time the first playlist was loaded.
//
// Low-latency HLS is played as hls.js 1.7 plays it in low-latency mode (parts.go):
// the parts listed (EXT-X-PART) are the segments near the edge, requested one by one
// as blocking playlist reloads (_HLS_msn/_HLS_part) list them; the preload hint is not
// used; the target is PART-HOLD-BACK.
//
// Not supported: EXT-X-BYTERANGE, encryption (EXT-X-KEY), MPEG-TS segments (the
// player never decodes, so they download, but EXT-X-MAP is expected for fMP4), byte-
// range parts, delta updates (_HLS_skip), I-frame playlists. A reload of a live playlist
// that cannot block fetches every media playlist, where players reload only those they
// play (low-latency reloads fetch only those: reports.go).
package hls

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player"
)

// NewLoader returns a player.ManifestLoader for HLS. It keeps one piece of state
// between loads: the wall-clock anchor of live playlists without program dates.
func NewLoader() player.ManifestLoader {
	l := &loader{}
	return l.load
}

type loader struct {
	mu     sync.Mutex
	anchor time.Time // live without PDT: wall time of position 0, fixed at the first load
	// Low-latency HLS (parts.go): the multivariant playlist, read once as hls.js does,
	// and per media playlist the delivery directives of its next (blocking) reload.
	master     []byte
	directives map[string]string
	last       map[string]*MediaPlaylist // each media playlist as last fetched (reports.go)
}

func (l *loader) load(ctx context.Context, fetch player.FetcherFunc, u string, now time.Time) (*player.Manifest, error) {
	body, err := l.masterBody(ctx, fetch, u)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("#EXTM3U")) {
		return nil, fmt.Errorf("%s: not an M3U8 playlist: %w", u, media.ErrInvalidMedia)
	}
	mv, err := ParseMultivariant(body, u)
	if err != nil {
		return nil, err
	}
	var variants []Variant
	var audio *Rendition
	if mv == nil {
		// A media playlist on its own.
		variants = []Variant{{URI: u, ID: idFromURI(u, 0)}}
	} else {
		variants = mv.Variants
		audio = mv.DefaultAudio(variants[0].Audio)
		l.keepMaster(body)
	}
	m := &player.Manifest{URL: u}
	// A lone media playlist is taken for video: the player never decodes, so the kind
	// only decides which set's bitrate is reported.
	video := &player.AdaptationSet{Kind: media.Video}
	playlists := map[string]*MediaPlaylist{}
	source := map[*player.Representation]string{} // representation → its media playlist
	fetchPlaylist := func(pu string) (*MediaPlaylist, error) {
		if mp, ok := playlists[pu]; ok {
			return mp, nil
		}
		b := body
		if pu != u {
			if b, err = get(ctx, fetch, l.reloadURL(pu)); err != nil {
				return nil, err
			}
		}
		mp, err := ParseMedia(b, pu)
		if err != nil {
			return nil, err
		}
		playlists[pu] = mp
		l.noteReload(pu, mp)
		return mp, nil
	}
	standIn := map[string]bool{} // media playlists not reloaded: their last stands in
	if mv != nil && l.blocking(variants[0].URI) {
		// Blocking reloads of what the player plays (reports.go): all at once, each
		// held until its next part.
		uris, others := reloadSet(variants, audio, player.Playing(ctx))
		for _, pu := range others {
			if mp := l.lastPlaylist(pu); mp != nil {
				playlists[pu], standIn[pu] = mp, true
			} else {
				uris = append(uris, pu)
			}
		}
		if err := l.fetchAll(ctx, fetch, uris, playlists); err != nil {
			return nil, err
		}
		l.followReports(uris, playlists, standIn)
	}
	for _, v := range variants {
		mp, err := fetchPlaylist(v.URI)
		if err != nil {
			return nil, err
		}
		r := &player.Representation{
			ID: v.ID, Bandwidth: v.Bandwidth, Width: v.Width, Height: v.Height, Codecs: v.Codecs, InitURL: mp.Map,
			Index: &player.SegmentIndex{Timescale: 1000},
		}
		source[r] = v.URI
		video.Representations = append(video.Representations, r)
		m.Live = !mp.EndList
	}
	m.Sets = append(m.Sets, video)
	if audio != nil {
		mp, err := fetchPlaylist(audio.URI)
		if err != nil {
			return nil, err
		}
		r := &player.Representation{ID: audio.ID, InitURL: mp.Map, Index: &player.SegmentIndex{Timescale: 1000}}
		source[r] = audio.URI
		m.Sets = append(m.Sets, &player.AdaptationSet{Kind: media.Audio, Lang: audio.Language, Representations: []*player.Representation{r}})
	}
	// Build the segment lists on one timeline.
	uris := make([]string, 0, len(variants)+1)
	for _, v := range variants {
		uris = append(uris, v.URI)
	}
	if audio != nil {
		uris = append(uris, audio.URI)
	}
	var target time.Duration
	hasPDT := true
	for _, pu := range uris {
		mp := playlists[pu]
		target = max(target, mp.TargetDuration)
		if !mp.hasPDT() {
			hasPDT = false
		}
	}
	m.MaxSegmentDuration = target
	if m.Live {
		m.MinimumUpdatePeriod = target
		m.SuggestedPresentationDelay = 3 * target
		for _, pu := range uris {
			if hb := playlists[pu].HoldBack; hb > 0 {
				m.SuggestedPresentationDelay = hb
			}
		}
		switch {
		case hasPDT:
			m.AvailabilityStart = time.Unix(0, 0).UTC()
		default:
			l.mu.Lock()
			if l.anchor.IsZero() {
				// The newest segment ends about now.
				mp := playlists[uris[0]]
				if n := len(mp.Segments); n > 0 {
					last := mp.Segments[n-1]
					end := time.Duration(last.Sequence+1) * target
					l.anchor = now.Add(-end)
				} else {
					l.anchor = now
				}
			}
			m.AvailabilityStart = l.anchor
			l.mu.Unlock()
		}
	}
	for _, set := range m.Sets {
		for _, r := range set.Representations {
			mp := playlists[source[r]]
			var pos time.Duration
			for _, s := range mp.Segments {
				seg := player.Segment{Number: s.Sequence, URL: s.URI, Duration: s.Duration}
				switch {
				case m.Live && hasPDT:
					seg.Start = s.ProgramDate.Sub(m.AvailabilityStart)
				case m.Live:
					seg.Start, seg.Duration = time.Duration(s.Sequence)*target, target
				default:
					seg.Start = pos
				}
				pos += s.Duration
				seg.Time = uint64(seg.Start / time.Millisecond)
				r.Index.List = append(r.Index.List, seg)
			}
			if !m.Live {
				m.Duration = max(m.Duration, pos)
			}
		}
	}
	if m.Live && hasPDT {
		lowLatency(m, playlists, source, standIn)
	}
	return m, nil
}

func get(ctx context.Context, fetch player.FetcherFunc, u string) ([]byte, error) {
	resp, err := fetch(ctx, player.SegmentRequest{Kind: player.RequestManifest, URL: u, KeepBody: true})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Variant is one EXT-X-STREAM-INF entry.
type Variant struct {
	ID            string // from the URI: "v720" for ".../v720/playlist.m3u8"
	URI           string // absolute
	Bandwidth     int
	Width, Height int
	Codecs        string
	Audio         string // GROUP-ID of its audio renditions
}

// Rendition is one EXT-X-MEDIA entry of TYPE=AUDIO.
type Rendition struct {
	ID, URI, Group, Language string
	Default                  bool
}

// Multivariant is a parsed multivariant playlist.
type Multivariant struct {
	Variants []Variant // ascending bandwidth
	Audio    []Rendition
}

// DefaultAudio returns the default (else first) audio rendition of a group with a URI.
func (mv *Multivariant) DefaultAudio(group string) *Rendition {
	var first *Rendition
	for i := range mv.Audio {
		a := &mv.Audio[i]
		if a.Group != group || a.URI == "" {
			continue
		}
		if a.Default {
			return a
		}
		if first == nil {
			first = a
		}
	}
	return first
}

// ParseMultivariant parses a multivariant playlist; it returns nil, nil for a media playlist.
func ParseMultivariant(data []byte, u string) (*Multivariant, error) {
	base, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	mv := &Multivariant{}
	isMedia := false
	var pending map[string]string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	ids := map[string]int{}
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "#EXT-X-STREAM-INF:"):
			pending = attrs(strings.TrimPrefix(line, "#EXT-X-STREAM-INF:"))
		case strings.HasPrefix(line, "#EXT-X-MEDIA:"):
			a := attrs(strings.TrimPrefix(line, "#EXT-X-MEDIA:"))
			if a["TYPE"] != "AUDIO" {
				continue
			}
			r := Rendition{Group: a["GROUP-ID"], Language: a["LANGUAGE"], Default: a["DEFAULT"] == "YES"}
			if a["URI"] != "" {
				ru, err := base.Parse(a["URI"])
				if err != nil {
					return nil, fmt.Errorf("%s: EXT-X-MEDIA URI: %w: %w", u, err, media.ErrInvalidMedia)
				}
				r.URI = ru.String()
				r.ID = uniqueID(ids, idFromURI(r.URI, len(mv.Audio)))
			}
			mv.Audio = append(mv.Audio, r)
			if len(mv.Audio) > maxVariants {
				return nil, fmt.Errorf("%s: more than %d audio renditions: %w", u, maxVariants, media.ErrInvalidMedia)
			}
		case strings.HasPrefix(line, "#EXTINF") || strings.HasPrefix(line, "#EXT-X-TARGETDURATION"):
			isMedia = true
		case line != "" && !strings.HasPrefix(line, "#") && pending != nil:
			vu, err := base.Parse(line)
			if err != nil {
				return nil, fmt.Errorf("%s: variant URI: %w: %w", u, err, media.ErrInvalidMedia)
			}
			v := Variant{URI: vu.String(), Codecs: pending["CODECS"], Audio: pending["AUDIO"]}
			v.Bandwidth, _ = strconv.Atoi(pending["BANDWIDTH"])
			if res := pending["RESOLUTION"]; res != "" {
				w, h, _ := strings.Cut(res, "x")
				v.Width, _ = strconv.Atoi(w)
				v.Height, _ = strconv.Atoi(h)
			}
			v.ID = uniqueID(ids, idFromURI(v.URI, len(mv.Variants)))
			mv.Variants = append(mv.Variants, v)
			pending = nil
			if len(mv.Variants) > maxVariants {
				return nil, fmt.Errorf("%s: more than %d variants: %w", u, maxVariants, media.ErrInvalidMedia)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", u, err, media.ErrInvalidMedia)
	}
	if isMedia && len(mv.Variants) == 0 {
		return nil, nil
	}
	if len(mv.Variants) == 0 {
		return nil, fmt.Errorf("%s: no variants and no segments: %w", u, media.ErrInvalidMedia)
	}
	return mv, nil
}

// MediaSegment is one segment of a media playlist.
type MediaSegment struct {
	Sequence    uint64
	URI         string // absolute
	Duration    time.Duration
	ProgramDate time.Time // zero without EXT-X-PROGRAM-DATE-TIME
	Parts       []Part    // low-latency HLS: its EXT-X-PART lines, when listed
}

// MediaPlaylist is a parsed media playlist.
type MediaPlaylist struct {
	TargetDuration time.Duration
	MediaSequence  uint64
	Map            string // EXT-X-MAP URI, absolute
	EndList        bool
	HoldBack       time.Duration // EXT-X-SERVER-CONTROL HOLD-BACK
	Segments       []MediaSegment
	// Low-latency HLS: EXT-X-PART-INF PART-TARGET, EXT-X-SERVER-CONTROL
	// PART-HOLD-BACK, and the segment in progress — the one whose parts follow the
	// last complete segment — when its URI can be told (see inProgressURI).
	PartTarget   time.Duration
	PartHoldBack time.Duration
	InProgress   *MediaSegment
	// CanBlockReload is EXT-X-SERVER-CONTROL's CAN-BLOCK-RELOAD=YES; Tail the parts
	// listed after the last complete segment (of the segment in progress).
	CanBlockReload bool
	Tail           []Part
	TailDate       time.Time // the segment in progress's program date (zero: none)
	// Reports are its EXT-X-RENDITION-REPORTs: the other renditions' newest parts.
	Reports []RenditionReport
}

func (mp *MediaPlaylist) hasPDT() bool {
	return len(mp.Segments) > 0 && !mp.Segments[0].ProgramDate.IsZero()
}

// ParseMedia parses a media playlist fetched from u.
func ParseMedia(data []byte, u string) (*MediaPlaylist, error) {
	base, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s: %s: %w", u, fmt.Sprintf(format, a...), media.ErrInvalidMedia)
	}
	mp := &MediaPlaylist{}
	var (
		dur    time.Duration
		inf    bool
		pdt    time.Time
		seq    uint64
		parts  int // EXT-X-PART and part hint lines since the last segment
		listed []Part
		total  int // parts listed in all
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		tag, val, _ := strings.Cut(line, ":")
		switch {
		case line == "":
		case tag == "#EXT-X-TARGETDURATION":
			d, ok := tagDuration(val, true)
			if !ok {
				return nil, bad("EXT-X-TARGETDURATION %q", val)
			}
			mp.TargetDuration = d
		case tag == "#EXT-X-MEDIA-SEQUENCE":
			v, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return nil, bad("EXT-X-MEDIA-SEQUENCE %q", val)
			}
			mp.MediaSequence, seq = v, v
		case tag == "#EXT-X-MAP":
			if mp.Map == "" {
				a := attrs(val)
				if a["BYTERANGE"] != "" {
					return nil, bad("EXT-X-MAP with BYTERANGE is not supported")
				}
				mu, err := base.Parse(a["URI"])
				if err != nil || a["URI"] == "" {
					return nil, bad("EXT-X-MAP URI %q", a["URI"])
				}
				mp.Map = mu.String()
			}
		case tag == "#EXT-X-ENDLIST":
			mp.EndList = true
		case tag == "#EXT-X-PLAYLIST-TYPE":
			// VOD lists end with EXT-X-ENDLIST anyway; EVENT grows like live.
		case tag == "#EXT-X-SERVER-CONTROL":
			a := attrs(val)
			if hb := a["HOLD-BACK"]; hb != "" {
				if d, ok := tagDuration(hb, true); ok {
					mp.HoldBack = d
				}
			}
			mp.CanBlockReload = a["CAN-BLOCK-RELOAD"] == "YES"
			if hb := a["PART-HOLD-BACK"]; hb != "" {
				if d, ok := tagDuration(hb, true); ok {
					mp.PartHoldBack = d
				}
			}
		case tag == "#EXT-X-PART-INF":
			if d, ok := tagDuration(attrs(val)["PART-TARGET"], true); ok {
				mp.PartTarget = d
			}
		case tag == "#EXT-X-PART":
			parts++
			if pt, ok := parsePart(base, attrs(val), seq, len(listed)); ok && total < maxParts {
				listed = append(listed, pt)
				total++
			}
		case tag == "#EXT-X-RENDITION-REPORT":
			if r, ok := parseReport(base, attrs(val)); ok && len(mp.Reports) < maxReports {
				mp.Reports = append(mp.Reports, r)
			}
		case tag == "#EXT-X-PRELOAD-HINT" && attrs(val)["TYPE"] == "PART":
			parts++ // a hint alone: the next segment's first part is on its way
		case tag == "#EXT-X-BYTERANGE":
			return nil, bad("EXT-X-BYTERANGE is not supported")
		case tag == "#EXT-X-PROGRAM-DATE-TIME":
			t, err := player.ParseISOTime(val)
			if err != nil {
				return nil, bad("EXT-X-PROGRAM-DATE-TIME %q", val)
			}
			pdt = t
		case tag == "#EXTINF":
			d, _, _ := strings.Cut(val, ",")
			v, ok := tagDuration(d, false)
			if !ok {
				return nil, bad("EXTINF %q", val)
			}
			dur, inf = v, true
		case strings.HasPrefix(line, "#"):
			// Other tags and comments.
		default:
			if !inf {
				return nil, bad("segment %q without EXTINF", line)
			}
			su, err := base.Parse(line)
			if err != nil {
				return nil, bad("segment URI %q", line)
			}
			s := MediaSegment{Sequence: seq, URI: su.String(), Duration: dur, Parts: listed}
			if !pdt.IsZero() {
				s.ProgramDate = pdt
				pdt = pdt.Add(dur) // the next segment's date unless it has its own
			}
			mp.Segments = append(mp.Segments, s)
			seq++
			inf, parts, listed = false, 0, nil
			if len(mp.Segments) > 1<<18 {
				return nil, bad("more than %d segments", 1<<18)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, bad("%v", err)
	}
	if mp.TargetDuration == 0 {
		return nil, bad("no EXT-X-TARGETDURATION")
	}
	if len(mp.Segments) == 0 && mp.EndList {
		return nil, bad("no segments")
	}
	if !mp.EndList {
		mp.Tail, mp.TailDate = listed, pdt
	}
	if n := len(mp.Segments); parts > 0 && !mp.EndList && n > 0 {
		if u, ok := inProgressURI(mp.Segments[n-1], seq); ok {
			mp.InProgress = &MediaSegment{Sequence: seq, URI: u, Duration: mp.TargetDuration, ProgramDate: pdt}
		}
	}
	return mp, nil
}

// inProgressURI is the URI of segment seq, told from the URI of the segment before it
// when that one names its own sequence number once in its last path element
// ("…/1041.m4s" → "…/1042.m4s"), as Streambed's origin (and many packagers) name
// segments. LL-HLS lists a segment in progress only by its parts (MediaPlaylist.
// InProgress names it for readers that want it whole; the player plays the parts,
// parts.go). ok is false when the URI cannot be told.
func inProgressURI(prev MediaSegment, seq uint64) (string, bool) {
	dir, file := path.Split(prev.URI)
	num := strconv.FormatUint(prev.Sequence, 10)
	if strings.Count(file, num) != 1 || strings.Contains(dir, "?") {
		return "", false
	}
	i := strings.Index(file, num)
	// The number must stand alone, not be part of a longer one.
	if i > 0 && file[i-1] >= '0' && file[i-1] <= '9' || i+len(num) < len(file) && file[i+len(num)] >= '0' && file[i+len(num)] <= '9' {
		return "", false
	}
	return dir + file[:i] + strconv.FormatUint(seq, 10) + file[i+len(num):], true
}

// attrs parses an attribute list: KEY=VALUE,KEY="quoted, with commas".
func attrs(s string) map[string]string {
	out := map[string]string{}
	for s != "" {
		k, rest, ok := strings.Cut(s, "=")
		if !ok {
			break
		}
		k = strings.TrimSpace(k)
		var v string
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				v, rest = rest[1:], ""
			} else {
				v, rest = rest[1:1+end], rest[2+end:]
			}
			rest = strings.TrimPrefix(rest, ",")
		} else {
			v, rest, _ = strings.Cut(rest, ",")
		}
		out[k] = v
		s = rest
	}
	return out
}

// idFromURI names a rendition after its folder ("v720/playlist.m3u8" → "v720") or
// file ("v720.m3u8" → "v720").
func idFromURI(u string, i int) string {
	p := u
	if pu, err := url.Parse(u); err == nil {
		p = pu.Path
	}
	dir, file := path.Split(p)
	if d := path.Base(dir); dir != "" && d != "/" && d != "." && (file == "playlist.m3u8" || file == "index.m3u8" || file == "prog_index.m3u8") {
		return d
	}
	if name := strings.TrimSuffix(file, path.Ext(file)); name != "" {
		return name
	}
	return fmt.Sprintf("r%d", i)
}

func uniqueID(seen map[string]int, id string) string {
	out := id
	// seen[id] is the next suffix to try for id, so n duplicates cost n steps in all,
	// not n² (a hostile playlist of identical variants).
	for i := max(seen[id], 2); seen[out] != 0; i++ {
		out = fmt.Sprintf("%s-%d", id, i)
		seen[id] = i + 1
	}
	seen[out] = max(seen[out], 1)
	return out
}

// maxVariants bounds a multivariant playlist: the loader fetches one media playlist
// per variant and rendition.
const maxVariants = 1 << 10

// maxSeconds bounds a duration tag: beyond it time.Duration overflows into nonsense.
const maxSeconds = 1e8

// tagDuration converts a duration tag's value, refusing NaN, infinities, negatives (or
// zero when positive is required) and values that do not fit a time.Duration.
func tagDuration(s string, positive bool) (time.Duration, bool) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || v < 0 || v > maxSeconds || (positive && v == 0) {
		return 0, false
	}
	return time.Duration(v * float64(time.Second)), true
}
