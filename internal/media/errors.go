package media

import "errors"

// Error kinds shared by every layer. internal/server maps them to HTTP status codes in
// one place; transports map them to their own close codes.
var (
	ErrNotFound     = errors.New("not found")               // unknown stream, track or segment: 404
	ErrNotYet       = errors.New("not yet available")       // live segment in the future: 404, short cache
	ErrGone         = errors.New("outside the DVR window")  // live segment too old: 410
	ErrBadRequest   = errors.New("bad request")             // malformed name or parameter: 400
	ErrInvalidMedia = errors.New("invalid media")           // malformed boxes, not media at all
	ErrUnavailable  = errors.New("temporarily unavailable") // e.g. an encoder reconnecting: 503
)
