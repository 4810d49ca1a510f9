package pars

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streambed/streambed/internal/netutil"
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/transport/httppull"
)

// pipeConn is one persistent HTTP/1.1 connection that carries up to depth requests
// at once: HTTP/1.1 pipelining (RFC 9112 §9.3.2). A request is written as soon as it
// has a slot, while the response before it is still arriving; responses come back in
// the order of the requests and are read one after the other. This is what keeps a
// ParS connection sending across the end of a range: range k+1's request is on the
// wire before range k's body ends, so the request's round trip is hidden behind
// range k's last bytes. Go's client has no HTTP/1.1 pipelining, hence this small one.
//
// A request cancelled after it was written cannot be taken back, and its response
// would come in the way of the next one's: when little of it is left
// (ConnOptions.DrainLimit) it is read and thrown away in the background, so a seek
// does not cost the connection (a new one costs a handshake and slow start); else the
// connection is closed, the requests behind it on that connection fail (ParS retries
// them on a new connection), and the next request dials afresh. The same holds for
// a response abandoned before its end; a server's Connection: close closes it.
type pipeConn struct {
	o     ConnOptions
	slots chan struct{} // one per request from its write to the end of its response
	wire  netutil.Counter
	// onRTT is told the time from writing a request on a connection with nothing
	// else outstanding to its response's head: a round trip, without the dial.
	onRTT func(time.Duration)

	drained atomic.Int64 // abandoned answers read to their end instead of closing

	mu     sync.Mutex
	cur    *pipeLink // nil: dial at the next request
	closed bool      // Close was called: connect dials no more
}

// pipeLink is one TCP connection of a pipeConn.
type pipeLink struct {
	nc   net.Conn
	br   *bufio.Reader
	tail chan struct{} // closed when the last response requested so far has been read
	out  int           // requests written and not yet answered in full; guarded by pipeConn.mu

	drained *atomic.Int64 // the pipeConn's count of answers drained instead of closing

	mu      sync.Mutex
	broken  error
	reading *pipeBody // the body being handed out, which a cancel may interrupt
}

func newPipeConn(o ConnOptions, depth int) *pipeConn {
	return &pipeConn{o: o, slots: make(chan struct{}, max(depth, 1))}
}

// turnKey carries a function Do calls when the request's response is next to be
// read (the stall watchdog starts there, not while earlier responses arrive).
type turnKey struct{}

func withTurn(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, turnKey{}, f)
}

// Do writes req on the connection (dialling it if needed) and returns once its
// response's head has been read; the caller reads the body to its end and closes it,
// which frees the connection for the next response.
//
// A request cancelled after it was written (a seek, a switch of rendition) cannot be
// taken back, and its answer comes before the next one's on the connection. If what
// is left of that answer is small (ConnOptions.DrainLimit), it is read and thrown
// away in the background and the connection stays open; the caller gets its error at
// once and the next request can already be written behind it. Otherwise (or when
// the request stalled, or the answer's length is unknown) the connection is closed.
func (p *pipeConn) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	l, turn, done, alone, err := p.send(req)
	if err != nil {
		<-p.slots
		return nil, err
	}
	wrote := time.Now()
	release := func(err error) {
		if err != nil {
			l.breakWith(err)
			p.forget(l)
		}
		p.mu.Lock()
		l.out--
		p.mu.Unlock()
		close(done)
		<-p.slots
	}
	select {
	case <-turn:
	case <-ctx.Done():
		go p.discard(l, req, turn, nil, release)
		return nil, ctx.Err()
	}
	if err := l.err(); err != nil {
		release(err)
		return nil, err
	}
	l.own(nil) // this answer's turn: no deadline left from the one before
	if f, ok := ctx.Value(turnKey{}).(func()); ok {
		f()
	}
	heads := make(chan headResult, 1)
	go func() {
		resp, err := readHead(l.br, req)
		heads <- headResult{resp, err}
	}()
	var h headResult
	select {
	case h = <-heads:
	case <-ctx.Done():
		go p.discard(l, req, nil, heads, release)
		return nil, ctx.Err()
	}
	if h.err != nil {
		release(fmt.Errorf("reading the response: %w", h.err))
		return nil, h.err
	}
	resp := h.resp
	if alone && p.onRTT != nil {
		p.onRTT(time.Since(wrote))
	}
	if resp.Close {
		p.forget(l) // the server closes it after this response: no more requests on it
	}
	b := &pipeBody{ReadCloser: resp.Body, l: l, ctx: ctx, length: resp.ContentLength, limit: p.o.DrainLimit,
		stall: p.o.StallTimeout, bodyless: req.Method == http.MethodHead || resp.ContentLength == 0,
		release: func(err error) {
			if err == nil && resp.Close {
				err = errors.New("the server closed the connection")
			}
			release(err)
		}}
	l.own(b)
	b.stop = context.AfterFunc(ctx, func() { l.interrupt(b) })
	resp.Body = b
	return resp, nil
}

