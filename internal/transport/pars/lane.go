package pars

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/transport/httppull"
)

// ConnOptions are what ParS and Parallel share: how to reach the origin.
type ConnOptions struct {
	// Insecure skips verification of the server certificate (self-signed lab origins).
	Insecure  bool
	TLSConfig *tls.Config
	// DialContext dials TCP (nil: net.Dialer); a lab dials inside a network namespace.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	UserAgent   string
	// StallTimeout: a request that receives no byte for this long is abandoned and
	// retried on a new connection (default 3 s).
	StallTimeout time.Duration
	// MaxRetries per byte range (ParS) or segment (Parallel) before the fetch fails
	// (default 3).
	MaxRetries int
	// MaxSegmentBytes refuses a segment larger than this, whatever the index, HEAD or
	// Content-Length claims, before allocating it (default 256 MiB).
	MaxSegmentBytes int64
	Logger          *slog.Logger
	// Streams is how many range requests one connection carries at once (0: for ParS
	// over HTTP/1.1 DefaultStreams, 2; otherwise 1). Over
	// HTTP/1.1 (the default LaneProtocol) more than one is HTTP/1.1 pipelining
	// (h1pipe.go): ParS writes a connection's next range request when the rest of
	// its current body is due within about 1.5 round trips, so the next body follows
	// without the request's round trip. Over HTTP/2 (H2C for http URLs, H2 for
	// https) each connection carries Streams concurrent streams from the start. Either
	// way each connection is its own TCP connection.
	Streams int
	// LaneProtocol is the protocol of each connection: httppull.HTTP1 (default), or
	// H2C / H2.
	LaneProtocol httppull.Protocol
	// DrainLimit: a pipelined HTTP/1.1 connection whose request was cancelled (a
	// seek) reads and throws away the rest of its answer, keeping the connection,
	// when at most this many bytes are left; more, and it closes the connection
	// (64 KiB: about what a new connection costs in handshake, request and slow
	// start, 3–4 round trips at one connection's share of the study's link, 2.5
	// Mbit/s and 50 ms; negative: always close).
	DrainLimit int64
}

