package server

import (
	"fmt"
	"strings"

	"github.com/streambed/streambed/internal/media"
)

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
