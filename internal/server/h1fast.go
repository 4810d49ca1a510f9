package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// h1Listener is the lean HTTP/1.1 path in front of net/http on the plain-HTTP
// listener. It accepts every connection and serves its plain keep-alive GETs of
// segments, init segments and manifests itself, through the same handler (routes,
// middleware, CORS, metrics) but with a writer that sends head and body together
// and without net/http's per-request machinery. At the first request that is not
// plain (anything with a body, an upgrade, h2c's preface, HEAD, OPTIONS, an LL-HLS
// blocking reload, a malformed head) it hands the connection, with every byte read
// and not answered, to net/http, which gets it from Accept and keeps it to the end.
type h1Listener struct {
	inner   net.Listener
	handler http.Handler
	log     *slog.Logger
	conns   interface {
		Inc()
		Dec()
	} // the open-connections gauge

	idleTimeout, headerTimeout time.Duration
	dates                      dateCache

	handoffs  chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup // connection goroutines

	exchanges sync.Pool    // *h1Exchange
	readers   sync.Pool    // *bufio.Reader of h1HeadMax, lent while a head is read
	served    atomic.Int64 // requests answered on the lean path
	handedOff atomic.Int64 // connections handed to net/http
	detached  atomic.Int64 // connections that left an event loop because their socket filled

	// The event loops (h1event.go), one per processor; none: a goroutine per
	// connection waits in its read loop (h1loop.go).
	loops    []*h1EventLoop
	nextLoop int // the loop the next connection joins (accept loop only)

	mu     sync.Mutex
	closed bool
	active map[*h1Conn]struct{}

	onCork atomic.Pointer[func(fd uintptr, on bool)] // tests: called after each TCP_CORK change (h1cork.go)
}

func newH1Listener(ctx context.Context, inner net.Listener, srv *http.Server, log *slog.Logger, conns interface {
	Inc()
	Dec()
}, eventLoops bool) *h1Listener {
	l := &h1Listener{inner: inner, handler: srv.Handler, log: log, conns: conns,
		idleTimeout: srv.IdleTimeout, headerTimeout: srv.ReadHeaderTimeout,
		handoffs: make(chan net.Conn), done: make(chan struct{}), active: map[*h1Conn]struct{}{}}
	l.exchanges.New = newExchange
	l.readers.New = func() any { return bufio.NewReaderSize(nil, h1HeadMax) }
	if eventLoops {
		for range runtime.GOMAXPROCS(0) {
			lp, err := newEventLoop(l)
			if err != nil {
				log.Warn("http: no event loop for the lean path: a goroutine per connection", "err", err)
				break
			}
			l.loops = append(l.loops, lp)
			l.wg.Add(1)
			go lp.run(nil)
		}
	}
	go l.acceptLoop(ctx)
	return l
}

func (l *h1Listener) acceptLoop(ctx context.Context) {
	var backoff time.Duration
	for {
		nc, err := l.inner.Accept()
		if err != nil {
			if l.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors and the like: wait and retry, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			l.log.Debug("http: accept", "err", err, "retry", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		c := &h1Conn{srv: l, nc: nc, remoteAddr: nc.RemoteAddr().String()}
		if tc, ok := nc.(*net.TCPConn); ok {
			c.tcp = tc
			c.raw, _ = tc.SyscallConn()
			if len(l.loops) > 0 && c.raw.Control(func(fd uintptr) { c.fd = int32(fd) }) == nil {
				c.home = l.loops[l.nextLoop%len(l.loops)]
				l.nextLoop++
			}
		}
		if !l.track(c) {
			nc.Close()
			return
		}
		l.conns.Inc()
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			c.serve(ctx)
		}()
	}
}

// Accept returns the connections handed to net/http.
func (l *h1Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.handoffs:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting and closes the idle lean connections; a lean connection
// answering a request closes after it.
func (l *h1Listener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		var idle []*h1Conn
		for c := range l.active {
			if c.state == connIdle {
				idle = append(idle, c)
			}
		}
		l.mu.Unlock()
		// Closed without the lock: a socket's Close waits until its connection's
		// goroutine lets go of it, and that goroutine may be about to take the lock
		// (a request that came just now, in the read loop).
		for _, c := range idle {
			c.nc.Close()
		}
		close(l.done)
		err = l.inner.Close()
		for _, lp := range l.loops {
			lp.shutdown() // its waiting connections
		}
	})
	return err
}

func (l *h1Listener) Addr() net.Addr { return l.inner.Addr() }

// wait waits for the lean connections to end, or ctx.
func (l *h1Listener) wait(ctx context.Context) {
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		l.mu.Lock()
		active := make([]*h1Conn, 0, len(l.active))
		for c := range l.active {
			active = append(active, c)
		}
		l.mu.Unlock()
		for _, c := range active { // without the lock, as in Close
			c.nc.Close()
		}
	}
}

func (l *h1Listener) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

func (l *h1Listener) track(c *h1Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.active[c] = struct{}{}
	return true
}

// setActive marks c as answering a request, false once the listener is closed.
func (l *h1Listener) setActive(c *h1Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c.state = connActive
	return !l.closed
}

// setIdle marks c as waiting for its next request, false once the listener is
// closed (then the connection ends; its goroutine closes it outside the read loop,
// since a socket's Close waits for the read loop to let go of it).
func (l *h1Listener) setIdle(c *h1Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c.state = connIdle
	return !l.closed
}

func (l *h1Listener) untrack(c *h1Conn) {
	l.mu.Lock()
	delete(l.active, c)
	l.mu.Unlock()
	l.conns.Dec()
}

func (l *h1Listener) closeConn(c *h1Conn) {
	c.nc.Close()
	l.untrack(c)
}

// handOff passes rc to net/http (whose ConnState counts it from here on).
func (l *h1Listener) handOff(c *h1Conn, rc net.Conn) {
	l.untrack(c)
	l.handedOff.Add(1)
	select {
	case l.handoffs <- rc:
	case <-l.done:
		rc.Close()
	}
}

// replayConn is a connection whose first reads return bytes already read from it.
type replayConn struct {
	net.Conn
	prefix []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// ReadFrom keeps sendfile for net/http's responses on a handed-off connection.
func (c *replayConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(c.Conn, r)
}

// CloseWrite lets net/http end a connection gracefully, as on a bare TCP socket.
func (c *replayConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// NetConn is the socket beneath, for TCP statistics (as tls.Conn offers it).
func (c *replayConn) NetConn() net.Conn { return c.Conn }

// dateCache formats the Date header once a second; append is given the time (an
// event loop's batch time, which may be a few milliseconds old, as nginx's cached
// time is).
type dateCache struct {
	v atomic.Pointer[dateValue]
}

type dateValue struct {
	sec int64
	b   []byte
}

func (d *dateCache) append(b []byte, now time.Time) []byte {
	v := d.v.Load()
	if v == nil || v.sec != now.Unix() {
		v = &dateValue{sec: now.Unix(), b: now.UTC().AppendFormat(nil, http.TimeFormat)}
		d.v.Store(v)
	}
	return append(b, v.b...)
}