func (o ConnOptions) withDefaults() ConnOptions {
	if o.UserAgent == "" {
		o.UserAgent = "streambed-pars"
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = 3 * time.Second
	}
	if o.MaxRetries <= 0 {
		o.MaxRetries = 3
	}
	if o.MaxSegmentBytes <= 0 {
		o.MaxSegmentBytes = 256 << 20
	}
	if o.Streams <= 0 {
		o.Streams = 1
	}
	if o.LaneProtocol == "" {
		o.LaneProtocol = httppull.HTTP1
	}
	if o.DrainLimit == 0 {
		o.DrainLimit = 64 << 10
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// lane is one persistent HTTP/1.1 connection: an httppull client of its own (its own
// connection pool, used one exchange at a time, so it keeps one TCP connection open
// and counts the bytes on it). HTTP/1.1 is forced because HTTP/2 would multiplex
// every lane onto one TCP connection, which is what ParS must not do.
type lane struct {
	id  int
	c   laneConn
	rtt atomic.Int64 // the shortest request-to-first-byte time seen on it, ns (0: none)
}

// sawRTT takes d as a round trip on the lane if it is the shortest yet.
func (l *lane) sawRTT(d time.Duration) {
	for {
		old := l.rtt.Load()
		if d <= 0 || (old != 0 && old <= int64(d)) || l.rtt.CompareAndSwap(old, int64(d)) {
			return
		}
	}
}

// laneConn is what a lane speaks: an httppull.Client (one request at a time, or
// Streams at once over HTTP/2), or a pipeConn (Streams at once pipelined over
// HTTP/1.1).
type laneConn interface {
	Do(*http.Request) (*http.Response, error)
	Fetch(context.Context, player.SegmentRequest) (*player.Response, error)
	WireBytes() (read, written int64)
	Close() error
}

func newLanes(n int, o ConnOptions) ([]*lane, error) {
	out := make([]*lane, n)
	for i := range out {
		if o.LaneProtocol == httppull.HTTP1 && o.Streams > 1 {
			pc := newPipeConn(o, o.Streams)
			out[i] = &lane{id: i, c: pc}
			pc.onRTT = out[i].sawRTT
			continue
		}
		c, err := httppull.NewClient(httppull.ClientOptions{
			Protocol: o.LaneProtocol, Insecure: o.Insecure, TLSConfig: o.TLSConfig,
			DialContext: o.DialContext, UserAgent: o.UserAgent,
		})
		if err != nil {
			return nil, err
		}
		out[i] = &lane{id: i, c: c}
	}
	return out, nil
}

func wireBytes(ls []*lane) (read, written int64) {
	for _, l := range ls {
		r, w := l.c.WireBytes()
		read += r
		written += w
	}
	return read, written
}

func wireTotal(ls []*lane) int64 {
	r, w := wireBytes(ls)
	return r + w
}

func closeLanes(ls []*lane) {
	for _, l := range ls {
		_ = l.c.Close()
	}
}

// Errors of one exchange.
var (
	errStalled   = errors.New("stalled: no bytes within the stall timeout")
	errWholeBody = errors.New("server ignored Range and sent the whole resource (200)")
)

// permanentError marks failures a retry of the same range cannot fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

func isPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// exchange is one request on a lane whose body is being read with a stall watchdog.
type exchange struct {
	resp   *http.Response
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	stall  time.Duration
}

// open sends method on lane l for u (with rng when not nil) and returns once the
// response headers arrived. The stall watchdog runs from the start: no headers
// within the stall timeout abandon the request as well.
func (l *lane) open(ctx context.Context, method, u string, rng *Range, o *ConnOptions) (*exchange, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	x := &exchange{ctx: ctx, cancel: cancel, stall: o.StallTimeout}
	x.timer = time.AfterFunc(o.StallTimeout, func() { cancel(errStalled) })
	if _, ok := l.c.(*pipeConn); ok {
		// Pipelined: the watchdog starts when this response is next to be read, not
		// while the ones before it on the connection arrive.
		x.timer.Stop()
		ctx = withTurn(ctx, func() { x.timer.Reset(o.StallTimeout) })
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		x.close()
		return nil, permanentError{fmt.Errorf("%s: %w: %w", u, err, media.ErrBadRequest)}
	}
	req.Header.Set("User-Agent", o.UserAgent)
	if rng != nil {
		req.Header.Set("Range", rng.Header())
	}
	resp, err := l.c.Do(req)
	if err != nil {
		err = x.cause(err)
		x.close()
		return nil, fmt.Errorf("%s %s: %w", method, u, err)
	}
	x.resp = resp
	return x, nil
}

// cause replaces a context error by the reason the exchange was cancelled.
func (x *exchange) cause(err error) error {
	if c := context.Cause(x.ctx); errors.Is(c, errStalled) {
		return errStalled
	}
	return err
}

// read fills dst from the body, reporting each arrival to onRead. It returns the
// bytes read; fewer than len(dst) comes with an error.
func (x *exchange) read(dst []byte, onRead func(n int, t time.Time)) (int, error) {
	off, eof := 0, false
	for off < len(dst) && !eof {
		k, err := x.resp.Body.Read(dst[off:])
		if k > 0 {
			off += k
			x.timer.Reset(x.stall)
			onRead(k, time.Now())
		}
		if err == io.EOF {
			eof = true
		} else if err != nil {
			return off, x.cause(err)
		}
	}
	if off < len(dst) {
		return off, io.ErrUnexpectedEOF
	}
	if !eof {
		// See the end of the body, so the connection goes back to the pool instead of
		// being closed as a body abandoned half way.
		var one [1]byte
		if k, err := x.resp.Body.Read(one[:]); k > 0 || (err != nil && err != io.EOF) {
			return off, fmt.Errorf("body longer than the %d bytes expected", len(dst))
		}
	}
	return off, nil
}

// close ends the exchange. A body read to its end leaves the connection reusable;
// anything else closes it.
func (x *exchange) close() {
	x.timer.Stop()
	if x.resp != nil {
		x.resp.Body.Close()
	}
	x.cancel(nil)
}

// contentRange parses "bytes first-last/size".
func contentRange(s string) (r Range, size int64, ok bool) {
	s, ok = strings.CutPrefix(strings.TrimSpace(s), "bytes ")
	if !ok {
		return Range{}, 0, false
	}
	span, total, ok := strings.Cut(s, "/")
	if !ok {
		return Range{}, 0, false
	}
	a, b, ok := strings.Cut(span, "-")
	if !ok {
		return Range{}, 0, false
	}
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || first < 0 || last < first {
		return Range{}, 0, false
	}
	size = -1
	if total != "*" {
		n, err := strconv.ParseInt(total, 10, 64)
		if err != nil {
			return Range{}, 0, false
		}
		size = n
	}
	return Range{Off: first, Len: last - first + 1}, size, true
}

// lanePool keeps idle lanes (persistent connections) for reuse, most recently used
// first so the warmest connections serve the next segment. It makes a new lane when
// none is idle, so concurrent fetches (the player's video and audio at once) each get
// their own connections and never wait for each other.
type lanePool struct {
	opts    ConnOptions
	maxIdle int

	mu             sync.Mutex
	idle           []*lane
	live           map[*lane]bool
	retiredRead    int64 // bytes of lanes closed for being surplus
	retiredWritten int64
	retiredDrained int64
	closed         bool
	made           int // lanes made so far
}

func newLanePool(o ConnOptions, maxIdle int) *lanePool {
	return &lanePool{opts: o, maxIdle: max(maxIdle, 1), live: map[*lane]bool{}}
}

// get returns n lanes.
func (p *lanePool) get(n int) ([]*lane, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*lane, 0, n)
	for len(out) < n && len(p.idle) > 0 {
		l := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		out = append(out, l)
	}
	if len(out) < n {
		more, err := newLanes(n-len(out), p.opts)
		if err != nil {
			p.idle = append(p.idle, out...)
			return nil, err
		}
		for _, l := range more {
			l.id = p.made // unique in the pool, for traces
			p.made++
			p.live[l] = true
		}
		out = append(out, more...)
	}
	return out, nil
}

// put returns lanes, the first one last so it is the next handed out.
func (p *lanePool) put(ls []*lane) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(ls) - 1; i >= 0; i-- {
		l := ls[i]
		if p.closed || len(p.idle) >= p.maxIdle {
			_ = l.c.Close()
			r, w := l.c.WireBytes()
			p.retiredRead += r
			p.retiredWritten += w
			if pc, ok := l.c.(*pipeConn); ok {
				p.retiredDrained += pc.drained.Load()
			}
			delete(p.live, l)
			continue
		}
		p.idle = append(p.idle, l)
	}
}

// drained counts abandoned answers read to their end instead of closing a
// connection (pipelined HTTP/1.1), on every lane made so far.
func (p *lanePool) drained() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.retiredDrained
	for l := range p.live {
		if pc, ok := l.c.(*pipeConn); ok {
			n += pc.drained.Load()
		}
	}
	return n
}

func (p *lanePool) wireBytes() (read, written int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	read, written = p.retiredRead, p.retiredWritten
	for l := range p.live {
		r, w := l.c.WireBytes()
		read += r
		written += w
	}
	return read, written
}

// close closes the idle connections; lanes in use are closed when they come back.
func (p *lanePool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.closed = true
	p.mu.Unlock()
	p.put(idle)
}
