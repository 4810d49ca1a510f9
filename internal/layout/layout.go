// Package layout is the origin's URL layout, parsed and built in one place:
//
//	/vod/{asset}/manifest.mpd | manifest-timeline.mpd | master.m3u8
//	/vod/{asset}/{track}/init.mp4 | playlist.m3u8 | {number}.m4s | t{time}.m4s
//	/live/{channel}/...                the same for a live channel, and
//	/live/{channel}/{track}/{number}.{part}.m4s   an LL-HLS part of a segment
//	/ws/{channel}, /ws/vod/{asset}     WebSocket push
//
// The relative names agree with the SegmentTemplates of the origin's MPDs
// (manifest.AssetInitTemplate and friends).
package layout

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/streambed/streambed/internal/media"
)

// File names of a stream folder and of a track folder.
const (
	MPD         = "manifest.mpd"          // SegmentTemplate with $Number$
	MPDTimeline = "manifest-timeline.mpd" // SegmentTimeline with $Time$
	Master      = "master.m3u8"           // HLS multivariant playlist
	Playlist    = "playlist.m3u8"         // HLS media playlist of a track
	Init        = "init.mp4"              // CMAF header of a track
)

// Kind says what a request path names.
type Kind int

const (
	KindOther    Kind = iota // anything else: API, page assets, metrics
	KindPage                 // the player page: / or /index.html
	KindManifest             // an MPD or HLS multivariant playlist
	KindPlaylist             // an HLS media playlist
	KindInit                 // a track's init segment
	KindSegment              // a media segment
	KindPart                 // an LL-HLS part of a live media segment
)

func (k Kind) String() string {
	switch k {
	case KindPage:
		return "page"
	case KindManifest:
		return "manifest"
	case KindPlaylist:
		return "playlist"
	case KindInit:
		return "init"
	case KindSegment:
		return "segment"
	case KindPart:
		return "part"
	}
	return "other"
}

// Resource is a request path of the origin, parsed.
type Resource struct {
	Kind   Kind
	Live   bool
	Stream string // asset or channel name
	Track  string // init, segment, playlist
	File   string // last path element
	Number uint64 // segment by number
	ByTime bool   // segment named t{time}.m4s
	Time   uint64 // segment by time
	Part   int    // part index (KindPart; Number is its segment)
}

// SegmentName is a media segment's file name: "{number}.m4s" or "t{time}.m4s".
type SegmentName struct {
	Number uint64 // segment by number
	ByTime bool   // named t{time}.m4s
	Time   uint64 // segment by time
}

// StreamKey is "vod/NAME" or "live/NAME".
func (r Resource) StreamKey() string {
	if r.Stream == "" {
		return ""
	}
	if r.Live {
		return "live/" + r.Stream
	}
	return "vod/" + r.Stream
}

// Base is the URL path of the stream's folder: "/vod/NAME/".
func (r Resource) Base() string { return Base(r.Live, r.Stream) }

// Parse classifies a request path by the origin's URL layout.
func Parse(path string) Resource {
	if path == "/" || path == "/index.html" {
		return Resource{Kind: KindPage, File: "index.html"}
	}
	var r Resource
	rest, ok := strings.CutPrefix(path, "/vod/")
	if !ok {
		if rest, ok = strings.CutPrefix(path, "/live/"); !ok {
			return Resource{Kind: KindOther}
		}
		r.Live = true
	}
	// Up to three elements, without allocating: this runs on every request.
	var parts [3]string
	n := 0
	for {
		elem, more, found := strings.Cut(rest, "/")
		if n == len(parts) || !media.ValidName(elem) {
			return Resource{Kind: KindOther}
		}
		parts[n] = elem
		n++
		if !found {
			break
		}
		rest = more
	}
	switch n {
	case 2:
		r.Stream, r.File = parts[0], parts[1]
		if IsManifest(r.File) {
			r.Kind = KindManifest
			return r
		}
	case 3:
		r.Stream, r.Track, r.File = parts[0], parts[1], parts[2]
		switch r.File {
		case Init:
			r.Kind = KindInit
			return r
		case Playlist:
			r.Kind = KindPlaylist
			return r
		}
		if sn, err := ParseSegmentName(r.File); err == nil {
			r.Kind, r.Number, r.ByTime, r.Time = KindSegment, sn.Number, sn.ByTime, sn.Time
			return r
		}
		if n, part, err := ParsePartName(r.File); err == nil && r.Live {
			r.Kind, r.Number, r.Part = KindPart, n, part
			return r
		}
	}
	return Resource{Kind: KindOther}
}

