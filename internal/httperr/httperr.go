// Package httperr is the one way Streambed answers an HTTP request with an error:
// the media error kinds map to status codes here (the inverse of media.KindOfStatus),
// and every error body has one shape, {"error": MESSAGE, "status": STATUS}. The
// origin and every transport's server side use it; it imports only internal/media.
package httperr

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/streambed/streambed/internal/media"
)

// Status is the one mapping from error kinds to HTTP status codes: a status given
// with WithStatus, else the media kind's (bad request 400, not found and not yet
// 404, gone 410, unavailable 503), else 500.
func Status(err error) int {
	var se *statusError
	switch {
	case errors.As(err, &se):
		return se.status
	case errors.Is(err, media.ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, media.ErrNotFound), errors.Is(err, media.ErrNotYet):
		return http.StatusNotFound
	case errors.Is(err, media.ErrGone):
		return http.StatusGone
	case errors.Is(err, media.ErrUnavailable):
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// WithStatus makes err answer with status, for errors that are no media kind
// (401 for a missing token, 400 for a handler's own validation error, …). The
// message stays err's.
func WithStatus(status int, err error) error {
	if err == nil {
		return nil
	}
	return &statusError{status: status, err: err}
}

type statusError struct {
	status int
	err    error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// Write answers with err as JSON, {"error": MESSAGE, "status": STATUS}, with the
// status of Status(err). A 500 says only "internal error; see the server log" (the
// caller logs err). Caching follows the kind: a live segment that is not yet
// available (media.ErrNotYet) must not be cached — it becomes available within a
// segment duration — so it is no-cache; a 410 may be cached for a minute; everything
// else is no-store. Validators and the length of a response the handler had started
// to describe are dropped.
func Write(w http.ResponseWriter, err error) {
	status := Status(err)
	h := w.Header()
	h.Del("Content-Length")
	h.Del("ETag")
	h.Del("Last-Modified")
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	switch {
	case errors.Is(err, media.ErrNotYet):
		h.Set("Cache-Control", "no-cache")
	case status == http.StatusGone:
		h.Set("Cache-Control", "public, max-age=60")
	default:
		h.Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	msg := err.Error()
	if status == http.StatusInternalServerError {
		msg = "internal error; see the server log"
	}
	_ = json.NewEncoder(w).Encode(Body{Error: msg, Status: status})
}

// Body is the JSON of every error response, for clients that read it.
type Body struct {
	Error  string `json:"error"`
	Status int    `json:"status"`
}
