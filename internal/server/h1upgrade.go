package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// WebSocket opening handshakes on the lean path. A push viewer's session begins
// with one GET that asks to upgrade; handing that connection to net/http costs a
// second parse of the head, net/http's connection set-up (its goroutine, buffers and
// state hooks) and its hijack, for every viewer (docs/results/wspush-capacity.md).
// Here the lean path answers it itself: it parses the head, builds the request and
// calls the origin's handler (routes, middleware, the WebSocket library's own
// checks of the handshake, unchanged) with a writer that can be hijacked; the
// hijacked connection is the TCP socket itself, with the bytes read ahead in the
// reader handed over. A handshake the library refuses gets its answer and the
// connection closes. Anything else that asks to upgrade, or a head this parser does
// not take whole, goes to net/http as before.

// wsPathPrefix is where the WebSocket push routes live (layout.WebSocket).
const wsPathPrefix = "/ws/"

// upgradeHead is the part of a WebSocket upgrade GET that the request needs.
type upgradeHead struct {
	target, path, query, host string
	header                    http.Header
}

// parseUpgradeHead parses an upgrade GET for a /ws/ path: request line GET SP
// origin-form target SP HTTP/1.1; header lines as parseHead takes them (valid names
// and values, one valid Host); an Upgrade header; no body (Content-Length,
// Transfer-Encoding), no Expect, no h2c settings, no trailers. Anything else is
// not an upgrade this path answers (false): net/http judges it.
func parseUpgradeHead(head []byte, u *upgradeHead) bool {
	line, rest, ok := cutLine(head)
	if !ok {
		return false
	}
	method, line, ok := bytes.Cut(line, []byte{' '})
	if !ok || string(method) != http.MethodGet {
		return false
	}
	target, proto, ok := bytes.Cut(line, []byte{' '})
	if !ok || string(proto) != "HTTP/1.1" || !bytes.HasPrefix(target, []byte(wsPathPrefix)) || !leanTarget(target) {
		return false
	}
	u.target = string(target)
	u.path, u.query, _ = strings.Cut(u.target, "?")
	if u.header == nil {
		u.header = make(http.Header, 8)
	}
	hosts, upgrade := 0, false
	for {
		line, rest, ok = cutLine(rest)
		if !ok {
			return false
		}
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok || len(k) == 0 || !httpguts.ValidHeaderFieldName(string(k)) {
			return false // includes obs-fold lines, which begin with a space
		}
		v = bytes.Trim(v, " \t")
		if !httpguts.ValidHeaderFieldValue(string(v)) {
			return false
		}
		key := canonicalKey(k)
		switch key {
		case "Host":
			hosts++
			u.host = string(v)
			continue // net/http moves Host out of the header map into Request.Host
		case "Content-Length", "Transfer-Encoding", "Expect", "Http2-Settings", "Trailer":
			return false
		case "Upgrade":
			upgrade = true
		}
		u.header[key] = append(u.header[key], string(v))
	}
	return len(rest) == 0 && hosts == 1 && upgrade && httpguts.ValidHostHeader(u.host)
}

// serveUpgrade answers head on the lean path if it is a WebSocket upgrade GET it
// takes (true: the connection is the handler's now, or closed), or leaves the
// connection untouched for net/http (false).
func (c *h1Conn) serveUpgrade(head []byte) (taken bool) {
	var u upgradeHead
	if !parseUpgradeHead(head, &u) {
		return false
	}
	_, _ = c.br.Discard(len(head))
	// A request of its own, not the pooled exchange: the session it starts lives on.
	// Its context ends when the lean connection's goroutine returns, right after the
	// hand-over, as net/http ends a hijacked request's.
	r := c.base.Clone(c.base.Context())
	r.Method = http.MethodGet
	r.URL = &url.URL{Path: u.path, RawQuery: u.query}
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	r.Header = u.header
	r.Body = http.NoBody
	r.Host = u.host
	r.RemoteAddr = c.remoteAddr
	r.RequestURI = u.target
	w := &h1UpgradeWriter{h1Writer: h1Writer{c: c, header: make(http.Header, 4)}}
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				c.srv.log.Error("http: panic serving", "remote", c.remoteAddr, "panic", fmt.Sprint(p), "stack", string(buf))
			}
			if !w.hijacked {
				c.srv.closeConn(c)
			}
			taken = true // closed or the handler's: never handed on
		}
	}()
	c.srv.served.Add(1)
	c.srv.handler.ServeHTTP(w, r)
	if w.hijacked {
		return true
	}
	// Refused (a bad handshake, an unknown stream): the answer, then the end of the
	// connection, whose next bytes would be the client's idea of a WebSocket.
	w.closeAfter = true
	w.finish()
	c.srv.closeConn(c)
	return true
}

// h1UpgradeWriter is the lean writer of an upgrade request, which the handler may
// hijack (http.Hijacker): the head written so far (the 101) goes out, the
// connection leaves the lean path's books (and its gauge, as net/http's
// StateHijacked does) and is the caller's.
type h1UpgradeWriter struct {
	h1Writer
	hijacked bool
}

func (w *h1UpgradeWriter) Write(p []byte) (int, error) {
	if w.hijacked {
		return 0, http.ErrHijacked
	}
	return w.h1Writer.Write(p)
}

func (w *h1UpgradeWriter) WriteHeader(code int) {
	if !w.hijacked {
		w.h1Writer.WriteHeader(code)
	}
}

func (w *h1UpgradeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked {
		return nil, nil, http.ErrHijacked
	}
	if w.committed || w.err != nil {
		return nil, nil, errors.New("http: hijack after the response began")
	}
	c := w.c
	if w.wroteHeader {
		// As net/http: the head set so far (the 101) is sent before the hand-over.
		w.closeAfter = false
		if err := c.write(w.headBytes(nil)); err != nil {
			return nil, nil, err
		}
		w.committed = true
	}
	w.hijacked = true
	_ = c.nc.SetDeadline(time.Time{}) // the header timeout no longer applies
	c.srv.untrack(c)
	// The head reader, with whatever the client sent after the head; it reads through
	// the lean connection's raw reads, which go on working on the socket.
	return c.nc, bufio.NewReadWriter(c.br, bufio.NewWriterSize(c.nc, 4096)), nil
}

// isUpgradeHead says cheaply whether head may be a WebSocket opening handshake
// (a GET of a push path), which is then parsed whole outside the read loop.
func isUpgradeHead(head []byte) bool {
	return bytes.HasPrefix(head, []byte("GET "+wsPathPrefix))
}
