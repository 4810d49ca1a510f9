package server

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/streambed/streambed/internal/media"
)

// segmentName is a parsed media segment file name: "{number}.m4s" or "t{time}.m4s".
type segmentName struct {
	number uint64
	time   uint64
	byTime bool
}

// parseSegmentName parses a segment file name; anything else is a bad request.
func parseSegmentName(file string) (segmentName, error) {
	base, ok := strings.CutSuffix(file, ".m4s")
	if !ok || base == "" {
		return segmentName{}, fmt.Errorf("%q is not a segment name ({number}.m4s or t{time}.m4s): %w", file, media.ErrBadRequest)
	}
	var sn segmentName
	if rest, ok := strings.CutPrefix(base, "t"); ok {
		sn.byTime, base = true, rest
	}
	if base == "" || len(base) > 20 || base[0] == '+' || base[0] == '-' {
		return segmentName{}, fmt.Errorf("%q is not a segment name: %w", file, media.ErrBadRequest)
	}
	v, err := strconv.ParseUint(base, 10, 64)
	if err != nil {
		return segmentName{}, fmt.Errorf("%q is not a segment name: %w", file, media.ErrBadRequest)
	}
	if sn.byTime {
		sn.time = v
	} else {
		sn.number = v
	}
	return sn, nil
}

// checkNames rejects stream and track names that could not be ours (traversal, junk).
func checkNames(names ...string) error {
	for _, n := range names {
		if !media.ValidName(n) {
			return fmt.Errorf("%q is not a valid stream or track name: %w", n, media.ErrBadRequest)
		}
	}
	return nil
}

// contentType of the files the origin serves.
func contentType(file string, kind media.Kind) string {
	switch {
	case strings.HasSuffix(file, ".mpd"):
		return "application/dash+xml"
	case strings.HasSuffix(file, ".m3u8"):
		return "application/vnd.apple.mpegurl"
	case kind == media.Audio:
		return "audio/mp4"
	default:
		return "video/mp4"
	}
}
