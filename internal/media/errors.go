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

// KindOfStatus is the inverse of the origin's error mapping, for clients: the error
// kind an HTTP status stands for, or nil when it stands for none of them. A 404 may
// also be a live segment not yet available; the player treats it as such on live.
func KindOfStatus(status int) error {
	switch status {
	case 404:
		return ErrNotFound
	case 410:
		return ErrGone
	case 425: // Too Early
		return ErrNotYet
	case 400:
		return ErrBadRequest
	case 503:
		return ErrUnavailable
	}
	return nil
}