// IsManifest reports whether file is one of a stream folder's manifests.
func IsManifest(file string) bool {
	switch file {
	case MPD, MPDTimeline, Master:
		return true
	}
	return false
}

// ParseSegmentName parses a segment file name; anything else is a bad request.
func ParseSegmentName(file string) (SegmentName, error) {
	base, ok := strings.CutSuffix(file, ".m4s")
	if !ok || base == "" {
		return SegmentName{}, fmt.Errorf("%q is not a segment name ({number}.m4s or t{time}.m4s): %w", file, media.ErrBadRequest)
	}
	var sn SegmentName
	if rest, ok := strings.CutPrefix(base, "t"); ok {
		sn.ByTime, base = true, rest
	}
	if base == "" || len(base) > 20 || base[0] == '+' || base[0] == '-' {
		return SegmentName{}, fmt.Errorf("%q is not a segment name: %w", file, media.ErrBadRequest)
	}
	v, err := strconv.ParseUint(base, 10, 64)
	if err != nil {
		return SegmentName{}, fmt.Errorf("%q is not a segment name: %w", file, media.ErrBadRequest)
	}
	if sn.ByTime {
		sn.Time = v
	} else {
		sn.Number = v
	}
	return sn, nil
}

// MaxPart bounds a part index: parts of at least a millisecond in segments of at most
// ten minutes (manifest.PartTarget makes them far longer).
const MaxPart = 600_000

// ParsePartName parses an LL-HLS part's file name, "{number}.{part}.m4s" (as
// manifest.PartName makes it): decimal digits only, no sign, the part index at most
// MaxPart. Anything else is a bad request.
func ParsePartName(file string) (n uint64, part int, err error) {
	base, ok := strings.CutSuffix(file, ".m4s")
	num, idx, found := strings.Cut(base, ".")
	if !ok || !found || !digits(num, 20) || !digits(idx, 6) {
		return 0, 0, fmt.Errorf("%q is not a part name ({number}.{part}.m4s): %w", file, media.ErrBadRequest)
	}
	n, err = strconv.ParseUint(num, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("%q is not a part name: segment number out of range: %w", file, media.ErrBadRequest)
	}
	part, _ = strconv.Atoi(idx)
	if part > MaxPart {
		return 0, 0, fmt.Errorf("%q is not a part name: part index over %d: %w", file, MaxPart, media.ErrBadRequest)
	}
	return n, part, nil
}

// digits reports 1 to max ASCII digits.
func digits(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Part is the path of part index of live segment n of a track.
func Part(stream, track string, n uint64, index int) string {
	return Base(true, stream) + track + "/" + strconv.FormatUint(n, 10) + "." + strconv.Itoa(index) + ".m4s"
}

// Base is the URL path of a stream's folder: "/live/NAME/" or "/vod/NAME/".
func Base(live bool, stream string) string {
	if live {
		return "/live/" + stream + "/"
	}
	return "/vod/" + stream + "/"
}

// Manifest is the path of one of a stream's manifests (MPD, MPDTimeline, Master).
func Manifest(live bool, stream, file string) string { return Base(live, stream) + file }

// TrackFile is the path of a file in a track's folder (Init, Playlist).
func TrackFile(live bool, stream, track, file string) string {
	return Base(live, stream) + track + "/" + file
}

// Segment is the path of segment n of a track, named by number.
func Segment(live bool, stream, track string, n uint64) string {
	return Base(live, stream) + track + "/" + strconv.FormatUint(n, 10) + ".m4s"
}

// SegmentAt is the path of the segment of a track that starts at media time t.
func SegmentAt(live bool, stream, track string, t uint64) string {
	return Base(live, stream) + track + "/t" + strconv.FormatUint(t, 10) + ".m4s"
}

// WebSocket is the path of a stream's WebSocket push endpoint.
func WebSocket(live bool, stream string) string {
	if live {
		return "/ws/" + stream
	}
	return "/ws/vod/" + stream
}

// ParseWebSocket reads a WebSocket push path: the stream and whether it is live.
func ParseWebSocket(path string) (stream string, live bool, err error) {
	if name, ok := strings.CutPrefix(path, "/ws/vod/"); ok && media.ValidName(name) {
		return name, false, nil
	}
	if name, ok := strings.CutPrefix(path, "/ws/"); ok && media.ValidName(name) {
		return name, true, nil
	}
	return "", false, fmt.Errorf("%q is not a push path (/ws/CHANNEL or /ws/vod/ASSET): %w", path, media.ErrBadRequest)
}
