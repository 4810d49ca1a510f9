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
// server.Server.Handle): POST and PUT of /ingest/{channel}/Streams({track}.cmfv|.cmfa).
var Patterns = []string{"POST /ingest/{channel}/{stream}", "PUT /ingest/{channel}/{stream}"}

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
	id, kind, manifest, err := parseIngestName(r.PathValue("stream"))
	if err != nil {
		in.fail(w, err)
		return
	}
	if manifest {
		// The per-segment form's encoder (FFmpeg's dash muxer) also sends its MPD or
		// playlist: the origin makes its own from the media, so it is read and let go.
		if _, err := io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20)); err != nil {
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
	ts.feed.Lock()
	header := ts.header // a request may send media only, after the header of an earlier one
	ts.feed.Unlock()
	err = ch.receive(ts, NewParser(body, in.cfg.Limits, header), log)
	stopOnChannel()
	stopOnRequest()
	ch.release(ts, s)
	if err != nil {
		if why := s.reason(); why != nil {
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

// parseIngestName reads the last part of an ingest URL: "Streams(video.cmfv)" (one
// long-running request per track), or the one-request-per-segment form's file names
// as FFmpeg's dash muxer makes them, "init-stream0.m4s" and "chunk-stream0-00001.m4s"
// (track "stream0"; its kind comes from its CMAF header), or a manifest
// ("manifest.mpd", "*.m3u8"), which is accepted and not used. A media segment's
// place comes from its own decode time, never from its name.
func parseIngestName(s string) (id string, kind media.Kind, manifest bool, err error) {
	switch {
	case strings.HasPrefix(s, "Streams("):
		id, kind, err = parseStreamName(s)
		return id, kind, false, err
	case strings.HasSuffix(s, ".mpd") || strings.HasSuffix(s, ".m3u8"):
		return "", "", true, nil
	}
	base := strings.TrimSuffix(strings.TrimSuffix(s, ".m4s"), ".mp4")
	if base != s {
		if rep, ok := strings.CutPrefix(base, "init-stream"); ok {
			id = "stream" + rep
		} else if rest, ok := strings.CutPrefix(base, "chunk-stream"); ok {
			if rep, _, ok := strings.Cut(rest, "-"); ok {
				id = "stream" + rep
			}
		}
	}
	if id == "" || !media.ValidName(id) {
		return "", "", false, fmt.Errorf("ingest URL %q: want /ingest/{channel}/Streams({track}.cmfv|.cmfa), or a segment file init-stream{N}.m4s / chunk-stream{N}-{number}.m4s: %w", s, media.ErrNotFound)
	}
	return id, "", false, nil
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
