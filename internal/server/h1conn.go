package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/streambed/streambed/internal/layout"
)

// h1Conn is one client connection on the lean path: it reads plain GET heads and
// serves them through the origin's handler until one is not plain, which it hands,
// with every byte read so far, to net/http.
type h1Conn struct {
	srv  *h1Listener
	nc   net.Conn
	tcp  *net.TCPConn    // nil when not TCP (then no sendfile or MSG_MORE)
	raw  syscall.RawConn // for send(MSG_MORE)
	br   *bufio.Reader   // the head reader, nil while the read loop waits with nothing read (h1loop.go)
	head []byte          // the response head being built, reused

	base       *http.Request // carries the connection's context into each request
	cancel     context.CancelFunc
	remoteAddr string
	lastHost   string // the Host of the last request, shared by the next with the same
	state      int32  // connIdle or connActive, under srv.mu

	// While a response streams (a live segment followed as it is made), a watcher
	// reads the connection so the request's context ends when the client goes, as
	// net/http's background read does; bytes it reads (a pipelined request) wait in
	// stash for the next head.
	watchDone chan struct{}
	stash     []byte

	idleAt    time.Time // when the idle deadline was last set (zero: not in force)
	headTimed bool      // the header deadline is set for the head being read

	// The read loop (h1loop.go): advance runs inside RawConn.Read's callback.
	inLoop  bool     // in the callback: Read does not wait but says errWouldBlock
	outside bool     // answering one request outside the loop
	drained bool     // the last read left the socket empty: wait before reading
	loopFd  uintptr  // the socket, while in the loop
	loopEnd connStep // why the callback left the loop
	// woke: the callback was called again because the socket became readable, so
	// the idle deadline set before the wait stands (loopCalled: called once already).
	woke, loopCalled bool
	loopFn           func(fd uintptr) bool

	// The event loop (h1event.go): with one, a connection waiting for a request has
	// no goroutine but sits in home's epoll set, by its descriptor fd.
	home     *h1EventLoop
	fd       int32
	loop     *h1EventLoop // set while home's goroutine answers on this connection: a write must not wait
	evented  bool         // the read loop's callback answers one pass and never waits
	rdl      time.Time    // the read deadline in force (the loop's sweep enforces it)
	noWait   bool         // a raw write returns at a full socket, setting full
	peerDone bool         // the event said the peer closed: a short read does not mean drained
	full     bool
	corked   bool // TCP_CORK is set while a head and its file are queued (h1cork.go)

	// Raw socket writes: their state and the callbacks RawConn.Write runs, made
	// once per connection.
	sf                     sendfileCall
	more                   []byte
	moreErr                error
	sendMoreFn, headFileFn func(fd uintptr) bool
	wv                     [][]byte // what writevStep has still to send
	wvErr                  error
	writevFn               func(fd uintptr) bool
}

// h1Exchange is the state of one request and its response. Exchanges are pooled
// across connections rather than kept per connection: the pool hands back the one
// used last, still in the processor's cache, where a thousand connections' own
// copies would each be cold when their turn comes.
type h1Exchange struct {
	w      h1Writer
	req    http.Request
	url    url.URL
	reqHdr http.Header // handlers do not keep a request's header
	resHdr http.Header
	head   []byte // the response head being built
}

func newExchange() any {
	return &h1Exchange{reqHdr: make(http.Header, 8), resHdr: make(http.Header, 8), head: make([]byte, 0, 512)}
}

const (
	connIdle = iota
	connActive
)

// h1HeadMax is the longest head the lean path reads; a longer one goes to net/http,
// which allows up to http.DefaultMaxHeaderBytes.
const h1HeadMax = 4096

var errHeadTooLong = errors.New("request head longer than the lean path reads")

func (c *h1Conn) serve(ctx context.Context) {
	ctx = context.WithValue(ctx, http.LocalAddrContextKey, c.nc.LocalAddr())
	ctx = connContext(ctx, c.nc) // the pacing guard's state (pacingguard.go)
	ctx, c.cancel = context.WithCancel(ctx)
	c.base = (&http.Request{}).WithContext(ctx)
	c.drive(stepLoop)
}