type headResult struct {
	resp *http.Response
	err  error
}

// readHead reads the next final response head on br (interim 1xx answers skipped).
func readHead(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	resp, err := http.ReadResponse(br, req)
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
		resp, err = http.ReadResponse(br, req) // an interim answer: the final one follows
	}
	if err == nil && resp.StatusCode == http.StatusSwitchingProtocols {
		err = errors.New("the server switched protocols")
	}
	return resp, err
}

// discard ends an exchange whose request was cancelled before its body was handed
// out: at its turn (turn not nil) or while its head is read (heads not nil), the
// answer is read and thrown away if its body is at most DrainLimit bytes, within the
// stall timeout; else the connection is closed. Either way the slot is released.
func (p *pipeConn) discard(l *pipeLink, req *http.Request, turn <-chan struct{}, heads <-chan headResult, release func(error)) {
	cause := context.Cause(req.Context())
	abandoned := fmt.Errorf("a pipelined request was cancelled: %w", cause)
	if errors.Is(cause, errStalled) || p.o.DrainLimit < 0 {
		l.breakWith(abandoned) // unblocks a head being read
	}
	var h headResult
	if heads == nil {
		<-turn
		if err := l.err(); err != nil {
			release(err)
			return
		}
		l.own(nil)
		l.setDeadline(time.Now().Add(p.o.StallTimeout))
		h.resp, h.err = readHead(l.br, req)
	} else {
		l.setDeadline(time.Now().Add(p.o.StallTimeout))
		h = <-heads
	}
	switch {
	case h.err != nil:
		release(fmt.Errorf("%w; reading its answer: %w", abandoned, h.err))
	case h.resp.Close || h.resp.ContentLength < 0 || h.resp.ContentLength > p.o.DrainLimit:
		release(abandoned) // not worth reading: the connection is closed
	default:
		_, err := io.Copy(io.Discard, h.resp.Body) // net/http's body: an early end is an error
		if err == nil {
			l.setDeadline(time.Time{})
			p.drained.Add(1)
		}
		release(err)
	}
}

// send writes req on the current connection and returns the channel that is closed
// when its response is next to be read, the one it closes when it has been, and
// whether nothing else was outstanding on the connection.
func (p *pipeConn) send(req *http.Request) (l *pipeLink, turn, done chan struct{}, alone bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == nil {
		nc, err := p.dial(req)
		if err != nil {
			return nil, nil, nil, false, err
		}
		p.cur = p.link(nc)
	}
	l = p.cur
	if err := req.Write(l.nc); err != nil { // one write: Request.Write buffers and flushes
		l.breakWith(err)
		p.cur = nil
		return nil, nil, nil, false, fmt.Errorf("writing the request: %w", err)
	}
	turn, done = l.tail, make(chan struct{})
	l.tail = done
	alone = l.out == 0
	l.out++
	return l, turn, done, alone, nil
}

// connect dials the connection for u ahead of its first request, if it has none;
// a failure is left for that request to meet and report.
func (p *pipeConn) connect(ctx context.Context, u string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != nil || p.closed {
		return
	}
	if nc, err := p.dial(req); err == nil {
		p.cur = p.link(nc)
	}
}

// link wraps a new TCP connection; nothing is outstanding on it yet.
func (p *pipeConn) link(nc net.Conn) *pipeLink {
	tail := make(chan struct{})
	close(tail)
	return &pipeLink{nc: nc, br: bufio.NewReaderSize(nc, 32<<10), tail: tail, drained: &p.drained}
}

func (p *pipeConn) dial(req *http.Request) (net.Conn, error) {
	ctx := req.Context()
	host, port := req.URL.Hostname(), req.URL.Port()
	if port == "" {
		port = "80"
		if req.URL.Scheme == "https" {
			port = "443"
		}
	}
	addr := net.JoinHostPort(host, port)
	dial := p.o.DialContext
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if req.URL.Scheme == "https" {
		cfg := &tls.Config{}
		if p.o.TLSConfig != nil {
			cfg = p.o.TLSConfig.Clone()
		}
		cfg.InsecureSkipVerify = cfg.InsecureSkipVerify || p.o.Insecure
		cfg.NextProtos = []string{"http/1.1"}
		if cfg.ServerName == "" {
			cfg.ServerName = host
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		nc = tc
	}
	return netutil.NewCountingConn(nc, &p.wire), nil
}

// forget makes the next request dial a new connection if l is the current one.
func (p *pipeConn) forget(l *pipeLink) {
	p.mu.Lock()
	if p.cur == l {
		p.cur = nil
	}
	p.mu.Unlock()
}

func (l *pipeLink) breakWith(err error) {
	l.mu.Lock()
	if l.broken == nil {
		l.broken = err
		l.nc.Close()
	}
	l.mu.Unlock()
}

// own marks b (nil: none) as the body being read on l and clears the read deadline
// (an interrupt, or the bound of a drain, belongs to the answer before).
func (l *pipeLink) own(b *pipeBody) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reading = b
	if l.broken == nil {
		_ = l.nc.SetReadDeadline(time.Time{})
	}
}

