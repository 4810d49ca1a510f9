package hub

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/streambed/streambed/internal/media"
)

// Asset is a packaged on-demand asset served from its folder. Segments stay on disk
// (the page cache and sendfile serve them); init segments are small and kept in memory.
type Asset struct {
	dir    string
	desc   *media.Asset
	stream *media.Stream
	inits  map[string][]byte
	paths  map[string][]string // track → its segments' file paths, joined once
}

// OpenAsset loads the asset packaged in dir. The asset is named after its folder (the
// name in its URL), whatever name it was packaged with.
func OpenAsset(dir string) (*Asset, error) {
	desc, err := media.LoadAsset(dir)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(filepath.Clean(dir))
	if !media.ValidName(name) {
		return nil, fmt.Errorf("asset folder %q: the name must be 1–64 of [A-Za-z0-9._-]: %w", dir, media.ErrInvalidMedia)
	}
	a := &Asset{dir: dir, desc: desc, stream: desc.Stream(), inits: map[string][]byte{}, paths: map[string][]string{}}
	a.stream.Name = name
	for _, t := range desc.Tracks {
		b, err := os.ReadFile(filepath.Join(dir, t.InitPath))
		if err != nil {
			return nil, fmt.Errorf("asset %s track %s: %w", dir, t.ID, err)
		}
		a.inits[t.ID] = b
	}
	for _, t := range a.stream.Tracks {
		ps := make([]string, len(t.Segments))
		for i, s := range t.Segments {
			ps[i] = filepath.Join(dir, s.Path) // once here, not per request
		}
		a.paths[t.ID] = ps
	}
	return a, nil
}

// Info describes the asset.
func (a *Asset) Info() *media.Stream { return a.stream }

// Descriptor is the asset's on-disk descriptor.
func (a *Asset) Descriptor() *media.Asset { return a.desc }

// Dir is the asset's folder.
func (a *Asset) Dir() string { return a.dir }

// Init returns a track's init segment.
func (a *Asset) Init(trackID string) ([]byte, error) {
	if b, ok := a.inits[trackID]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("asset %q has no track %q: %w", a.stream.Name, trackID, media.ErrNotFound)
}

// SegmentFile returns segment number n of a track and the path of its file (for sendfile).
func (a *Asset) SegmentFile(trackID string, n uint64) (media.SegmentRef, string, error) {
	t, err := a.stream.Track(trackID)
	if err != nil {
		return media.SegmentRef{}, "", err
	}
	first := t.Segments[0].Number
	if n < first || n-first >= uint64(len(t.Segments)) {
		return media.SegmentRef{}, "", fmt.Errorf("asset %q track %q has no segment %d: %w", a.stream.Name, trackID, n, media.ErrNotFound)
	}
	s := t.Segments[n-first]
	if ps := a.paths[trackID]; int(n-first) < len(ps) {
		return s, ps[n-first], nil
	}
	return s, filepath.Join(a.dir, s.Path), nil
}

// SegmentFileAt returns the segment of a track that starts at media time start ($Time$) and its file.
func (a *Asset) SegmentFileAt(trackID string, start uint64) (media.SegmentRef, string, error) {
	t, err := a.stream.Track(trackID)
	if err != nil {
		return media.SegmentRef{}, "", err
	}
	i := sort.Search(len(t.Segments), func(i int) bool { return t.Segments[i].Start >= start })
	if i == len(t.Segments) || t.Segments[i].Start != start {
		return media.SegmentRef{}, "", fmt.Errorf("asset %q track %q has no segment at time %d: %w", a.stream.Name, trackID, start, media.ErrNotFound)
	}
	return a.SegmentFile(trackID, t.Segments[i].Number)
}

// ReadSegment returns the bytes of segment n of a track.
func (a *Asset) ReadSegment(trackID string, n uint64) (*media.Segment, error) {
	ref, path, err := a.SegmentFile(trackID, n)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("asset %q: %w", a.stream.Name, err)
	}
	return &media.Segment{SegmentRef: ref, Chunks: []*media.Chunk{{Data: b, Start: ref.Start, Duration: ref.Duration, Keyframe: true}}}, nil
}

// OpenAssets opens every packaged asset directly under root (folders with a
// stream.json); folders that fail to load are returned as errors, not fatal.
func OpenAssets(root string) ([]*Asset, []error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, []error{fmt.Errorf("assets folder %s: %w", root, err)}
	}
	var out []*Asset
	var errs []error
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || !media.ValidName(e.Name()) {
			continue // not a folder (a symlink to one counts), or not a URL-safe name
		}
		if _, err := os.Stat(filepath.Join(dir, media.AssetFile)); err != nil {
			continue // not an asset (or an interrupted packaging run)
		}
		a, err := OpenAsset(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, a)
	}
	return out, errs
}
