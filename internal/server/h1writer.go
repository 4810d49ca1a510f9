package server

import (
	"io"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/streambed/streambed/internal/layout"
)

// h1Writer is the lean path's http.ResponseWriter. It answers as net/http's HTTP/1.1
// writer does (same status line, the same added Date, Content-Length, sniffed
// Content-Type, chunking and Connection rules) but sends the head with the body:
// one writev for bytes, or the head marked MSG_MORE and then sendfile for a file,
// where net/http writes the head on its own first.
type h1Writer struct {
	c      *h1Conn
	header http.Header
	status int

	wroteHeader bool  // a final status is chosen
	committed   bool  // the head is on the wire
	clen        int64 // declared Content-Length, -1 when none
	written     int64 // body bytes accepted
	chunked     bool
	pending     []byte // body bytes held before the head while the length is unknown
	closeAfter  bool   // the connection ends after this response
	err         error  // the connection failed: nothing more can be sent

	parsed layout.Parsed // the request's path, parsed once on the lean path (layout.ParseFor)
	rec    recorder      // the metrics' recorder of this response (metrics.wrap), kept here to be pooled
}

// ParsedPath makes the writer a layout.ParsedCarrier: the handler chain reads the
// path the lean path parsed instead of parsing it again.
func (w *h1Writer) ParsedPath() *layout.Parsed { return &w.parsed }

// bufferBeforeChunking is how much body net/http holds before it gives up on
// learning the length and chunks (its bufferBeforeChunkingSize).
const bufferBeforeChunking = 2048

func (w *h1Writer) Header() http.Header { return w.header }

func (w *h1Writer) WriteHeader(code int) {
	if w.wroteHeader || w.committed {
		return
	}
	if code < 100 || code > 999 {
		panic("invalid WriteHeader code " + strconv.Itoa(code))
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		// An informational response (103 Early Hints) goes out at once, with the
		// headers set so far, as net/http sends it.
		b := appendStatusLine(w.c.head[:0], code)
		b = appendHeader(b, w.header, nil)
		b = append(b, "\r\n"...)
		w.c.head = b
		w.fail(w.c.write(b))
		return
	}
	w.status, w.wroteHeader = code, true
	w.clen = -1
	if v := w.header.Get("Content-Length"); v != "" {
		n, err := strconv.ParseUint(v, 10, 63)
		if err != nil {
			w.header.Del("Content-Length") // net/http drops (and logs) an invalid one
		} else {
			w.clen = int64(n)
		}
	}
}

func (w *h1Writer) bodyAllowed() bool { return bodyAllowedForStatus(w.status) }

func bodyAllowedForStatus(code int) bool {
	switch {
	case code >= 100 && code <= 199, code == http.StatusNoContent, code == http.StatusNotModified:
		return false
	}
	return true
}

func (w *h1Writer) fail(err error) {
	if err != nil && w.err == nil {
		w.err = err
		w.closeAfter = true
	}
}

func (w *h1Writer) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if !w.bodyAllowed() {
		return 0, http.ErrBodyNotAllowed
	}
	if w.clen >= 0 && w.written+int64(len(p)) > w.clen {
		return 0, http.ErrContentLength
	}
	switch {
	case !w.committed && w.clen >= 0:
		w.written += int64(len(p))
		w.fail(w.commit(p, false))
	case !w.committed:
		w.pending = append(w.pending, p...)
		w.written += int64(len(p))
		if len(w.pending) > bufferBeforeChunking {
			w.fail(w.commit(nil, false))
		}
	case w.chunked:
		w.written += int64(len(p))
		w.fail(w.c.writeChunk(p))
	default:
		w.written += int64(len(p))
		w.fail(w.c.write(p))
	}
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

// ReadFrom sends a segment file with sendfile, the head corked in front of it; other
// readers are copied through Write.
func (w *h1Writer) ReadFrom(src io.Reader) (int64, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	f, n := fileOf(src)
	if f == nil || w.committed || w.clen < 0 || n != w.clen-w.written || !w.bodyAllowed() || w.c.raw == nil {
		return io.Copy(writerOnly{w}, src)
	}
	if err := w.c.sendMore(w.headBytes(nil)); err != nil {
		w.fail(err)
		return 0, err
	}
	w.committed = true
	w.c.mayWait()                      // Go's sendfile waits for the socket
	sent, err := w.c.tcp.ReadFrom(src) // sendfile
	w.written += sent
	w.fail(err)
	return sent, err
}