func (l *pipeLink) setDeadline(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken == nil {
		_ = l.nc.SetReadDeadline(t)
	}
}

// interrupt cuts short a read of b's body when its request is cancelled, without
// closing the connection: b's Close then drains the rest or closes. A stalled
// request closes the connection at once.
func (l *pipeLink) interrupt(b *pipeBody) {
	if errors.Is(context.Cause(b.ctx), errStalled) {
		l.breakWith(errStalled)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reading == b && l.broken == nil {
		b.interrupted.Store(true)
		_ = l.nc.SetReadDeadline(time.Now())
	}
}

func (l *pipeLink) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken != nil {
		return fmt.Errorf("the connection broke before this response: %w", l.broken)
	}
	return nil
}

// pipeBody is a response body; its end (read to EOF, or closed) frees the connection
// for the next response. Closed half way, the rest is read and thrown away in the
// background when it is at most limit bytes; otherwise the connection is closed.
type pipeBody struct {
	io.ReadCloser // http.ReadResponse's body, never closed: its Close reads it to its end
	l             *pipeLink
	ctx           context.Context
	length, got   int64 // length -1: unknown
	limit         int64
	stall         time.Duration
	bodyless, eof bool
	interrupted   atomic.Bool // the request was cancelled: its reads were cut short by a deadline
	once          sync.Once
	stop          func() bool // the AfterFunc that interrupts a read on cancel
	release       func(err error)
}

func (b *pipeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.got += int64(n)
	switch {
	case err == io.EOF:
		b.eof = true
		b.once.Do(func() { b.end(nil) })
	case err != nil && b.interrupted.Load():
		// Cut short by our own deadline: Close decides whether to drain the rest.
		if c := b.ctx.Err(); c != nil {
			err = c
		}
	case err != nil:
		b.once.Do(func() { b.end(err) })
	}
	return n, err
}

func (b *pipeBody) Close() error {
	b.once.Do(func() {
		rest := b.length - b.got
		switch {
		case b.eof || b.bodyless:
			b.end(nil)
		case b.length < 0 || rest > b.limit || errors.Is(context.Cause(b.ctx), errStalled) || b.l.err() != nil:
			b.end(errors.New("a response abandoned before its end"))
		default:
			b.stop()
			b.l.own(nil) // a late interrupt must not cut the drain short
			b.l.setDeadline(time.Now().Add(b.stall))
			go func() {
				_, err := io.Copy(io.Discard, b.ReadCloser) // an early end is an error
				if err == nil {
					b.l.drained.Add(1)
				}
				b.end(err)
			}()
		}
	})
	return nil
}

// end gives the connection to the next response (err nil) or closes it.
func (b *pipeBody) end(err error) {
	b.stop()
	b.l.own(nil)
	b.release(err)
}

// WireBytes counts every connection's bytes.
func (p *pipeConn) WireBytes() (read, written int64) { return p.wire.Bytes() }

// Close closes the connection; requests in flight on it fail.
func (p *pipeConn) Close() error {
	p.mu.Lock()
	l := p.cur
	p.cur, p.closed = nil, true
	p.mu.Unlock()
	if l != nil {
		l.breakWith(errors.New("closed"))
	}
	return nil
}

// Fetch GETs a manifest, an init segment or a clock on the connection, as
// httppull.Client.Fetch does for ParS's other lanes.
func (p *pipeConn) Fetch(ctx context.Context, req player.SegmentRequest) (*player.Response, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL, nil)
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("User-Agent", p.o.UserAgent)
	hreq.Header.Set("Accept-Encoding", "gzip") // as net/http's client asks: the origin compresses manifests
	r0, w0 := p.WireBytes()
	start := time.Now()
	resp, err := p.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", req.URL, err)
	}
	defer resp.Body.Close()
	first := time.Now()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, httppull.StatusError(req.URL, resp)
	}
	out := &player.Response{Start: start, FirstByte: first, Protocol: resp.Proto}
	var body io.Reader = resp.Body
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("GET %s: gzip: %w", req.URL, err)
		}
		defer io.Copy(io.Discard, resp.Body) // to its end, so the connection stays usable
		body = zr
	}
	if req.KeepBody {
		out.Body, err = io.ReadAll(io.LimitReader(body, p.o.MaxSegmentBytes+1))
		out.PayloadBytes = int64(len(out.Body))
		if err == nil && out.PayloadBytes > p.o.MaxSegmentBytes {
			err = fmt.Errorf("body larger than %d bytes", p.o.MaxSegmentBytes)
		}
	} else {
		out.PayloadBytes, err = io.Copy(io.Discard, body)
	}
	out.End = time.Now()
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading body: %w", req.URL, err)
	}
	r1, w1 := p.WireBytes()
	out.OverheadBytes, out.OverheadExact = max(r1-r0+w1-w0-out.PayloadBytes, 0), true
	return out, nil
}