// drive runs the connection on this goroutine from step next until it ends, changes
// hands or, with an event loop, waits for a request in the loop's set.
func (c *h1Conn) drive(next connStep) {
	for {
		switch next {
		case stepClose:
			c.end() // the client went away, was too slow, or shutdown
			return
		case stepHandOff:
			c.handOff()
			c.cancel()
			return
		case stepTaken:
			c.cancel()
			return // its head reader went with it (Hijack) or it is closed
		case stepOutside:
			c.outside = true
			next = c.advance()
			continue
		}
		// stepLoop or stepWait: wait for the next request.
		c.outside = false
		switch {
		case c.raw == nil:
			next = c.advance() // not TCP: reads wait
		case c.home == nil:
			next = c.readLoop()
		default:
			// One pass first: bytes may be buffered already (a pipelined request
			// behind one answered outside the loop), and no event would come for them.
			if next = c.pass(false); next == stepWait {
				if c.home.add(c) {
					return
				}
				if c.srv.isClosed() {
					next = stepClose // shutting down
				} else {
					c.home = nil // the loop failed (logged): wait on this goroutine
				}
			}
		}
	}
}

// end closes the connection and lets go of what it holds.
func (c *h1Conn) end() {
	c.srv.closeConn(c)
	c.releaseReader()
	c.cancel()
}

// setReadDeadline sets the socket's read deadline and notes it for the event loop,
// whose sweep enforces it on a connection that waits with no goroutine.
func (c *h1Conn) setReadDeadline(t time.Time) {
	c.rdl = t
	_ = c.nc.SetReadDeadline(t)
}

// connStep is what the connection does once advance stops.
type connStep int

const (
	stepWait    connStep = iota // no whole head is buffered: wait for the socket
	stepClose                   // end the connection
	stepHandOff                 // give the connection to net/http
	stepOutside                 // answer the next request outside the read loop (it may stream)
	stepLoop                    // back into the read loop after an answer outside it
	stepTaken                   // the connection is no longer the lean path's (a hijacked upgrade, or refused and closed)
)

// advance answers the requests whose heads arrive, until it must wait for bytes (in
// the read loop only; elsewhere reads wait) or the connection ends or changes hands.
func (c *h1Conn) advance() connStep {
	if c.br == nil {
		c.br = c.srv.readers.Get().(*bufio.Reader)
		c.br.Reset(c)
	}
	woke := c.woke // this call follows a wait: the first check for bytes needs no new deadline
	c.woke = false
	for {
		if c.br.Buffered() == 0 {
			if !woke {
				c.idleDeadline() // moved before each wait, not again on waking from it
			}
			if _, err := c.br.Peek(1); err != nil {
				if err == errWouldBlock {
					return stepWait
				}
				return stepClose
			}
		}
		woke = false // from here on, the check for bytes is before a wait
		if !c.srv.setActive(c) {
			return stepClose // shutting down: no new request on this connection
		}
		head, err := c.readHead()
		if err == errWouldBlock {
			return stepWait
		}
		if err != nil && !errors.Is(err, errHeadTooLong) {
			return stepClose // the client went away or was too slow (slowloris)
		}
		c.headTimed = false
		x := c.srv.exchanges.Get().(*h1Exchange)
		clear(x.reqHdr)
		h := h1Head{header: x.reqHdr, prevHost: c.lastHost}
		if err != nil || parseHead(head, &h) != nil || !h.leanRoute() {
			c.srv.exchanges.Put(x)
			if err == nil && isUpgradeHead(head) { // wspush2: WebSocket upgrades stay on the lean path (h1upgrade.go)
				if c.inLoop {
					return stepOutside // the session hijacks the socket: not inside the read callback
				}
				if c.serveUpgrade(head) {
					return stepTaken
				}
			}
			return stepHandOff
		}
		if c.inLoop && mayStream(h.path) {
			c.srv.exchanges.Put(x)
			return stepOutside // parsed again there: only live requests pay for it
		}
		c.lastHost = h.host
		_, _ = c.br.Discard(len(head))
		keep := c.serveRequest(&h, x)
		c.srv.exchanges.Put(x)
		if !keep {
			return stepClose
		}
		if !c.srv.setIdle(c) {
			return stepClose // shutting down
		}
		if c.outside {
			return stepLoop
		}
	}
}

// deadline is d from now, or none for 0 (as net/http's zero timeouts).
func deadline(d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return time.Now().Add(d)
}

// Read feeds the head reader: stashed bytes first, then the socket, without waiting
// inside the read loop (h1loop.go), else as net.Conn reads (a connection that is not
// TCP; none while a request is answered outside the loop, whose head is buffered).
func (c *h1Conn) Read(p []byte) (int, error) {
	if len(c.stash) > 0 {
		n := copy(p, c.stash)
		c.stash = c.stash[n:]
		return n, nil
	}
	if c.inLoop {
		return c.readNow(p)
	}
	return c.nc.Read(p)
}

