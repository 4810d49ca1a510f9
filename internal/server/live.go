package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/streambed/streambed/internal/httperr"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/manifest"
	"github.com/streambed/streambed/internal/manifest/dash"
	"github.com/streambed/streambed/internal/media"
)

// requestNow is the time a live request is answered for: the server clock, or the
// `?nowMS=` override (milliseconds since the Unix epoch) that pins it, as DASH-IF
// livesim2 does, so tests and debugging can ask "what did the channel look like then".
func (s *Server) requestNow(r *http.Request) (time.Time, bool, error) {
	v := r.URL.Query().Get("nowMS")
	if v == "" {
		return s.clock(), false, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 {
		return time.Time{}, false, fmt.Errorf("nowMS=%q is not milliseconds since the epoch: %w", v, media.ErrBadRequest)
	}
	return time.UnixMilli(ms), true, nil
}

// livePresentation describes channel c at now for one manifest file.
func (s *Server) livePresentation(r *http.Request, c *hub.Channel, file string, now time.Time) (*manifest.Presentation, error) {
	window, err := c.Window(now)
	if err != nil {
		return nil, err
	}
	for id, refs := range window {
		window[id] = newestRun(refs)
	}
	info := c.Info()
	tl := c.Timeline()
	p := &manifest.Presentation{
		Stream:         info,
		Addressing:     addressingOf(file),
		Segments:       window,
		InitTemplate:   manifest.AssetInitTemplate,
		MediaTemplate:  manifest.AssetNumberTemplate,
		PlaylistFormat: manifest.AssetPlaylistFormat,
		Live:           true,
		Timeline:       tl,
		UTCTimingURL:   baseURL(r) + "/time",
		StartNumber:    0,
		Periods:        c.Periods(),
	}
	if p.Addressing == manifest.Timeline {
		p.MediaTemplate = manifest.AssetTimeTemplate
	}
	p.SuggestedPresentationDelay = c.PresentationDelay()
	p.MinBufferTime = c.MinBufferTime()
	if p.Addressing == manifest.Number {
		// Low-latency DASH only where a player can address the segment in progress:
		// $Number$ from the clock. The SegmentTimeline lists complete segments only,
		// so a player of it could not reach a low target and would stall trying.
		p.LowLatency = lowLatency(c)
		if p.LowLatency != nil {
			p.LowLatency.PartHoldBack = s.cfg.LLHLSPartHoldBack // every LL channel's playlists
		}
	}
	return p, nil
}

// lowLatency is the low-latency description of channel c, nil when its chunks are
// not shorter than its segments (segments made whole, or not known yet).
func lowLatency(c *hub.Channel) *manifest.LowLatency {
	return manifest.NewLowLatency(c.Timeline().SegmentDuration, c.ChunkDuration())
}

// serveWaitingMPD answers the MPD of a channel with nothing to play yet (a publishing
// point whose encoder has not connected, or whose first segment is not complete) with
// a valid dynamic MPD without AdaptationSets, which players re-read until the channel
// has media; HLS has no such form, so its playlists stay 404 with the reason.
func (s *Server) serveWaitingMPD(w http.ResponseWriter, r *http.Request, c *hub.Channel, now time.Time) {
	p := &manifest.Presentation{Stream: c.Info(), Live: true, Timeline: c.Timeline(), UTCTimingURL: baseURL(r) + "/time",
		MinBufferTime: c.MinBufferTime(), SuggestedPresentationDelay: c.PresentationDelay()}
	var b bytes.Buffer
	if err := dash.RenderWaiting(&b, p, now); err != nil {
		httperr.Write(w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", contentType("manifest.mpd", ""))
	h.Set("Cache-Control", "no-cache") // it changes as soon as the encoder's media arrives
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	if r.Method != http.MethodHead {
		_, _ = w.Write(b.Bytes())
	}
}

// newestRun is the newest run of consecutively numbered segments of a window. An
// encoder's segment longer than 1.5 nominal durations skips a number (numbers come
// from media time), which manifests cannot list; what came before it is left out
// until it leaves the window.
func newestRun(refs []media.SegmentRef) []media.SegmentRef {
	i := len(refs) - 1
	for i > 0 && refs[i-1].Number+1 == refs[i].Number {
		i--
	}
	return refs[max(i, 0):]
}

// baseURL is the scheme and host the client used, for absolute URLs in manifests.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "http" || p == "https" {
		scheme = p
	}
	return scheme + "://" + r.Host
}

func (s *Server) liveManifestMaxAge(c *hub.Channel) time.Duration {
	if s.cfg.Cache.LiveManifestMaxAge > 0 {
		return s.cfg.Cache.LiveManifestMaxAge
	}
	return c.Timeline().SegmentDuration / 2
}

// manifestExpires is when a live manifest of c served now stops being fresh: half a
// segment duration (or the configured live_manifest_max_age) from now, rounded down
// to the second (HTTP dates count whole seconds: never past the manifest's life);
// zero when that is not in the future (segments shorter than 2 s: no-cache).
func (s *Server) manifestExpires(c *hub.Channel) time.Time {
	now := s.clock()
	exp := now.Add(s.liveManifestMaxAge(c)).Truncate(time.Second)
	if !exp.After(now) {
		return time.Time{}
	}
	return exp
}

func (s *Server) handleLive(w http.ResponseWriter, r *http.Request) {
	name, file := r.PathValue("stream"), r.PathValue("file")
	s.serveLiveManifest(w, r, name, "", file)
}

func (s *Server) serveLiveManifest(w http.ResponseWriter, r *http.Request, name, track, file string) {
	if err := checkNames(name); err != nil {
		httperr.Write(w, err)
		return
	}
	c, err := s.hub.Channel(name)
	if err != nil {
		httperr.Write(w, err)
		return
	}
	if track == "" && !layout.IsManifest(file) {
		httperr.Write(w, fmt.Errorf("channel %q has no file %q (manifest.mpd, manifest-timeline.mpd, master.m3u8): %w", name, file, media.ErrNotFound))
		return
	}
	now, pinned, err := s.requestNow(r)
	if err != nil {
		httperr.Write(w, err)
		return
	}
	last, ok := c.Latest(now)
	if !ok {
		if track == "" && (file == "manifest.mpd" || file == "manifest-timeline.mpd") {
			s.serveWaitingMPD(w, r, c, now)
			return
		}
		why := "has no complete segment yet"
		if len(c.Info().Tracks) == 0 {
			why = "is waiting: no encoder connected"
		}
		httperr.Write(w, fmt.Errorf("channel %q %s: %w", name, why, media.ErrNotYet))
		return
	}
	if ll := lowLatency(c); ll != nil && track != "" && !pinned {
		s.serveLowLatencyPlaylist(w, r, c, name, track, file, ll)
		return
	}
	render := func(out io.Writer) error {
		p, err := s.livePresentation(r, c, file, now)
		if err != nil {
			return err
		}
		return renderFile(out, p, file, track)
	}
	var m *rendered
	if pinned {
		m, err = s.manifest("", "", render) // a pinned clock is never cached
	} else {
		slot := fmt.Sprintf("live/%s/%s/%s|%s|%v", name, track, file, r.Host, r.TLS != nil)
		m, err = s.manifest(slot, fmt.Sprintf("%p/%d", c, last), render)
	}
	if err != nil {
		httperr.Write(w, err)
		return
	}
	serveManifest(w, r, m, file, expiresCache(s.manifestExpires(c)))
}

func (s *Server) handleLiveTrack(w http.ResponseWriter, r *http.Request) {
	s.serveLiveTrack(w, r, r.PathValue("stream"), r.PathValue("track"), r.PathValue("file"))
}

// serveLiveTrack answers GET /live/{name}/{track}/{file} (also reached from trackRouter).
func (s *Server) serveLiveTrack(w http.ResponseWriter, r *http.Request, name, track, file string) {
	if err := checkNames(name, track); err != nil {
		httperr.Write(w, err)
		return
	}
	if file == "playlist.m3u8" {
		s.serveLiveManifest(w, r, name, track, file)
		return
	}
	c, err := s.hub.Channel(name)
	if err != nil {
		httperr.Write(w, err)
		return
	}
	t, err := c.Info().Track(track)
	if err != nil {
		httperr.Write(w, err)
		return
	}
	if file == "init.mp4" {
		b, err := c.Init(track)
		if err != nil {
			httperr.Write(w, err)
			return
		}
		s.serveBytes(w, r, b, t.Kind, name+"/"+track, time.Time{})
		return
	}
	s.pacing.check(r, t.Bandwidth) // a part or a segment: restart a collapsed sender first
	if n, index, err := layout.ParsePartName(file); err == nil {
		s.servePart(w, r, c, t, n, index)
		return
	}
	sn, err := layout.ParseSegmentName(file)
	if err != nil {
		httperr.Write(w, err)
		return
	}
	now, pinned, err := s.requestNow(r)
	if err != nil {
		httperr.Write(w, err)
		return
	}
	var seg *media.Segment
	if sn.ByTime {
		seg, err = c.SegmentAt(track, sn.Time, now)
	} else {
		seg, err = c.Segment(track, sn.Number, now)
	}
	if err != nil && errors.Is(err, media.ErrNotYet) && !pinned && isPlainGet(r) {
		// Not complete yet: follow it as it is made (a pinned clock asks about a
		// moment, and a range or a condition needs the whole, so those stay 404).
		n, ok := sn.Number, !sn.ByTime
		if sn.ByTime {
			n, ok = c.NumberAt(track, sn.Time)
		}
		if ok {
			s.streamSegment(w, r, c, t, n)
			return
		}
	}
	if err != nil {
		if errors.Is(err, media.ErrNotYet) {
			w.Header().Set("Retry-After", "1")
		}
		httperr.Write(w, err)
		return
	}
	h := w.Header()
	h["Content-Type"] = contentTypeValues[t.Kind == media.Audio]
	h["Cache-Control"] = []string{s.segmentCache}
	h["Etag"] = []string{fmt.Sprintf(`"%s-%x-%x-%x"`, track, seg.Number, seg.Start, seg.Len())}
	mod := c.AvailableAt(track, seg.Number)
	if isPlainGet(r) {
		// The common case, a whole segment: its chunks written straight out.
		// ServeContent's range and precondition handling, and the copy through
		// ReadFrom, made a quarter of a live segment's serving cost (and a deeper
		// stack, which an idle connection's goroutine then grows again per request).
		h["Last-Modified"] = []string{mod.UTC().Format(http.TimeFormat)}
		h["Content-Length"] = []string{strconv.FormatInt(int64(seg.Len()), 10)}
		// On the lean HTTP/1.1 path head and chunks leave in one writev.
		bufs := make([][]byte, len(seg.Chunks))
		for i, ch := range seg.Chunks {
			bufs[i] = ch.Data
		}
		_, _ = writeBuffers(w, bufs) // an error: the client went away
		return
	}
	http.ServeContent(w, r, "", mod, newChunkReader(seg.Chunks))
}

// streamSegment answers a plain GET for live segment n of track t that is not
// complete: the chunks stored so far, then each one as the source appends it, each
// flushed at once (HTTP/1.1 chunked transfer, HTTP/2 DATA frames), until the segment
// is complete. The next segment, not begun yet, is waited for up to one segment
// duration and one chunk; one farther ahead, or not begun by then, is the usual 404.
//
// The headers go out with the first chunk, so they cannot depend on the end: no
// Content-Length, ETag or Last-Modified, and the segments' own Cache-Control, because
// a response that ends is the whole segment, byte for byte what the complete one
// would be. A response that cannot be finished (the source stalled for a segment
// duration, or the segment left the store) is aborted instead of ended — the
// connection closed without its last chunk on HTTP/1.1, the stream reset on HTTP/2 —
// so neither a cache in front nor the player takes the part for the segment. A
// client that goes away ends the follow at once (the request's context).
func (s *Server) streamSegment(w http.ResponseWriter, r *http.Request, c *hub.Channel, t *media.Track, n uint64) {
	rc := http.NewResponseController(w)
	started := false
	// The next segment begins when its first chunk is complete: up to a segment
	// duration from now (the current one ends) plus one chunk. Waiting only a segment
	// duration answered 404 to a request made early in the current segment, just
	// before its successor began (a cache in front passes that 404 on).
	wait := c.Timeline().SegmentDuration + c.ChunkDuration()
	err := c.Follow(r.Context(), t.ID, n, wait, func(chunks []*media.Chunk) error {
		if !started {
			h := w.Header()
			h["Content-Type"] = contentTypeValues[t.Kind == media.Audio]
			h["Cache-Control"] = []string{s.segmentCache}
			w.WriteHeader(http.StatusOK)
			started = true
		}
		for _, ch := range chunks {
			if _, err := w.Write(ch.Data); err != nil {
				return err
			}
		}
		return rc.Flush()
	})
	switch {
	case err == nil:
	case started:
		// Part of the segment is out. Ending the body would present it as the whole
		// segment to a cache and to the player; aborting says it is not. net/http
		// neither logs this panic nor lets it past the connection.
		panic(http.ErrAbortHandler)
	case r.Context().Err() != nil:
		// The client went away before the segment began: nobody to answer.
	default:
		if errors.Is(err, media.ErrNotYet) {
			w.Header().Set("Retry-After", "1")
		}
		httperr.Write(w, err)
	}
}

// chunkReader reads a segment's chunks as one body without copying them together.
type chunkReader struct {
	chunks []*media.Chunk
	size   int64
	off    int64
}

func newChunkReader(chunks []*media.Chunk) *chunkReader {
	r := &chunkReader{chunks: chunks}
	for _, c := range chunks {
		r.size += int64(len(c.Data))
	}
	return r
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	n := 0
	pos := int64(0)
	for _, c := range r.chunks {
		end := pos + int64(len(c.Data))
		if r.off < end && n < len(p) {
			k := copy(p[n:], c.Data[r.off-pos:])
			n += k
			r.off += int64(k)
		}
		pos = end
		if n == len(p) {
			break
		}
	}
	return n, nil
}

func (r *chunkReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.off
	case io.SeekEnd:
		offset += r.size
	default:
		return 0, errors.New("chunkReader: bad whence")
	}
	if offset < 0 {
		return 0, errors.New("chunkReader: negative position")
	}
	r.off = offset
	return offset, nil
}
