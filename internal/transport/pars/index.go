package pars

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"sync"

	"github.com/streambed/streambed/internal/httperr"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// The segment index is a sidecar JSON file beside a track's segments,
//
//	GET /vod/{asset}/{track}/index.json
//
// listing every segment's size, so a ParS client can split a segment into ranges
// without a HEAD request first. MPD and HLS have no place for the size of a segment
// that is a whole file (SegmentBase/sidx and EXT-X-BYTERANGE address ranges of one
// file), hence a sidecar. Live tracks have none (their segments are still being
// made); the client falls back to HEAD there.

// IndexPattern is the route of the index, for server.Handle.
const IndexPattern = "GET /vod/{stream}/{track}/index.json"

// IndexFile is the file name a client looks for beside a segment URL.
const IndexFile = "index.json"

// Index is the sidecar document.
type Index struct {
	Track    string         `json:"track"`
	Segments []IndexSegment `json:"segments"`
}

// IndexSegment is one segment: its $Number$, its $Time$ and its size in bytes.
type IndexSegment struct {
	Number uint64 `json:"number"`
	Time   uint64 `json:"time"`
	Size   int64  `json:"size"`
}

// names returns the file names the origin serves the segment under:
// "{number}.m4s" and "t{time}.m4s".
func (s IndexSegment) names() [2]string {
	return [2]string{strconv.FormatUint(s.Number, 10) + ".m4s", "t" + strconv.FormatUint(s.Time, 10) + ".m4s"}
}

// sizes maps segment file names to sizes.
func (ix *Index) sizes() map[string]int64 {
	m := make(map[string]int64, 2*len(ix.Segments))
	for _, s := range ix.Segments {
		for _, n := range s.names() {
			m[n] = s.Size
		}
	}
	return m
}

// IndexHandler serves the segment index of the assets of h. Indexes are built once
// per asset (assets are immutable) from the descriptor's sizes, or the files' sizes
// where the descriptor has none.
func IndexHandler(h *hub.Hub) http.Handler {
	var cache sync.Map // *hub.Asset + track → []byte
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, track := r.PathValue("stream"), r.PathValue("track")
		if !media.ValidName(name) || !media.ValidName(track) {
			httperr.Write(w, fmt.Errorf("bad asset or track name: %w", media.ErrBadRequest))
			return
		}
		a, err := h.Asset(name)
		if err != nil {
			httperr.Write(w, err)
			return
		}
		key := fmt.Sprintf("%p/%s", a, track)
		body, ok := cache.Load(key)
		if !ok {
			b, err := buildIndex(a, track)
			if err != nil {
				httperr.Write(w, err)
				return
			}
			body, _ = cache.LoadOrStore(key, b)
		}
		b := body.([]byte)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(b)
	})
}

func buildIndex(a *hub.Asset, track string) ([]byte, error) {
	t, err := a.Info().Track(track)
	if err != nil {
		return nil, err
	}
	ix := Index{Track: track, Segments: make([]IndexSegment, 0, len(t.Segments))}
	for _, s := range t.Segments {
		size := s.Size
		if size <= 0 {
			_, p, err := a.SegmentFile(track, s.Number)
			if err != nil {
				return nil, err
			}
			fi, err := os.Stat(p)
			if err != nil {
				return nil, fmt.Errorf("segment %d: %w", s.Number, err)
			}
			size = fi.Size()
		}
		ix.Segments = append(ix.Segments, IndexSegment{Number: s.Number, Time: s.Start, Size: size})
	}
	return json.Marshal(ix)
}

// indexURL is the index beside segment URL s ("…/{track}/index.json") and the
// segment's file name; ok is false for a URL without a file name.
func indexURL(s string) (index, file string, ok bool) {
	u, err := url.Parse(s)
	if err != nil {
		return "", "", false
	}
	dir, file := path.Split(u.Path)
	if file == "" {
		return "", "", false
	}
	u.Path, u.RawPath, u.RawQuery, u.Fragment = dir+IndexFile, "", "", ""
	return u.String(), file, true
}
