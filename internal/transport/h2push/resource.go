package h2push

import (
	"strconv"
	"strings"

	"github.com/streambed/streambed/internal/media"
)

// ResourceKind says what a request path names.
type ResourceKind int

const (
	KindOther    ResourceKind = iota // anything else: API, page assets, metrics
	KindPage                         // the player page: / or /index.html
	KindManifest                     // an MPD or HLS multivariant playlist
	KindPlaylist                     // an HLS media playlist
	KindInit                         // a track's init segment
	KindSegment                      // a media segment
)

func (k ResourceKind) String() string {
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
	}
	return "other"
}

// Resource is a request path of the origin, parsed.
type Resource struct {
	Kind   ResourceKind
	Live   bool
	Stream string // asset or channel name
	Track  string // init, segment, playlist
	File   string // last path element
	Number uint64 // segment by number
	ByTime bool   // segment named t{time}.m4s
	Time   uint64 // segment by time
}

// StreamKey is "vod/NAME" or "live/NAME", the key of the stream's push rule.
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
func (r Resource) Base() string { return "/" + r.StreamKey() + "/" }

// ParsePath classifies a request path by the origin's URL layout.
func ParsePath(path string) Resource {
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
	parts := strings.Split(rest, "/")
	for _, p := range parts {
		if !media.ValidName(p) {
			return Resource{Kind: KindOther}
		}
	}
	switch len(parts) {
	case 2:
		r.Stream, r.File = parts[0], parts[1]
		switch r.File {
		case "manifest.mpd", "manifest-timeline.mpd", "master.m3u8":
			r.Kind = KindManifest
			return r
		}
	case 3:
		r.Stream, r.Track, r.File = parts[0], parts[1], parts[2]
		switch {
		case r.File == "init.mp4":
			r.Kind = KindInit
			return r
		case r.File == "playlist.m3u8":
			r.Kind = KindPlaylist
			return r
		case strings.HasSuffix(r.File, ".m4s"):
			base := strings.TrimSuffix(r.File, ".m4s")
			if t, ok := strings.CutPrefix(base, "t"); ok {
				r.ByTime, base = true, t
			}
			v, err := strconv.ParseUint(base, 10, 64)
			if err != nil || base == "" || base[0] == '+' {
				return Resource{Kind: KindOther}
			}
			r.Kind = KindSegment
			if r.ByTime {
				r.Time = v
			} else {
				r.Number = v
			}
			return r
		}
	}
	return Resource{Kind: KindOther}
}
