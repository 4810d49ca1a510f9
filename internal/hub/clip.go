package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/media"
)

// CutArchive makes an on-demand asset in folder out from the segments of the archive
// in dir whose wall-clock time overlaps [from, to): a recording of a live channel
// cut by start and end time, served like any packaged asset (/vod/{name}/…, DASH
// and HLS). Its media time starts at zero (the tracks keep their distance to each
// other): the segments are copied with their decode times moved (cmaf.Retime), since
// players such as FFmpeg's DASH demuxer mishandle an on-demand timeline that starts
// at decode times counted from the epoch. The copy outlives the archive's pruning;
// the folder appears atomically. A window with a gap in a track (the encoder was
// away) is refused: cut on either side of it.
func CutArchive(dir string, from, to time.Time, out string) (*media.Asset, error) {
	if !from.Before(to) {
		return nil, fmt.Errorf("clip: the start %s is not before the end %s: %w", from.Format(time.RFC3339), to.Format(time.RFC3339), media.ErrBadRequest)
	}
	name := filepath.Base(filepath.Clean(out))
	if !media.ValidName(name) {
		return nil, fmt.Errorf("clip name %q: use 1–64 of [A-Za-z0-9._-]: %w", name, media.ErrBadRequest)
	}
	b, err := os.ReadFile(filepath.Join(dir, "tracks.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("clip: %s holds no archive yet: %w", dir, media.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	var tf tracksFile
	if err := json.Unmarshal(b, &tf); err != nil {
		return nil, fmt.Errorf("clip: %s/tracks.json is damaged: %v: %w", dir, err, media.ErrInvalidMedia)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), "."+name+".tmp-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	asset := &media.Asset{Version: media.AssetVersion, Name: name, Source: "archive:" + dir}
	type picked struct {
		t     *media.Track
		segs  []media.SegmentRef
		paths []string
	}
	var tracks []picked
	var origin time.Duration = -1 // the earliest first segment of any track, in media time
	for _, t := range tf.Tracks {
		refs, err := readIndexes(dir, t.ID)
		if err != nil {
			return nil, err
		}
		var segs []media.SegmentRef
		var paths []string
		for _, r := range refs {
			start := tf.AvailabilityStart.Add(t.Duration(r.ref.Start))
			end := tf.AvailabilityStart.Add(t.Duration(r.ref.End()))
			if !end.After(from) || !start.Before(to) {
				continue
			}
			if fi, err := os.Stat(r.path); err != nil || fi.Size() != r.ref.Size {
				continue // pruned, or never completed
			}
			if k := len(segs); k > 0 && (r.ref.Number != segs[k-1].Number+1 || r.ref.Start != segs[k-1].End()) {
				return nil, fmt.Errorf("clip: track %s has a gap after segment %d (at %s): cut before or after it: %w",
					t.ID, segs[k-1].Number, tf.AvailabilityStart.Add(t.Duration(segs[k-1].End())).UTC().Format(time.RFC3339), media.ErrBadRequest)
			}
			segs = append(segs, r.ref)
			paths = append(paths, r.path)
		}
		if len(segs) == 0 {
			continue // a track the encoder did not send in this window
		}
		if d := t.Duration(segs[0].Start); origin < 0 || d < origin {
			origin = d
		}
		tracks = append(tracks, picked{t, segs, paths})
	}
	var longest time.Duration
	for _, p := range tracks {
		t, segs := p.t, p.segs
		zero := uint64(origin.Seconds()*float64(t.Timescale) + 0.5)
		init := filepath.Join(dir, t.ID, "init.mp4")
		if g := groupOf(p.paths[0]); g != "" {
			init = filepath.Join(g, "init.mp4") // the header in use when the group began
		}
		if err := linkOrCopy(init, filepath.Join(tmp, t.ID, "init.mp4")); err != nil {
			return nil, fmt.Errorf("clip: track %s header: %w", t.ID, err)
		}
		for i := range segs {
			b, err := os.ReadFile(p.paths[i])
			if err != nil {
				return nil, fmt.Errorf("clip: %w", err)
			}
			// Numbered from 1 like a packaged asset (FFmpeg's DASH demuxer also
			// mishandles a large startNumber on an on-demand timeline).
			segs[i].Start -= zero
			segs[i].Number = uint64(i + 1)
			if b, err = cmaf.Retime(b, segs[i].Start, uint32(i+1)); err != nil {
				return nil, fmt.Errorf("clip: track %s segment %d: %w", t.ID, segs[i].Number, err)
			}
			segs[i].Size = int64(len(b))
			segs[i].Path = filepath.Join(t.ID, fmt.Sprintf("%d.m4s", segs[i].Number))
			if err := fsutil.WriteFileAtomic(filepath.Join(tmp, segs[i].Path), b, 0o644); err != nil {
				return nil, fmt.Errorf("clip: %w", err)
			}
		}
		tr := *t
		tr.InitPath = filepath.Join(t.ID, "init.mp4")
		tr.Segments = segs
		asset.Tracks = append(asset.Tracks, &tr)
		longest = max(longest, t.Duration(segs[len(segs)-1].End()))
	}
	if len(asset.Tracks) == 0 {
		return nil, fmt.Errorf("clip: the archive has no segment between %s and %s: %w", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), media.ErrNotFound)
	}
	asset.DurationMS = longest.Milliseconds()
	// The nominal segment duration: the first video track's longest segment.
	for _, t := range asset.Tracks {
		for _, s := range t.Segments {
			asset.SegmentDurationMS = max(asset.SegmentDurationMS, t.Duration(s.Duration).Milliseconds())
		}
		if t.Kind == media.Video {
			break
		}
	}
	if err := asset.Validate(); err != nil {
		return nil, fmt.Errorf("clip: %w", err)
	}
	if err := fsutil.WriteJSONAtomic(filepath.Join(tmp, media.AssetFile), asset, 0o644); err != nil {
		return nil, err
	}
	if err := fsutil.SyncDir(tmp); err != nil {
		return nil, err
	}
	if err := fsutil.ReplaceDir(tmp, out); err != nil {
		return nil, err
	}
	return asset, nil
}

// groupOf is the track folder of a grouped archive segment's path, or "" when the
// archive is not grouped (the segment sits beside the track's own init.mp4).
func groupOf(segPath string) string {
	trackDir := filepath.Dir(segPath)
	if _, err := os.Stat(filepath.Join(trackDir, "init.mp4")); err == nil {
		return trackDir
	}
	return ""
}

// linkOrCopy makes dst the same file as src: a hard link, or a copy across file
// systems.
func linkOrCopy(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
