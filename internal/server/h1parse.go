package server

import (
	"bytes"
	"errors"
	"net/http"
	"net/textproto"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/streambed/streambed/internal/layout"
)

// h1Head is an HTTP/1.1 request head as the lean segment path reads it: only the
// plain form a player or a cache sends for a segment. Anything else — another
// method or version, a body, an upgrade, an encoded or absolute target, a folded
// or odd header — is not parsed here but handed to net/http, which answers it as it
// always has (400 for what is malformed).
type h1Head struct {
	method string
	target string // the request-target as sent: path and optional ?query
	path   string
	query  string
	host   string
	header http.Header
	close  bool // Connection: close

	prevHost string // the connection's last Host, reused when this one is the same

	res layout.Resource // path parsed by leanRoute, carried to the handlers on the writer
}

// errNotLean says a request head is not one the lean path serves: net/http takes it.
var errNotLean = errors.New("not a plain HTTP/1.1 GET head")

// parseHead parses head, the bytes of a request line and header lines up to and
// including the empty line (CRLF or bare LF endings, as net/http accepts them).
func parseHead(head []byte, h *h1Head) error {
	line, rest, ok := cutLine(head)
	if !ok {
		return errNotLean
	}
	// Request line: GET SP target SP HTTP/1.1, single spaces, as RFC 9112 says.
	method, line, ok := bytes.Cut(line, []byte{' '})
	if !ok || string(method) != http.MethodGet {
		return errNotLean
	}
	target, proto, ok := bytes.Cut(line, []byte{' '})
	if !ok || string(proto) != "HTTP/1.1" || !leanTarget(target) {
		return errNotLean
	}
	h.method = http.MethodGet
	h.target = string(target)
	h.path, h.query = h.target, ""
	if i := bytes.IndexByte(target, '?'); i >= 0 {
		h.path, h.query = h.target[:i], h.target[i+1:]
	}
	if h.header == nil {
		h.header = make(http.Header, 8)
	}
	hosts := 0
	for {
		line, rest, ok = cutLine(rest)
		if !ok {
			return errNotLean
		}
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok || len(k) == 0 || !httpguts.ValidHeaderFieldName(string(k)) {
			return errNotLean // includes obs-fold lines, which begin with a space
		}
		v = bytes.Trim(v, " \t")
		if !httpguts.ValidHeaderFieldValue(string(v)) {
			return errNotLean
		}
		key := canonicalKey(k)
		switch key {
		case "Host":
			hosts++
			if string(v) == h.prevHost {
				h.host = h.prevHost // no new string: a client sends one Host
			} else {
				h.host = string(v)
			}
			continue // net/http moves Host out of the header map into Request.Host
		case "Content-Length", "Transfer-Encoding", "Expect", "Upgrade", "Http2-Settings", "Trailer":
			return errNotLean // a body, a protocol switch or a continue: net/http's
		case "Connection":
			for _, tok := range bytes.Split(v, []byte{','}) {
				switch string(bytes.ToLower(bytes.TrimSpace(tok))) {
				case "close":
					h.close = true
				case "upgrade":
					return errNotLean
				}
			}
		}
		h.header[key] = append(h.header[key], string(v))
	}
	if len(rest) != 0 || hosts != 1 || !httpguts.ValidHostHeader(h.host) {
		return errNotLean
	}
	return nil
}

// cutLine splits off the first line of b (LF or CRLF), reporting whether one ended.
func cutLine(b []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return nil, nil, false
	}
	line = b[:i]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if bytes.IndexByte(line, '\r') >= 0 {
		return nil, nil, false // a bare CR inside a line: let net/http judge it
	}
	return line, b[i+1:], true
}

// leanTarget reports an origin-form target whose path needs no decoding or cleaning
// (no %, no dot segments, no empty segments) and whose query is printable ASCII, so
// the path a handler sees is the bytes sent, as net/http would make it.
func leanTarget(t []byte) bool {
	if len(t) == 0 || t[0] != '/' {
		return false
	}
	path, query, _ := bytes.Cut(t, []byte{'?'})
	for i, c := range path {
		if !pathByte(c) {
			return false
		}
		if c == '/' && i+1 < len(path) && (path[i+1] == '/' || path[i+1] == '.') {
			return false
		}
	}
	for _, c := range query {
		if c <= ' ' || c >= 0x7f || c == '#' {
			return false
		}
	}
	return true
}

func pathByte(c byte) bool { return pathBytes[c] }

// pathBytes marks the bytes a lean path may hold: unreserved, sub-delims, ':', '@'
// and '/' (a table: every byte of every request's path is looked up).
var pathBytes = func() (t [256]bool) {
	for c := range 256 {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			t[c] = true
		default:
			t[c] = strings.IndexByte("-._~/!$&'()*+,;=:@", byte(c)) >= 0
		}
	}
	return t
}()

// canonicalKey is textproto's canonical form of a header name, without allocating
// for the names players and caches send.
func canonicalKey(k []byte) string {
	switch string(k) {
	case "Host", "host":
		return "Host"
	case "User-Agent", "user-agent":
		return "User-Agent"
	case "Accept", "accept":
		return "Accept"
	case "Accept-Encoding", "accept-encoding":
		return "Accept-Encoding"
	case "Accept-Language", "accept-language":
		return "Accept-Language"
	case "Connection", "connection":
		return "Connection"
	case "Range", "range":
		return "Range"
	case "If-None-Match", "if-none-match":
		return "If-None-Match"
	case "If-Modified-Since", "if-modified-since":
		return "If-Modified-Since"
	case "Origin", "origin":
		return "Origin"
	case "Referer", "referer":
		return "Referer"
	case "Cache-Control", "cache-control":
		return "Cache-Control"
	case "Pragma", "pragma":
		return "Pragma"
	}
	return textproto.CanonicalMIMEHeaderKey(string(k))
}