// sendFile sends n bytes of f from offset 0 as the whole body, the head sent with
// MSG_MORE just before (one packet train, as nginx's tcp_nopush); false when this
// response cannot (then nothing was sent and the caller copies).
func (w *h1Writer) sendFile(f *os.File, n int64) (bool, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil || w.committed || w.clen != n || w.written != 0 || !w.bodyAllowed() || w.c.raw == nil {
		return false, nil
	}
	headSent, sent, err := w.c.sendHeadAndFile(w.headBytes(nil), f, n)
	w.committed = headSent
	if !headSent {
		w.fail(err)
		return true, err
	}
	w.written += sent
	if err == nil && sent < n {
		err = io.ErrUnexpectedEOF // the file shrank: the client sees the close
	}
	w.fail(err)
	return true, err
}

// fileSender is a ResponseWriter that sends a file's bytes with sendfile at an
// explicit offset (no seek, no position shared between requests).
type fileSender interface {
	sendFile(f *os.File, n int64) (bool, error)
}

// writeBuffers sends bufs as body: with the head in one writev when they are the
// whole body of a response of known length (a live segment's chunks), else as
// Writes.
func (w *h1Writer) writeBuffers(bufs [][]byte) (int64, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	var n int64
	for _, b := range bufs {
		n += int64(len(b))
	}
	if w.err != nil || w.committed || w.clen < 0 || n != w.clen-w.written || !w.bodyAllowed() {
		return writeEach(writerOnly{w}, bufs)
	}
	w.committed = true
	all := make(net.Buffers, 0, len(bufs)+1)
	all = append(append(all, w.headBytes(nil)), bufs...)
	if err := w.c.writeAll(all); err != nil {
		w.fail(err)
		return 0, err
	}
	w.written += n
	return n, nil
}

// writeEach writes bufs one Write each.
func writeEach(w io.Writer, bufs [][]byte) (int64, error) {
	var n int64
	for _, b := range bufs {
		k, err := w.Write(b)
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// buffersWriter is a ResponseWriter that sends several slices as one system call.
type buffersWriter interface {
	writeBuffers(bufs [][]byte) (int64, error)
}

// writeBuffers writes bufs to w, in one system call where w can.
func writeBuffers(w http.ResponseWriter, bufs [][]byte) (int64, error) {
	if bw, ok := w.(buffersWriter); ok {
		return bw.writeBuffers(bufs)
	}
	return writeEach(w, bufs)
}

// writerOnly hides ReadFrom so io.Copy uses Write.
type writerOnly struct{ io.Writer }

// fileOf is the file src reads and how many bytes, when that is all it does.
func fileOf(src io.Reader) (*os.File, int64) {
	switch r := src.(type) {
	case *io.LimitedReader:
		if f, ok := r.R.(*os.File); ok {
			return f, r.N
		}
	}
	return nil, 0
}

// Flush sends the head and what is held; without a Content-Length the body is
// chunked from here on.
func (w *h1Writer) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil || w.committed {
		return
	}
	w.fail(w.commit(nil, false))
}

// finish ends the response after the handler returned.
func (w *h1Writer) finish() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return
	}
	if !w.committed {
		w.fail(w.commit(nil, true))
	} else if w.chunked {
		w.fail(w.c.write([]byte("0\r\n\r\n")))
	}
	if w.clen >= 0 && w.written < w.clen && w.bodyAllowed() {
		w.closeAfter = true // short of its Content-Length: the client sees the close
	}
}

// commit sends the head with body (known length) or the held bytes (as the
// whole body when done, else as the first chunk).
func (w *h1Writer) commit(body []byte, done bool) error {
	w.committed = true
	if w.clen >= 0 || !w.bodyAllowed() {
		return w.c.writev(w.headBytes(nil), body)
	}
	if done {
		w.clen = int64(len(w.pending))
		return w.c.writev(w.headBytes(strconv.AppendInt(nil, w.clen, 10)), w.pending)
	}
	w.chunked = true
	w.c.startWatch()
	if err := w.c.write(w.headBytes(nil)); err != nil {
		return err
	}
	if len(w.pending) == 0 {
		return nil
	}
	return w.c.writeChunk(w.pending)
}

