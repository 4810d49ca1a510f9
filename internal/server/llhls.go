package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/httperr"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/manifest"
	"github.com/streambed/streambed/internal/media"
)

// LL-HLS on the pull path (docs/protocols/ll-hls.md): the media playlists of a
// low-latency channel list parts, hold blocking reloads and answer delta updates, and
// parts are served as their chunks arrive.

// partSegments is how many of the newest complete segments list their parts, beside
// the segment in progress: with 2 s segments the parts span the last 3 target
// durations, as RFC 8216bis suggests keeping them.
const partSegments = 2

// reload is an LL-HLS playlist request's delivery directives (RFC 8216bis 6.2.5):
// _HLS_msn and _HLS_part ask to hold the request until that segment or part is in
// the playlist, _HLS_skip asks for a delta update.
type reload struct {
	block   bool   // _HLS_msn was given
	msn     uint64 // _HLS_msn
	hasPart bool   // _HLS_part was given
	part    int    // _HLS_part
	skip    bool   // _HLS_skip=YES or v2
}

// parseReload reads the delivery directives of a playlist request. Anything that is
// not one of them is ignored; a directive that is malformed, repeated, out of range or
// alone where it needs another (_HLS_part without _HLS_msn) is a bad request.
func parseReload(q url.Values) (reload, error) {
	var rl reload
	one := func(key string) (string, bool, error) {
		v, ok := q[key]
		switch {
		case !ok:
			return "", false, nil
		case len(v) != 1:
			return "", false, fmt.Errorf("%s is given %d times: %w", key, len(v), media.ErrBadRequest)
		}
		return v[0], true, nil
	}
	v, ok, err := one("_HLS_msn")
	if err != nil {
		return reload{}, err
	}
	if ok {
		if !decimal(v, 20) {
			return reload{}, fmt.Errorf("_HLS_msn=%q is not a media sequence number (decimal digits): %w", v, media.ErrBadRequest)
		}
		if rl.msn, err = strconv.ParseUint(v, 10, 64); err != nil {
			return reload{}, fmt.Errorf("_HLS_msn=%q is out of range: %w", v, media.ErrBadRequest)
		}
		rl.block = true
	}
	if v, ok, err = one("_HLS_part"); err != nil {
		return reload{}, err
	} else if ok {
		if !rl.block {
			return reload{}, fmt.Errorf("_HLS_part=%q without _HLS_msn: %w", v, media.ErrBadRequest)
		}
		if !decimal(v, 6) {
			return reload{}, fmt.Errorf("_HLS_part=%q is not a part index (decimal digits, at most %d): %w", v, layout.MaxPart, media.ErrBadRequest)
		}
		if rl.part, _ = strconv.Atoi(v); rl.part > layout.MaxPart {
			return reload{}, fmt.Errorf("_HLS_part=%q is over %d: %w", v, layout.MaxPart, media.ErrBadRequest)
		}
		rl.hasPart = true
	}
	if v, ok, err = one("_HLS_skip"); err != nil {
		return reload{}, err
	} else if ok {
		if v != "YES" && v != "v2" {
			return reload{}, fmt.Errorf("_HLS_skip=%q is neither YES nor v2: %w", v, media.ErrBadRequest)
		}
		rl.skip = true // v2 also skips date ranges; these playlists have none
	}
	return rl, nil
}