// startWatch watches for the client going away while a response streams.
func (c *h1Conn) startWatch() {
	if c.watchDone != nil || c.br.Buffered() > 0 {
		return // watching, or the next request is here already (the client is not gone)
	}
	if c.inLoop {
		// The read loop holds the socket's read side, so a watcher's read would
		// wait for it forever. Requests that stream are answered outside the loop
		// (mayStream); one that streams anyway goes unwatched: its writes fail
		// when the client has gone.
		return
	}
	c.setReadDeadline(time.Time{})
	c.idleAt = time.Time{}
	done := make(chan struct{})
	c.watchDone = done
	go func() {
		defer close(done)
		b := make([]byte, 1024)
		n, err := c.nc.Read(b)
		c.stash = append(c.stash, b[:n]...) // read by serve only after done
		var ne net.Error
		if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			c.cancel() // end of stream or reset: nobody to answer
		}
	}()
}

// stopWatch ends the watcher's read and waits for it.
func (c *h1Conn) stopWatch() {
	if c.watchDone == nil {
		return
	}
	_ = c.nc.SetReadDeadline(time.Unix(1, 0)) // in the past: the read returns at once
	<-c.watchDone
	c.watchDone = nil
	// No deadline until the next wait sets one (with no idle timeout, none at all).
	c.setReadDeadline(time.Time{})
	c.idleAt = time.Time{}
}

// idleDeadline bounds the wait for the next request by the idle timeout. Moving a
// deadline costs a timer update, so it moves at most once a second: the idle
// timeout is kept to within a second.
func (c *h1Conn) idleDeadline() {
	if c.srv.idleTimeout <= 0 {
		return
	}
	now := c.clock()
	if now.Sub(c.idleAt) < time.Second {
		return
	}
	c.idleAt = now
	c.setReadDeadline(now.Add(c.srv.idleTimeout))
}

// clock is the time now: on an event loop's goroutine, the time its batch of events
// came (one clock read shared by the batch's requests), elsewhere time.Now.
func (c *h1Conn) clock() time.Time {
	if c.loop != nil {
		return c.loop.now
	}
	return time.Now()
}

// readHead returns the buffered bytes of the next request head, through its empty
// line, without consuming them (a hand-off replays them). A head that came whole
// with its first bytes needs no header deadline; one that did not gets the header
// timeout from here (a slowloris client is cut off by it).
func (c *h1Conn) readHead() ([]byte, error) {
	from := 0
	for {
		buf, _ := c.br.Peek(c.br.Buffered())
		if end := headEnd(buf, from); end > 0 {
			return buf[:end], nil
		}
		if !c.headTimed {
			// Once per head, also when the read loop comes back for its rest: a
			// client that trickles bytes does not move the deadline.
			c.setReadDeadline(deadline(c.srv.headerTimeout))
			c.idleAt, c.headTimed = time.Time{}, true // the idle deadline is no longer in force
		}
		from = max(len(buf)-3, 0)
		if len(buf) >= h1HeadMax {
			return nil, errHeadTooLong
		}
		if _, err := c.br.Peek(len(buf) + 1); err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return nil, errHeadTooLong
			}
			return nil, err // errWouldBlock in the read loop: come back with more
		}
	}
}

// headEnd is the length of the head in b (through "\n\r\n" or "\n\n"), 0 if b has
// no complete head; the search starts at from.
func headEnd(b []byte, from int) int {
	for i := from; i < len(b); {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return 0
		}
		i += j + 1
		if i < len(b) && b[i] == '\n' {
			return i + 1
		}
		if i+1 < len(b) && b[i] == '\r' && b[i+1] == '\n' {
			return i + 2
		}
	}
	return 0
}

// leanRoute parses the head's path (into h.res, carried to the handlers) and
// reports the requests the lean path answers: segments, init segments and
// manifests, all answered at once (LL-HLS playlist reloads that block and parts,
// which may wait, stay with net/http, whose request context ends when the client
// goes away).
func (h *h1Head) leanRoute() bool {
	h.res = layout.Parse(h.path)
	switch h.res.Kind {
	case layout.KindSegment, layout.KindInit, layout.KindManifest:
		return true
	case layout.KindPlaylist:
		return h.query == ""
	}
	return false
}