// headBytes is the status line and headers, with net/http's additions. autoLength
// is the Content-Length net/http would add for a body it saw whole.
func (w *h1Writer) headBytes(autoLength []byte) []byte {
	h := w.header
	skip := map[string]bool(nil)
	if !w.bodyAllowed() {
		skip = suppressed(w.status)
	} else if w.clen < 0 && autoLength == nil {
		skip = skipLength // chunked: a Content-Length would contradict it
	}
	if v := h["Connection"]; len(v) > 0 && strings.EqualFold(v[0], "close") {
		w.closeAfter = true
	}
	closing := w.closeAfter || w.c.closing()
	b := appendStatusLine(w.c.head[:0], w.status)
	b = appendHeader(b, h, skip)
	if _, ok := h["Date"]; !ok {
		b = append(b, "Date: "...)
		b = w.c.srv.dates.append(b, w.c.clock())
		b = append(b, "\r\n"...)
	}
	if autoLength != nil && w.bodyAllowed() && !has(h, "Content-Length") {
		b = append(b, "Content-Length: "...)
		b = append(b, autoLength...)
		b = append(b, "\r\n"...)
	}
	if w.bodyAllowed() {
		_, haveType := h["Content-Type"]
		if !haveType && h.Get("Content-Encoding") == "" && len(w.pending) > 0 {
			b = append(b, "Content-Type: "...)
			b = append(b, http.DetectContentType(w.pending)...)
			b = append(b, "\r\n"...)
		}
	}
	if w.chunked {
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	}
	if closing {
		w.closeAfter = true
		if v := h["Connection"]; len(v) == 0 || !strings.EqualFold(v[0], "close") {
			b = append(b, "Connection: close\r\n"...)
		}
	}
	b = append(b, "\r\n"...)
	w.c.head = b
	return b
}

var (
	// Headers net/http leaves out: a length beside chunking, and the body's
	// description on a response without one (its suppressedHeaders).
	skipLength = map[string]bool{"Content-Length": true, "Transfer-Encoding": true}
	skip304    = map[string]bool{"Content-Type": true, "Content-Length": true, "Transfer-Encoding": true}
	skipNoBody = map[string]bool{"Content-Length": true, "Transfer-Encoding": true}
)

func suppressed(code int) map[string]bool {
	if code == http.StatusNotModified {
		return skip304
	}
	return skipNoBody
}

func has(h http.Header, k string) bool { _, ok := h[k]; return ok }

func appendStatusLine(b []byte, code int) []byte {
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(code), 10)
	if text := http.StatusText(code); text != "" {
		b = append(b, ' ')
		b = append(b, text...)
	} else {
		b = append(b, " status code "...)
		b = strconv.AppendInt(b, int64(code), 10)
	}
	return append(b, "\r\n"...)
}

// appendHeader writes h as net/http's Header.Write does: invalid names left out,
// line breaks in values made spaces, surrounding space trimmed.
func appendHeader(b []byte, h http.Header, skip map[string]bool) []byte {
	for k, vs := range h {
		if skip[k] || !validFieldName(k) {
			continue
		}
		for _, v := range vs {
			b = append(b, k...)
			b = append(b, ": "...)
			start := len(b)
			if n := len(v); n > 0 && (v[0] <= ' ' || v[n-1] <= ' ') {
				v = textproto.TrimString(v) // rare: the values the origin sets are trimmed
			}
			b = append(b, v...)
			if strings.IndexByte(v, '\r') >= 0 || strings.IndexByte(v, '\n') >= 0 { // rare: looked for a word at a time
				for i := start; i < len(b); i++ {
					if b[i] == '\r' || b[i] == '\n' {
						b[i] = ' '
					}
				}
			}
			b = append(b, "\r\n"...)
		}
	}
	return b
}

// validFieldName is httpguts.ValidHeaderFieldName, answered at once for the names a
// segment response carries.
func validFieldName(k string) bool {
	switch k {
	case "Content-Type", "Content-Length", "Cache-Control", "Etag", "Last-Modified",
		"Access-Control-Allow-Origin", "Access-Control-Expose-Headers", "Accept-Ranges", "Date":
		return true
	}
	return httpguts.ValidHeaderFieldName(k)
}
