package server

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/httperr"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/manifest"
	"github.com/streambed/streambed/internal/manifest/dash"
	"github.com/streambed/streambed/internal/manifest/hls"
	"github.com/streambed/streambed/internal/media"
)

// rendered is a manifest body with its gzip form, rendered once and shared.
type rendered struct {
	key  string // what it was rendered from; a different key means render again
	body []byte
	gz   []byte
	etag string
}

func newRendered(key string, body []byte) *rendered {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	_, _ = zw.Write(body)
	_ = zw.Close()
	h := fnv.New64a()
	_, _ = h.Write(body)
	return &rendered{key: key, body: body, gz: buf.Bytes(), etag: fmt.Sprintf(`"%x"`, h.Sum64())}
}

// manifest returns the cached rendering under slot if it was made from key, else renders.
// One slot per manifest URL keeps the cache bounded however long a channel runs; an
// empty slot renders without caching.
func (s *Server) manifest(slot, key string, render func(w io.Writer) error) (*rendered, error) {
	if v, ok := s.manifests.Load(slot); ok && slot != "" && v.(*rendered).key == key {
		return v.(*rendered), nil
	}
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return nil, err
	}
	r := newRendered(key, buf.Bytes())
	if slot != "" {
		s.manifests.Store(slot, r)
	}
	return r, nil
}