// serveRequest answers one request; false means the connection ends.
func (c *h1Conn) serveRequest(h *h1Head, x *h1Exchange) (keep bool) {
	// The exchange's Request and URL, reset: the routes the lean path serves answer
	// within the handler call and keep neither.
	r, u := &x.req, &x.url
	*r = *c.base
	*u = url.URL{Path: h.path, RawQuery: h.query}
	r.Method = h.method
	r.URL = u
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	r.Header = h.header
	r.Body = http.NoBody
	r.Host = h.host
	r.RemoteAddr = c.remoteAddr
	r.RequestURI = h.target
	r.Close = h.close
	clear(x.resHdr)
	c.head = x.head[:0]
	defer func() { x.head, c.head = c.head[:0], nil }()
	w := &x.w
	*w = h1Writer{c: c, header: x.resHdr, closeAfter: h.close, pending: w.pending[:0],
		parsed: layout.Parsed{Path: h.path, Res: h.res}}
	defer func() {
		c.stopWatch()
		if p := recover(); p != nil {
			// As net/http: ErrAbortHandler ends the connection quietly (a live
			// segment that could not be finished), any other panic is logged.
			if p != http.ErrAbortHandler {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				c.srv.log.Error("http: panic serving", "remote", c.remoteAddr, "panic", fmt.Sprint(p), "stack", string(buf))
			}
			keep = false
		}
	}()
	c.srv.served.Add(1)
	c.srv.handler.ServeHTTP(w, r)
	w.finish()
	return !w.closeAfter
}

// handOff gives the connection to net/http with the bytes read and not answered.
func (c *h1Conn) handOff() {
	c.setReadDeadline(time.Time{})
	prefix := bytes.Clone(func() []byte { b, _ := c.br.Peek(c.br.Buffered()); return b }())
	c.srv.handOff(c, &replayConn{Conn: c.nc, prefix: prefix})
}

func (c *h1Conn) closing() bool { return c.srv.isClosed() }

func (c *h1Conn) write(b []byte) error {
	return c.writeAll([][]byte{b})
}

// writev sends the head and a body in one system call.
func (c *h1Conn) writev(head, body []byte) error {
	if len(body) == 0 {
		return c.write(head)
	}
	return c.writeAll([][]byte{head, body})
}

// writeChunk sends p as one chunk of a chunked body.
func (c *h1Conn) writeChunk(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	size := strconv.AppendInt(make([]byte, 0, 20), int64(len(p)), 16)
	size = append(size, "\r\n"...)
	return c.writeAll([][]byte{size, p, []byte("\r\n")})
}

// writeAll sends bufs in as few writev calls as the socket takes.
func (c *h1Conn) writeAll(bufs [][]byte) error {
	if c.raw == nil {
		nb := net.Buffers(bufs)
		_, err := nb.WriteTo(c.nc)
		return err
	}
	c.wv, c.wvErr = bufs, nil
	if c.writevFn == nil {
		c.writevFn = c.writevStep
	}
	err := c.rawWrite(c.writevFn)
	c.wv = nil
	if err != nil {
		return err
	}
	return c.wvErr
}

// writevStep sends c.wv until done or the socket is full (false: wait and call again).
func (c *h1Conn) writevStep(fd uintptr) bool {
	var iov [8]unix.Iovec
	for len(c.wv) > 0 {
		n := 0
		for _, b := range c.wv {
			if n == len(iov) {
				break
			}
			if len(b) > 0 {
				iov[n].Base = &b[0]
				iov[n].SetLen(len(b))
				n++
			}
		}
		if n == 0 {
			c.wv = nil
			break
		}
		k, _, errno := unix.RawSyscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(n))
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN:
			return c.socketFull()
		case errno != 0:
			c.wvErr = errno
			return true
		}
		c.wv = consumed(c.wv, int(k))
	}
	return true
}

// consumed is bufs without their first n bytes.
func consumed(bufs [][]byte, n int) [][]byte {
	for len(bufs) > 0 && n >= len(bufs[0]) {
		n -= len(bufs[0])
		bufs = bufs[1:]
	}
	if len(bufs) > 0 {
		bufs[0] = bufs[0][n:]
	}
	return bufs
}

// socketFull is a raw write's answer to EAGAIN: wait (false), or, for the event
// loop, which must not wait, return and say so.
func (c *h1Conn) socketFull() bool {
	if c.noWait {
		c.full = true
		return true
	}
	return false
}