// decimal reports 1 to max ASCII digits: no sign, space or exponent.
func decimal(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// targetDurationOf is a channel's EXT-X-TARGETDURATION as a duration: the nominal
// segment duration in whole seconds, rounded up.
func targetDurationOf(c *hub.Channel) time.Duration {
	return (c.Timeline().SegmentDuration + time.Second - 1).Truncate(time.Second)
}

// errReloadTimeout is a blocking reload that was not satisfied in time (503).
var errReloadTimeout = errors.New("blocking reload timed out")

// awaitReload holds a blocking playlist reload of track t until its edge reaches the
// segment (and part) asked for, for at most three target durations (then 503, as RFC
// 8216bis 6.2.5.2 has it). A segment more than two past the newest, or a part more
// than the Advance Part Limit past the newest, is refused at once (400). The wait is
// the handler's own goroutine and one timer, both gone when it returns — and it
// returns when the client goes away (ctx). The reloads held on one track share an
// edgeWatch: one of them looks at the edge on every chunk, the others only when it
// moved.
func (s *Server) awaitReload(ctx context.Context, c *hub.Channel, t *media.Track, ll *manifest.LowLatency, rl reload) error {
	bound := 3 * targetDurationOf(c)
	if hold := time.Duration(s.reloadHold.Load()); hold > 0 {
		bound = hold
	}
	timer := time.NewTimer(bound)
	defer timer.Stop()
	s.metrics.blocked.Inc()
	defer s.metrics.blocked.Dec()
	target := manifest.TicksOf(ll.PartTarget, t.Timescale)
	perSegment := int64((c.Timeline().SegmentDuration + ll.PartTarget - 1) / ll.PartTarget)
	limit := int64(3) // the Advance Part Limit: 3 parts, or 3 s of them when shorter
	if ll.PartTarget < time.Second {
		limit = int64(3 * time.Second / ll.PartTarget)
	}
	w := s.watches.join(c, t.ID)
	leading := false
	defer func() { s.watches.leave(w, leading) }()
	for {
		var moved <-chan struct{}
		leading, moved = w.turn(leading)
		e, ok, grew, err := c.Edge(t.ID, s.clock())
		if err != nil {
			return err
		}
		if !ok || e.Ended {
			return nil // nothing to wait for: the playlist is answered as it is
		}
		done := int64(len(manifest.SplitParts(e.Next.Number, e.Next.Chunks, false, target)))
		if leading {
			w.saw(fmt.Sprintf("%d/%d/%d", e.Last, e.Next.Number, done))
		}
		switch {
		case e.Last >= rl.msn:
			return nil
		case rl.hasPart && e.Next.Number == rl.msn && done > int64(rl.part):
			return nil
		case rl.msn > e.Last+2:
			return fmt.Errorf("_HLS_msn=%d is more than two segments past the playlist's last, %d: %w", rl.msn, e.Last, media.ErrBadRequest)
		case rl.hasPart && int64(rl.msn-e.Next.Number)*perSegment+int64(rl.part)-(done-1) > limit:
			return fmt.Errorf("_HLS_msn=%d&_HLS_part=%d is more than %d parts past the playlist's last (segment %d, %d parts): %w",
				rl.msn, rl.part, limit, e.Next.Number, done, media.ErrBadRequest)
		}
		wake := moved // the edge moved, or the leader left
		if leading {
			wake = grew // the track grew: look at the edge again
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		case <-timer.C:
			return fmt.Errorf("track %q did not reach segment %d part %d within three target durations (%s): %w: %w", t.ID, rl.msn, rl.part, bound, errReloadTimeout, media.ErrUnavailable)
		}
	}
}

// edgeOf is track t's edge at now, as a playlist lists it.
type edgeOf struct {
	t    *media.Track
	edge hub.Edge
}

// serveLowLatencyPlaylist answers the media playlist of track of low-latency channel c
// as LL-HLS, after holding a blocking reload. Caching: the playlist without
// directives changes with every part, so caches revalidate it (no-cache, with its
// ETag); a blocked reload's answer is right for its URL for good — any later playlist
// also holds the part asked for — so caches keep it, keyed by the whole URL with its
// query, for six target durations.
func (s *Server) serveLowLatencyPlaylist(w http.ResponseWriter, r *http.Request, c *hub.Channel, name, track, file string, ll *manifest.LowLatency) {
	info := c.Info()
	t, err := info.Track(track)
	if err != nil {
		httperr.Write(w, err)
		return
	}
	rl, err := parseReload(r.URL.Query())
	if err != nil {
		httperr.Write(w, err)
		return
	}
	if rl.block {
		if err := s.awaitReload(r.Context(), c, t, ll, rl); err != nil {
			if r.Context().Err() != nil {
				return // the client went away: nobody to answer
			}
			if errors.Is(err, errReloadTimeout) {
				w.Header().Set("Retry-After", "1")
			}
			httperr.Write(w, err)
			return
		}
	}
	s.pacing.check(r, t.Bandwidth)
	now := s.clock()
	edges := make([]edgeOf, 0, len(info.Tracks))
	var key strings.Builder
	for _, u := range info.Tracks {
		e, ok, _, err := c.Edge(u.ID, now)
		if err != nil {
			httperr.Write(w, err)
			return
		}
		if ok {
			edges = append(edges, edgeOf{u, e})
			fmt.Fprintf(&key, "%s:%d.%d.%d|", u.ID, e.Last, e.Next.Number, len(e.Next.Chunks))
		}
	}
	render := func(out io.Writer) error {
		p, err := s.livePresentation(r, c, file, now)
		if err != nil {
			return err
		}
		p.Skip = rl.skip
		p.Edges = map[string]*manifest.Edge{}
		for _, eo := range edges {
			p.Edges[eo.t.ID] = s.partsEdge(c, eo.t, eo.edge, ll, now)
		}
		return renderFile(out, p, file, track)
	}
	slot := fmt.Sprintf("live/%s/%s/%s|%s|%v|ll|skip=%v", name, track, file, r.Host, r.TLS != nil, rl.skip)
	m, err := s.manifest(slot, fmt.Sprintf("%p/%s", c, key.String()), render)
	if err != nil {
		httperr.Write(w, err)
		return
	}
	// A blocked reload's answer is that playlist version for good (its URL names the
	// part it waited for), kept 6 target durations; the plain LL playlist changes
	// with every part: not cached.
	cache := expiresCache(time.Time{})
	if rl.block {
		cache = maxAgeCache(6 * targetDurationOf(c))
	}
	serveManifest(w, r, m, file, cache)
}

// partsEdge lists the parts of track t's newest complete segments and of its segment
// in progress.
func (s *Server) partsEdge(c *hub.Channel, t *media.Track, e hub.Edge, ll *manifest.LowLatency, now time.Time) *manifest.Edge {
	target := manifest.TicksOf(ll.PartTarget, t.Timescale)
	var done []*media.Segment
	for n := e.Last - min(e.Last, partSegments-1); n <= e.Last; n++ {
		if seg, err := c.Segment(t.ID, n, now); err == nil {
			done = append(done, seg)
		}
	}
	return manifest.NewEdge(done, e.Next.Number, e.Next.Chunks, e.Next.Period, target)
}

// errPartDone stops following a segment once the part asked for is out.
var errPartDone = errors.New("part complete")

// servePart answers part index of live segment n of track t. A part of a complete
// segment is served whole (Content-Length, the segments' Cache-Control). A part not
// complete yet — typically the one the playlist hints, asked for before it exists —
// is followed as its chunks arrive, like a segment in progress (streamSegment): the
// next segment is waited for up to a segment duration, the response ends when the
// part is complete and is aborted if it cannot be finished. Parts are cut from the
// chunks by manifest.SplitParts, the playlist's own rule. HEAD, ranges, conditions
// and a pinned clock get the part only once its segment is complete.
func (s *Server) servePart(w http.ResponseWriter, r *http.Request, c *hub.Channel, t *media.Track, n uint64, index int) {
	ll := lowLatency(c)
	if ll == nil {
		httperr.Write(w, fmt.Errorf("channel %q is not low latency: it has no parts: %w", c.Info().Name, media.ErrNotFound))
		return
	}
	target := manifest.TicksOf(ll.PartTarget, t.Timescale)
	now, pinned, err := s.requestNow(r)
	if err != nil {
		httperr.Write(w, err)
		return
	}
	seg, err := c.Segment(t.ID, n, now)
	if err == nil {
		parts := manifest.SplitParts(n, seg.Chunks, true, target)
		if index >= len(parts) {
			httperr.Write(w, fmt.Errorf("segment %d of track %q has %d parts, not %d: %w", n, t.ID, len(parts), index+1, media.ErrNotFound))
			return
		}
		pt := parts[index]
		chunks := seg.Chunks[pt.First : pt.First+pt.Chunks]
		h := w.Header()
		h["Content-Type"] = contentTypeValues[t.Kind == media.Audio]
		h["Cache-Control"] = []string{s.segmentCache}
		h["Etag"] = []string{fmt.Sprintf(`"%s-%x-%x-p%x"`, t.ID, n, seg.Start, index)}
		http.ServeContent(w, r, "", c.AvailableAt(t.ID, n), newChunkReader(chunks))
		return
	}
	if !errors.Is(err, media.ErrNotYet) || pinned || !isPlainGet(r) {
		if errors.Is(err, media.ErrNotYet) {
			w.Header().Set("Retry-After", "1")
		}
		httperr.Write(w, err)
		return
	}
	s.followPart(w, r, c, t, n, index, target)
}

// followPart streams part index of segment n as its chunks arrive (see servePart).
func (s *Server) followPart(w http.ResponseWriter, r *http.Request, c *hub.Channel, t *media.Track, n uint64, index int, target uint64) {
	rc := http.NewResponseController(w)
	var chunks []*media.Chunk // the segment's chunks so far
	sent := 0                 // chunks of the part written
	started := false
	write := func(pt manifest.Part, upTo int) error {
		if !started {
			h := w.Header()
			h["Content-Type"] = contentTypeValues[t.Kind == media.Audio]
			h["Cache-Control"] = []string{s.segmentCache}
			w.WriteHeader(http.StatusOK)
			started = true
		}
		for _, ch := range chunks[pt.First+sent : upTo] {
			if _, err := w.Write(ch.Data); err != nil {
				return err
			}
		}
		sent = upTo - pt.First
		return rc.Flush()
	}
	// emit writes what is known of the part; done says the segment is complete.
	emit := func(done bool) error {
		parts := manifest.SplitParts(n, chunks, done, target)
		switch {
		case index < len(parts): // complete
			pt := parts[index]
			if err := write(pt, pt.First+pt.Chunks); err != nil {
				return err
			}
			return errPartDone
		case index == len(parts) && !done: // the open part: what it has so far
			first := 0
			if k := len(parts); k > 0 {
				first = parts[k-1].First + parts[k-1].Chunks
			}
			if first < len(chunks) {
				return write(manifest.Part{First: first}, len(chunks))
			}
		}
		return nil
	}
	err := c.Follow(r.Context(), t.ID, n, c.Timeline().SegmentDuration, func(batch []*media.Chunk) error {
		chunks = append(chunks, batch...)
		return emit(false)
	})
	if err == nil {
		err = emit(true) // the segment completed: its last part with it
		if err == nil && !started {
			err = fmt.Errorf("segment %d of track %q ended with fewer than %d parts: %w", n, t.ID, index+1, media.ErrNotFound)
		}
	}
	switch {
	case err == nil, errors.Is(err, errPartDone):
	case started:
		panic(http.ErrAbortHandler) // part of the part is out: abort, never end (see streamSegment)
	case r.Context().Err() != nil:
	default:
		if errors.Is(err, media.ErrNotYet) {
			w.Header().Set("Retry-After", "1")
		}
		httperr.Write(w, err)
	}
}