// serveManifest writes a manifest, gzip-compressed when the client accepts it, with
// the caching headers setCache writes (maxAgeCache, or expiresCache for live ones).
func serveManifest(w http.ResponseWriter, r *http.Request, m *rendered, file string, setCache func(http.Header)) {
	h := w.Header()
	h.Set("Content-Type", contentType(file, ""))
	setCache(h)
	h.Set("Vary", "Accept-Encoding")
	h.Set("ETag", m.etag)
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Contains(inm, m.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := m.body
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") && r.Header.Get("Range") == "" {
		body = m.gz
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// maxAgeCache lets a response be kept for d (an on-demand manifest: it does not change).
func maxAgeCache(d time.Duration) func(http.Header) {
	v := fmt.Sprintf("public, max-age=%d", int(d.Seconds()))
	return func(h http.Header) { h.Set("Cache-Control", v) }
}

// expiresCache lets a live manifest be kept until the moment exp, an absolute time
// rather than a max-age (zero: not at all, no-cache). A cache tier that sends no Age
// header (nginx) would otherwise hand a copy it has held for most of its max-age to
// the tier below as if new, and that tier would keep it a whole max-age more: each
// tier adds a life, and a stale answer a shield serves while it refreshes the copy
// (stale-while-revalidate) would be kept again. An Expires moment is the same at
// every tier, so no tier keeps the manifest past it, and a copy past it is not
// cacheable at all. Caches and origin need synchronised clocks, as live streaming
// does anyway. Cache-Control says "public" without max-age, which would override
// Expires in every cache.
func expiresCache(exp time.Time) func(http.Header) {
	if exp.IsZero() {
		return func(h http.Header) { h.Set("Cache-Control", "no-cache") }
	}
	v := exp.UTC().Format(http.TimeFormat)
	return func(h http.Header) {
		h.Set("Cache-Control", "public")
		h.Set("Expires", v)
	}
}

// renderFile renders one of the manifest files of p.
func renderFile(w io.Writer, p *manifest.Presentation, file, track string) error {
	switch file {
	case "manifest.mpd", "manifest-timeline.mpd":
		return dash.Render(w, p)
	case "master.m3u8":
		return hls.RenderMultivariant(w, p)
	case "playlist.m3u8":
		return hls.RenderMedia(w, p, track)
	}
	return fmt.Errorf("no manifest %q: %w", file, media.ErrNotFound)
}

func addressingOf(file string) manifest.Addressing {
	if file == "manifest-timeline.mpd" {
		return manifest.Timeline
	}
	return manifest.Number
}

// ---- on demand ----

func (s *Server) handleVOD(w http.ResponseWriter, r *http.Request) {
	name, file := r.PathValue("stream"), r.PathValue("file")
	if err := checkNames(name); err != nil {
		httperr.Write(w, err)
		return
	}
	a, err := s.hub.Asset(name)
	if err != nil {
		httperr.Write(w, err)
		return
	}
	if !layout.IsManifest(file) {
		httperr.Write(w, fmt.Errorf("asset %q has no file %q (manifest.mpd, manifest-timeline.mpd, master.m3u8): %w", name, file, media.ErrNotFound))
		return
	}
	m, err := s.manifest("vod/"+name+"/"+file, fmt.Sprintf("%p", a), func(w io.Writer) error {
		return renderFile(w, manifest.AssetPresentation(a.Descriptor(), addressingOf(file)), file, "")
	})
	if err != nil {
		httperr.Write(w, err)
		return
	}
	serveManifest(w, r, m, file, maxAgeCache(s.cfg.Cache.VODManifestMaxAge))
}

func (s *Server) handleVODTrack(w http.ResponseWriter, r *http.Request) {
	s.serveVODTrack(w, r, r.PathValue("stream"), r.PathValue("track"), r.PathValue("file"))
}

// serveVODTrack answers GET /vod/{name}/{track}/{file} (also reached from trackRouter).
func (s *Server) serveVODTrack(w http.ResponseWriter, r *http.Request, name, track, file string) {
	if err := checkNames(name, track); err != nil {
		httperr.Write(w, err)
		return
	}
	a, err := s.hub.Asset(name)
	if err != nil {
		httperr.Write(w, err)
		return
	}
	t, err := a.Info().Track(track)
	if err != nil {
		httperr.Write(w, err)
		return
	}
	switch file {
	case "init.mp4":
		b, _ := a.Init(track)
		s.serveBytes(w, r, b, t.Kind, a.Descriptor().Fingerprint+track, time.Time{})
		return
	case "playlist.m3u8":
		m, err := s.manifest("vod/"+name+"/"+track+"/"+file, fmt.Sprintf("%p", a), func(w io.Writer) error {
			return renderFile(w, manifest.AssetPresentation(a.Descriptor(), manifest.Number), file, track)
		})
		if err != nil {
			httperr.Write(w, err)
			return
		}
		serveManifest(w, r, m, file, maxAgeCache(s.cfg.Cache.VODManifestMaxAge))
		return
	}
	sn, err := layout.ParseSegmentName(file)
	if err != nil {
		httperr.Write(w, err)
		return
	}
	var path string
	if sn.ByTime {
		_, path, err = a.SegmentFileAt(track, sn.Time)
	} else {
		_, path, err = a.SegmentFile(track, sn.Number)
	}
	if err != nil {
		httperr.Write(w, err)
		return
	}
	s.serveFile(w, r, path, t.Kind)
}

// serveFile serves a packaged segment file: a whole file with one sendfile from a
// borrowed open descriptor; ranges, HEAD and conditional requests by http.ServeContent.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, path string, kind media.Kind) {
	fs, lean := w.(fileSender)
	lean = lean && isPlainGet(r)
	cf, fd, err := s.openSegment(path, lean, clockOf(w)) // lean: sendfile at an offset, no seek
	if err != nil {
		httperr.Write(w, fmt.Errorf("segment file: %w", media.ErrNotFound))
		return
	}
	defer cf.Release(fd)
	h := w.Header()
	h["Content-Type"] = contentTypeValues[kind == media.Audio]
	h["Cache-Control"] = s.segmentCacheValue
	h["Etag"] = cf.ETagValue
	if isPlainGet(r) {
		// The common case, a whole segment: no seeking, sniffing or range parsing,
		// and header values formatted once per file.
		h["Last-Modified"] = cf.LastModifiedValue
		h["Content-Length"] = cf.LengthValue
		if lean {
			if done, _ := fs.sendFile(fd, cf.Size); done {
				return // sent, or the client went away
			}
			if _, err := fd.Seek(0, io.SeekStart); err != nil {
				return
			}
		}
		if r.ProtoMajor == 2 {
			_, _ = copyPooled(w, fd, cf.Size) // HTTP/2 has no sendfile: copy, in large pieces
			return
		}
		// CopyN hands the connection an io.LimitedReader of an *os.File, which it sends
		// with sendfile; io.Copy would go through File.WriteTo and copy in user space.
		_, _ = io.CopyN(w, fd, cf.Size)
		return
	}
	http.ServeContent(w, r, "", cf.ModTime, fd)
}

// openSegment borrows a descriptor of the segment file at path from the file cache,
// for reads at offsets (at) or from the start; a file replaced on disk since it was
// cached is cached again, once.
func (s *Server) openSegment(path string, at bool, now time.Time) (*hub.CachedFile, *os.File, error) {
	for try := 0; ; try++ {
		cf, err := s.files.GetAt(path, now)
		if err != nil {
			return nil, nil, err
		}
		var fd *os.File
		if at {
			fd, err = cf.OpenAt()
		} else {
			fd, err = cf.Open()
		}
		if errors.Is(err, hub.ErrReplaced) && try == 0 {
			continue
		}
		return cf, fd, err
	}
}

// contentTypeValues are the segment Content-Type header values (audio: true), shared
// rather than allocated per request.
var contentTypeValues = map[bool][]string{false: {"video/mp4"}, true: {"audio/mp4"}}

// isPlainGet reports a GET for a whole resource with no condition: the fast path.
func isPlainGet(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	for _, k := range []string{"Range", "If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range"} {
		if _, ok := r.Header[k]; ok {
			return false
		}
	}
	return true
}

// serveBytes serves an in-memory init segment.
func (s *Server) serveBytes(w http.ResponseWriter, r *http.Request, b []byte, kind media.Kind, tag string, mod time.Time) {
	h := w.Header()
	h.Set("Content-Type", contentType("", kind))
	h.Set("Cache-Control", s.segmentCache)
	sum := fnv.New64a()
	_, _ = sum.Write([]byte(tag))
	_, _ = sum.Write(b)
	h.Set("ETag", fmt.Sprintf(`"%x"`, sum.Sum64()))
	http.ServeContent(w, r, "", mod, bytes.NewReader(b))
}
