// Package static writes the manifests of a packaged asset next to its segments.
package static

import "github.com/streambed/streambed/internal/media"

// WriteAssetFiles writes manifest.mpd, manifest-timeline.mpd, master.m3u8 and each
// {track}/playlist.m3u8 into dir for asset a.
// Placeholder until the manifest renderers land.
func WriteAssetFiles(dir string, a *media.Asset) error { return nil }