// rawWrite runs a raw write step in RawConn.Write. On the event loop's goroutine a
// full socket first takes the connection out of the loop (the loop goes on in a new
// goroutine, since waiting here would stall every other connection), then waits.
func (c *h1Conn) rawWrite(fn func(fd uintptr) bool) error {
	if c.loop == nil {
		return c.raw.Write(fn)
	}
	c.noWait = true
	err := c.raw.Write(fn)
	c.noWait = false
	if err != nil || !c.full {
		return err
	}
	c.full = false
	c.loop.detach(c)
	return c.raw.Write(fn)
}

// mayWait is called before a write that waits inside Go (no raw step): on the event
// loop's goroutine, the connection leaves the loop first.
func (c *h1Conn) mayWait() {
	if c.loop != nil {
		c.loop.detach(c)
	}
}

// sendfileCall is the state of one sendfile between wake-ups.
type sendfileCall struct {
	src       int
	off, sent int64
	n         int64
	err       error
}

// sendfileStep sends until done or the socket is full (false: wait and call again).
func (c *h1Conn) sendfileStep(fd uintptr) bool {
	sf := &c.sf
	for sf.sent < sf.n {
		k, _, errno := unix.RawSyscall6(unix.SYS_SENDFILE, fd, uintptr(sf.src), uintptr(unsafe.Pointer(&sf.off)), uintptr(min(sf.n-sf.sent, 1<<30)), 0, 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN:
			return c.socketFull()
		case errno != 0:
			sf.err = errno
			return true
		case k == 0:
			return true // the file ended early
		}
		sf.sent += int64(k)
	}
	return true
}

// sendHeadAndFile sends head and then n bytes of f from offset 0 with sendfile(2),
// corked so that they share packets (h1cork.go), in one RawConn.Write: a segment GET takes the socket's write lock and
// poller state once, not twice. The calls are made without telling the scheduler:
// a non-blocking socket returns at once (EAGAIN when full), and a scheduler told of
// a system call longer than 20 µs hands the processor to another thread, which is a
// context switch per segment. headSent says whether the whole head went out (the
// response is committed).
func (c *h1Conn) sendHeadAndFile(head []byte, f *os.File, n int64) (headSent bool, sent int64, err error) {
	c.more, c.moreErr = head, nil
	c.sf = sendfileCall{src: int(f.Fd()), n: n}
	if c.headFileFn == nil {
		c.headFileFn = c.headFileStep // made once: a method value escapes
	}
	err = c.rawWrite(c.headFileFn)
	runtime.KeepAlive(f)
	if c.corked { // the wait for room failed (a deadline, or closed): uncork anyway
		_ = c.raw.Control(func(fd uintptr) { c.setCork(fd, false) })
	}
	headSent = len(c.more) == 0 && c.moreErr == nil
	c.more = nil
	if err == nil {
		err = c.moreErr
	}
	if err == nil {
		err = c.sf.err
	}
	return headSent, c.sf.sent, err
}

// headFileStep is sendMoreStep and then sendfileStep, resumed where it stopped, with
// the socket corked from before the head until the last byte is queued (h1cork.go).
func (c *h1Conn) headFileStep(fd uintptr) bool {
	if !c.corked {
		c.setCork(fd, true)
	}
	done := c.headThenFile(fd)
	if done && !c.full {
		c.setCork(fd, false) // sent or failed: the tail goes out now
	}
	return done
}

func (c *h1Conn) headThenFile(fd uintptr) bool {
	if len(c.more) > 0 {
		if !c.sendMoreStep(fd) {
			return false // wait for room, then go on with the head
		}
		if c.moreErr != nil || c.full {
			return true // failed, or full on the event loop (rawWrite calls again)
		}
	}
	return c.sendfileStep(fd)
}

// sendMore sends b with MSG_MORE: the kernel holds it to go out with the sendfile
// that follows, so head and body share packets as with nginx's tcp_nopush.
func (c *h1Conn) sendMore(b []byte) error {
	c.more, c.moreErr = b, nil
	if c.sendMoreFn == nil {
		c.sendMoreFn = c.sendMoreStep
	}
	err := c.rawWrite(c.sendMoreFn)
	c.more = nil
	if err != nil {
		return err
	}
	return c.moreErr
}

func (c *h1Conn) sendMoreStep(fd uintptr) bool {
	for len(c.more) > 0 {
		// Raw, as sendfile: a non-blocking send returns at once.
		n, _, errno := unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&c.more[0])), uintptr(len(c.more)), unix.MSG_MORE|unix.MSG_NOSIGNAL, 0, 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN:
			return c.socketFull() // wait until the socket can take more
		case errno != 0:
			c.moreErr = errno
			return true
		}
		c.more = c.more[n:]
	}
	return true
}
