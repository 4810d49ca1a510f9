package manifest

import "github.com/streambed/streambed/internal/media"

// URL templates of the asset folder layout (see media.Asset), relative to the folder.
const (
	AssetInitTemplate   = "$RepresentationID$/init.mp4"
	AssetNumberTemplate = "$RepresentationID$/$Number$.m4s" // the files on disk
	AssetTimeTemplate   = "$RepresentationID$/t$Time$.m4s"  // served by the origin, mapped to numbers
	AssetPlaylistFormat = "%s/playlist.m3u8"                // HLS media playlist of a track
)

// AssetPresentation describes an on-demand asset with the given addressing, with URLs
// relative to the asset folder. Both the origin (for /vod/{asset}/...) and the static
// files that `streambed package` writes are rendered from it, so they agree byte for
// byte. HLS always uses numbered names: render it from AssetPresentation(a, Number).
//
// The Presentation shares a's tracks and segment slices; neither may be modified
// while it is in use.
func AssetPresentation(a *media.Asset, addr Addressing) *Presentation {
	p := &Presentation{
		Stream:         a.Stream(),
		Addressing:     addr,
		Segments:       make(map[string][]media.SegmentRef, len(a.Tracks)),
		InitTemplate:   AssetInitTemplate,
		MediaTemplate:  AssetNumberTemplate,
		PlaylistFormat: AssetPlaylistFormat,
		StartNumber:    1,
	}
	if addr == Timeline {
		p.MediaTemplate = AssetTimeTemplate
	}
	for _, t := range a.Tracks {
		p.Segments[t.ID] = t.Segments
	}
	return p
}
