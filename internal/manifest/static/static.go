// Package static writes the manifests of a packaged asset next to its segments, so the
// asset folder plays from any plain file server as well as from the origin.
package static

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"

	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/manifest"
	"github.com/streambed/streambed/internal/manifest/dash"
	"github.com/streambed/streambed/internal/manifest/hls"
	"github.com/streambed/streambed/internal/media"
)

// Names of the manifest files in an asset folder (see media.Asset).
const (
	ManifestFile         = "manifest.mpd"          // DASH, $Number$: plays from any file server
	TimelineManifestFile = "manifest-timeline.mpd" // DASH, $Time$: needs the origin to map t{time}.m4s to files
	MultivariantFile     = "master.m3u8"           // HLS multivariant playlist
	MediaPlaylistFile    = "playlist.m3u8"         // HLS media playlist, one in each {track}/ folder
)

// WriteAssetFiles writes manifest.mpd, manifest-timeline.mpd, master.m3u8 and each
// {track}/playlist.m3u8 into dir for asset a. The content is exactly what the origin
// renders from manifest.AssetPresentation, so a file server and the origin agree.
//
// Each file is written to a temporary file in its folder and renamed into place, so a
// reader sees the old file or the new one, never a torn one. The asset must follow the
// folder layout of media.Asset ({track}/init.mp4, {track}/{number}.m4s): the manifests
// name files by that pattern, and a track whose paths differ is refused.
func WriteAssetFiles(dir string, a *media.Asset) error {
	if err := a.Validate(); err != nil {
		return fmt.Errorf("static: asset %q: %w", a.Name, err)
	}
	if err := checkLayout(a); err != nil {
		return fmt.Errorf("static: asset %q: %w", a.Name, err)
	}
	number := manifest.AssetPresentation(a, manifest.Number)
	timeline := manifest.AssetPresentation(a, manifest.Timeline)

	type file struct {
		name   string
		render func(io.Writer) error
	}
	files := []file{
		{ManifestFile, func(w io.Writer) error { return dash.Render(w, number) }},
		{TimelineManifestFile, func(w io.Writer) error { return dash.Render(w, timeline) }},
		{MultivariantFile, func(w io.Writer) error { return hls.RenderMultivariant(w, number) }},
	}
	for _, t := range a.Tracks {
		uri, err := number.PlaylistURI(t.ID)
		if err != nil {
			return fmt.Errorf("static: asset %q: %w", a.Name, err)
		}
		files = append(files, file{filepath.FromSlash(uri), func(w io.Writer) error { return hls.RenderMedia(w, number, t.ID) }})
	}
	// Render everything before writing anything: a bad asset leaves the folder as it was.
	rendered := make([][]byte, len(files))
	for i, f := range files {
		var b bytes.Buffer
		if err := f.render(&b); err != nil {
			return fmt.Errorf("static: asset %q: %s: %w", a.Name, f.name, err)
		}
		rendered[i] = b.Bytes()
	}
	for i, f := range files {
		if err := writeFileAtomic(filepath.Join(dir, f.name), rendered[i]); err != nil {
			return fmt.Errorf("static: asset %q: %w", a.Name, err)
		}
	}
	return nil
}

// checkLayout makes sure every init and segment path is the one the manifests name.
func checkLayout(a *media.Asset) error {
	for _, t := range a.Tracks {
		v := manifest.TemplateValues{RepresentationID: t.ID, Bandwidth: t.Bandwidth}
		want, err := manifest.ExpandTemplate(manifest.AssetInitTemplate, v)
		if err != nil {
			return err
		}
		if filepath.ToSlash(t.InitPath) != want {
			return fmt.Errorf("track %q: init at %q, the manifests name %q: %w", t.ID, t.InitPath, want, media.ErrInvalidMedia)
		}
		for _, s := range t.Segments {
			v.Number, v.Time = s.Number, s.Start
			want, err := manifest.ExpandTemplate(manifest.AssetNumberTemplate, v)
			if err != nil {
				return err
			}
			if filepath.ToSlash(s.Path) != want {
				return fmt.Errorf("track %q segment %d: at %q, the manifests name %q: %w", t.ID, s.Number, s.Path, want, media.ErrInvalidMedia)
			}
		}
	}
	return nil
}

// writeFileAtomic writes b to name atomically, creating the folder if needed.
func writeFileAtomic(name string, b []byte) error {
	if err := fsutil.WriteFileAtomic(name, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
