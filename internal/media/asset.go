package media

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// AssetFile is the name of the descriptor `streambed package` writes in an asset folder.
// Its presence marks the folder complete: the packager writes it last, atomically.
const AssetFile = "stream.json"

// AssetVersion changes when the on-disk layout does; older folders are re-packaged.
const AssetVersion = 1

// Asset is the on-disk descriptor of a packaged on-demand asset.
//
// Layout of an asset folder:
//
//	stream.json             this descriptor
//	{track}/init.mp4        CMAF header of each track
//	{track}/{number}.m4s    media segments, numbered from 1
//	manifest.mpd            static MPD, SegmentTemplate with $Number$
//	manifest-timeline.mpd   static MPD, SegmentTimeline with $Time$
//	master.m3u8             HLS multivariant playlist
//	{track}/playlist.m3u8   HLS media playlists (fMP4, EXT-X-MAP)
type Asset struct {
	Version           int      `json:"version"`
	Name              string   `json:"name"`
	SegmentDurationMS int64    `json:"segment_duration_ms"`
	DurationMS        int64    `json:"duration_ms"`
	Source            string   `json:"source,omitempty"` // input file or "synthetic:40s"
	Fingerprint       string   `json:"fingerprint"`      // hash of inputs and settings; equal → reuse
	Tracks            []*Track `json:"tracks"`
}

// Stream returns the asset as a Stream.
func (a *Asset) Stream() *Stream {
	return &Stream{
		Name:            a.Name,
		SegmentDuration: time.Duration(a.SegmentDurationMS) * time.Millisecond,
		Duration:        time.Duration(a.DurationMS) * time.Millisecond,
		Tracks:          a.Tracks,
	}
}

// LoadAsset reads and checks the descriptor of the asset folder dir.
func LoadAsset(dir string) (*Asset, error) {
	b, err := os.ReadFile(filepath.Join(dir, AssetFile))
	if err != nil {
		return nil, fmt.Errorf("asset %s: %w (package it with `streambed package`)", dir, err)
	}
	var a Asset
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("asset %s: %s is not valid JSON: %w", dir, AssetFile, err)
	}
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("asset %s: %w", dir, err)
	}
	return &a, nil
}

// Validate checks the descriptor for what readers rely on.
func (a *Asset) Validate() error {
	if a.Version != AssetVersion {
		return fmt.Errorf("layout version %d, want %d: re-package it: %w", a.Version, AssetVersion, ErrInvalidMedia)
	}
	if a.SegmentDurationMS <= 0 || len(a.Tracks) == 0 {
		return fmt.Errorf("no tracks or no segment duration: %w", ErrInvalidMedia)
	}
	seen := map[string]bool{}
	for _, t := range a.Tracks {
		if !ValidName(t.ID) || seen[t.ID] {
			return fmt.Errorf("bad or duplicate track id %q: %w", t.ID, ErrInvalidMedia)
		}
		seen[t.ID] = true
		if t.Timescale == 0 || len(t.Segments) == 0 || !safeRel(t.InitPath) {
			return fmt.Errorf("track %q: missing timescale, segments or init: %w", t.ID, ErrInvalidMedia)
		}
		for i, s := range t.Segments {
			if !safeRel(s.Path) {
				return fmt.Errorf("track %q segment %d: bad path %q: %w", t.ID, s.Number, s.Path, ErrInvalidMedia)
			}
			if i > 0 && (s.Number != t.Segments[i-1].Number+1 || s.Start != t.Segments[i-1].End()) {
				return fmt.Errorf("track %q: segment %d does not follow %d: %w", t.ID, s.Number, t.Segments[i-1].Number, ErrInvalidMedia)
			}
		}
	}
	return nil
}

// safeRel reports whether p is a relative path that stays inside its folder.
func safeRel(p string) bool {
	return p != "" && filepath.IsLocal(p)
}

// ValidName reports whether s is acceptable as a stream or track name in a URL:
// 1–64 characters of [A-Za-z0-9._-], not starting with a dot.
func ValidName(s string) bool {
	if s == "" || len(s) > 64 || strings.HasPrefix(s, ".") {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}
