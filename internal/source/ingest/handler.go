package ingest

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// Patterns are the routes of the ingest handler, for http.ServeMux (or
// server.Server.Handle): POST and PUT of /ingest/{channel}/Streams({track}.cmfv|.cmfa),
// and of the per-segment form's files and manifests anywhere under /ingest/{channel}/.
var Patterns = []string{"POST /ingest/{channel}/{stream...}", "PUT /ingest/{channel}/{stream...}"}

// Path is the URL path of a track of an ingest channel (ext "cmfv" or "cmfa").
func Path(channel, track, ext string) string {
	return fmt.Sprintf("/ingest/%s/Streams(%s.%s)", channel, track, ext)
}

// acceptedTypes are the Content-Types an ingest body may declare (or none).
var acceptedTypes = map[string]bool{
	"video/mp4": true, "audio/mp4": true, "application/mp4": true,
	"application/octet-stream": true, "video/iso.segment": true, "audio/iso.segment": true,
}

// errUnsupportedType is a body of another Content-Type: 415.
var errUnsupportedType = errors.New("unsupported media type")

// headerWait bounds how long a media-only request waits for the CMAF header that
// another request of the same track is still sending.
const headerWait = 5 * time.Second

// ServeHTTP receives one track of an encoder: a long-running POST or PUT whose body
// is its CMAF header and then its chunks, each stored as soon as it has arrived. The
// answer comes when the body ends: 200, or the error that ended it.
func (in *Ingest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ch, err := in.channel(r.PathValue("channel"))
	if err != nil {
		in.fail(w, err)
		return
	}
	if status, msg := ch.authorize(r); status != 0 {
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="streambed ingest"`)
			w.Header().Add("WWW-Authenticate", `Basic realm="streambed ingest"`) // the token as the password
		}
		http.Error(w, msg, status)
		return
	}
	stream := r.PathValue("stream")
	id, kind, manifest, err := ingestTrack(stream, ch.templates.Load())
	if err != nil {
		in.fail(w, err)
		return
	}
	if manifest {
		if err := in.readManifest(ch, stream, r.Body); err != nil {
			in.fail(w, err)
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || !acceptedTypes[mt] {
			in.fail(w, fmt.Errorf("Content-Type %q: send video/mp4, audio/mp4, video/iso.segment or application/octet-stream: %w", ct, errUnsupportedType))
			return
		}
	}
	body := &bodyReader{r: r.Body, rc: http.NewResponseController(w), idle: in.cfg.IdleTimeout}
	ts, s, err := ch.claim(id, kind, body.stop)
	if err != nil {
		in.fail(w, err)
		return
	}
	stopOnChannel := context.AfterFunc(ch.life, func() { s.stop(errChannelStopped) })
	stopOnRequest := context.AfterFunc(r.Context(), func() { s.stop(errRequestEnded) })
	log := in.log.With("channel", ch.name, "track", id, "remote", r.RemoteAddr)
	log.Info("encoder connected")
	// A request may send media only, after the header of an earlier one (or of one
	// still being sent).
	header := ch.awaitHeader(r.Context(), ts, headerWait)
	err = ch.receive(ts, NewParser(body, in.cfg.Limits, header), log)
	stopOnChannel()
	stopOnRequest()
	ch.release(ts, s)
	why := s.reason()
	if err != nil && errors.Is(why, errRequestEnded) && errors.Is(err, errBetweenBoxes) {
		// The encoder closed its connection after a whole box (FFmpeg does, right
		// after its last fragment, and the server may notice the close before the
		// body's end): nothing was cut, so it is an end, not a failure.
		log.Info("encoder disconnected between boxes", "bytes", body.n)
		return
	}
	if err != nil {
		if why != nil {
			err = fmt.Errorf("%w (%v)", why, err)
		}
		log.Warn("ingest request ended", "err", err, "bytes", body.n)
		in.fail(w, err)
		return
	}
	log.Info("encoder finished", "bytes", body.n)
	w.WriteHeader(http.StatusOK)
}

// authorize checks the request's token: 401 without one, 403 for a wrong one. The
// token comes as `Authorization: Bearer TOKEN`, or as the password of HTTP Basic
// authentication (any user name) for encoders that can only put credentials in the
// URL (http://ingest:TOKEN@origin/...), such as FFmpeg's dash muxer.
func (ch *channel) authorize(r *http.Request) (status int, msg string) {
	auth := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(auth, " ")
	if _, pass, basic := r.BasicAuth(); basic {
		scheme, token, ok = "Bearer", pass, true
	}
	if auth == "" || !ok || !strings.EqualFold(scheme, "Bearer") {
		return http.StatusUnauthorized, fmt.Sprintf("ingest to channel %q needs the header `Authorization: Bearer TOKEN` (or the token as the Basic password: http://ingest:TOKEN@host/…)", ch.name)
	}
	if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), []byte(ch.token)) != 1 {
		return http.StatusForbidden, fmt.Sprintf("wrong ingest token for channel %q", ch.name)
	}
	return 0, ""
}

// errUnnamed is an ingest path that names no track in any form: 404.
var errUnnamed = fmt.Errorf("want /ingest/{channel}/Streams({track}.cmfv|.cmfa); or, one request per segment, "+
	"FFmpeg's init-stream{N}.m4s / chunk-stream{N}-{number}.m4s, a path that a SegmentTemplate of the MPD the encoder sent "+
	"maps to a Representation, or {representation}/{name}.m4s|.mp4|.cmfv|.cmfa|.cmfm: %w", media.ErrNotFound)

// ingestTrack reads the path of an ingest request under /ingest/{channel}/: the
// forms of parseIngestName first (so FFmpeg's default names keep naming tracks
// "stream{N}" whatever its MPD says), then a path that the encoder's MPD templates
// (tm, nil before any) map to a Representation, then a path whose first folder is
// the Representation, as "$RepresentationID$/..." templates make before the encoder
// has sent its MPD. Its track's kind comes from the CMAF header, unless Streams()
// names it. A media segment's place comes from its own decode time, never from its
// name.
func ingestTrack(p string, tm *templateMatcher) (id string, kind media.Kind, manifest bool, err error) {
	id, kind, manifest, err = parseIngestName(p)
	if !errors.Is(err, errUnnamed) {
		return id, kind, manifest, err
	}
	if tm != nil {
		if id, ok, err := tm.match(p); ok || err != nil {
			return id, "", false, err
		}
	}
	if rep, rest, ok := strings.Cut(p, "/"); ok && segmentFileExt(rest) {
		if !media.ValidName(rep) {
			return "", "", false, fmt.Errorf("ingest path %q: its first folder %q names the track: use 1–64 of [A-Za-z0-9._-]: %w", p, rep, media.ErrBadRequest)
		}
		return rep, "", false, nil
	}
	return "", "", false, fmt.Errorf("ingest path %q names no track: %w", p, errUnnamed)
}

// segmentFileExt says whether the file name at the end of path ends as a CMAF
// segment file does.
func segmentFileExt(path string) bool {
	name := path[strings.LastIndexByte(path, '/')+1:]
	for _, ext := range []string{".m4s", ".mp4", ".cmfv", ".cmfa", ".cmfm"} {
		if strings.HasSuffix(name, ext) && len(name) > len(ext) {
			return true
		}
	}
	return false
}

// parseIngestName reads the forms of an ingest path (under /ingest/{channel}/) that
// need no MPD: "Streams(video.cmfv)" (one long-running request per track), the
// one-request-per-segment form's file names as FFmpeg's dash muxer makes them by
// default, "init-stream0.m4s" and "chunk-stream0-00001.m4s" (track "stream0"), or a
// manifest (any "*.mpd" or "*.m3u8"). Any other path is errUnnamed.
func parseIngestName(s string) (id string, kind media.Kind, manifest bool, err error) {
	switch {
	case strings.HasPrefix(s, "Streams("):
		id, kind, err = parseStreamName(s)
		return id, kind, false, err
	case strings.HasSuffix(s, ".mpd") || strings.HasSuffix(s, ".m3u8"):
		return "", "", true, nil
	}
	base := strings.TrimSuffix(strings.TrimSuffix(s, ".m4s"), ".mp4")
	if base != s && !strings.Contains(s, "/") {
		if rep, ok := strings.CutPrefix(base, "init-stream"); ok {
			id = "stream" + rep
		} else if rest, ok := strings.CutPrefix(base, "chunk-stream"); ok {
			if rep, _, ok := strings.Cut(rest, "-"); ok {
				id = "stream" + rep
			}
		}
	}
	if id == "" || !media.ValidName(id) {
		return "", "", false, fmt.Errorf("ingest path %q names no track: %w", s, errUnnamed)
	}
	return id, "", false, nil
}

// readManifest reads a manifest the encoder sends in the per-segment form. The
// origin makes its own manifests from the media, but an MPD's SegmentTemplates say
// how the encoder names its segment files: the channel keeps them to map paths to
// Representations. A playlist (*.m3u8) is read and let go. An MPD the origin cannot
// read is refused, and the templates of the one before stay.
func (in *Ingest) readManifest(ch *channel, name string, body io.Reader) error {
	b, err := io.ReadAll(io.LimitReader(body, maxMPDBytes+1))
	if err != nil {
		return err
	}
	if len(b) > maxMPDBytes {
		return fmt.Errorf("manifest %q over %d bytes: %w", name, maxMPDBytes, ErrTooLarge)
	}
	if !strings.HasSuffix(name, ".mpd") {
		return nil
	}
	log := in.log.With("channel", ch.name, "mpd", name)
	tm, err := parseMPDTemplates(ch.name, name, b)
	if err != nil {
		log.Warn("encoder MPD refused", "err", err)
		return err
	}
	if old := ch.templates.Swap(tm); old == nil || old.key() != tm.key() {
		var ts []string
		for _, r := range tm.routes {
			ts = append(ts, r.rep+"="+r.template)
		}
		log.Info("encoder MPD read: segment paths map to representations", "templates", ts)
	}
	return nil
}

// parseStreamName reads "Streams(video.cmfv)": the track ID and its kind.
func parseStreamName(s string) (string, media.Kind, error) {
	inner, ok := strings.CutPrefix(s, "Streams(")
	if ok {
		inner, ok = strings.CutSuffix(inner, ")")
	}
	if !ok {
		return "", "", fmt.Errorf("ingest URL %q: want /ingest/{channel}/Streams({track}.cmfv) or Streams({track}.cmfa): %w", s, media.ErrNotFound)
	}
	var kind media.Kind
	id, ok := strings.CutSuffix(inner, ".cmfv")
	if ok {
		kind = media.Video
	} else if id, ok = strings.CutSuffix(inner, ".cmfa"); ok {
		kind = media.Audio
	} else {
		return "", "", fmt.Errorf("ingest track %q: name it {track}.cmfv (video) or {track}.cmfa (audio): %w", inner, media.ErrNotFound)
	}
	if !media.ValidName(id) {
		return "", "", fmt.Errorf("ingest track %q: use 1–64 of [A-Za-z0-9._-]: %w", id, media.ErrBadRequest)
	}
	return id, kind, nil
}

// statusOf maps the errors of an ingest request to HTTP status codes.
func statusOf(err error) int {
	var timeout interface{ Timeout() bool }
	switch {
	case errors.Is(err, ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, hub.ErrDiskFull):
		return http.StatusInsufficientStorage
	case errors.Is(err, ErrNoHeader):
		return http.StatusPreconditionFailed
	case errors.Is(err, errUnsupportedType):
		return http.StatusUnsupportedMediaType
	case errors.Is(err, errChannelStopped), errors.Is(err, errRequestEnded):
		return http.StatusServiceUnavailable
	case errors.Is(err, media.ErrInvalidMedia), errors.Is(err, media.ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, media.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, media.ErrGone), errors.Is(err, media.ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &timeout) && timeout.Timeout():
		return http.StatusRequestTimeout
	}
	return http.StatusBadRequest // the body failed to arrive
}

// fail answers with err's status and its message: encoders log the body.
func (in *Ingest) fail(w http.ResponseWriter, err error) {
	http.Error(w, err.Error(), statusOf(err))
}

// bodyReader reads a request body with an idle timeout, and can be stopped from
// another goroutine: a read blocked on a silent encoder then returns at once.
type bodyReader struct {
	r    io.Reader
	rc   *http.ResponseController
	idle time.Duration
	n    int64

	mu      sync.Mutex
	stopped bool
}

var errStopped = errors.New("ingest request stopped")

func (b *bodyReader) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return 0, errStopped
	}
	_ = b.rc.SetReadDeadline(time.Now().Add(b.idle)) // unsupported by a test recorder: no timeout
	b.mu.Unlock()
	n, err := b.r.Read(p)
	b.n += int64(n)
	return n, err
}

func (b *bodyReader) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	_ = b.rc.SetReadDeadline(time.Now())
}
