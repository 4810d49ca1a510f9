package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/streambed/streambed/internal/media"
)

// statusOf is the one mapping from error kinds to HTTP status codes.
func statusOf(err error) int {
	switch {
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

// writeError answers with a JSON error. A 404 for a live segment that is not yet
// available must not be cached: it becomes available within a segment duration.
func writeError(w http.ResponseWriter, err error) {
	status := statusOf(err)
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
	_ = json.NewEncoder(w).Encode(map[string]any{"error": msg, "status": status})
}
