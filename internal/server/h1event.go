package server

import (
	"errors"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The event loop: nginx's model for the lean path's waiting connections. A keep-alive
// connection waiting for its next request has no goroutine: its socket is in one
// loop's epoll set, and the loop's one goroutine reads and answers whatever request
// arrives on any of its connections. Every request is then read and answered on the
// same few stacks, which stay in the processor's caches, where a goroutine per
// connection answers each request on that connection's own stack (a thousand 8 KiB
// stacks, each cold when its turn comes), and a request costs no goroutine wake-up.
//
// The loop must never wait for one socket. A connection whose socket is full while
// its answer is written (a slow reader), or whose answer may stream (a live segment),
// or that changes hands (net/http, an upgrade), leaves the loop: the goroutine that
// was the loop keeps that connection, and a new goroutine takes over the loop with the
// rest of the events. A connection back to waiting for a request joins its loop again.

// h1EventLoop is one epoll set of waiting lean connections and its goroutine.
type h1EventLoop struct {
	l    *h1Listener
	epfd int
	file *os.File        // the epoll set as a pollable file: the loop waits in Go's poller
	rc   syscall.RawConn // file's, for non-blocking epoll_wait inside Go's wait
	wake int             // an eventfd in the set: Close writes it so the loop looks

	// Owned by the goroutine that runs the loop at the moment: the batch of events
	// being handled and the next one's index (given to a new goroutine on detach).
	batch []unix.EpollEvent
	next  int
	// now is the time read when the batch came (as nginx's cached time, updated
	// once per loop iteration): the requests answered in it share one clock read
	// for their idle deadlines and Date headers.
	now time.Time
	// wait's state and its RawConn callback, made once: a closure made per wait
	// escapes, two allocations per wait.
	waitEvs []unix.EpollEvent
	waitN   int
	waitErr error
	waitFn  func(fd uintptr) bool

	mu     sync.Mutex
	conns  map[int32]*h1Conn // the connections in the set, by descriptor
	closed bool
}

// newEventLoop makes an epoll set for l; an error leaves l on goroutines per connection.
func newEventLoop(l *h1Listener) (*h1EventLoop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wake)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wake, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wake)
		return nil, err
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		unix.Close(wake)
		return nil, err
	}
	lp := &h1EventLoop{l: l, epfd: epfd, wake: wake, conns: map[int32]*h1Conn{}}
	lp.file = os.NewFile(uintptr(epfd), "h1 event loop") // non-blocking: in Go's poller
	lp.rc, err = lp.file.SyscallConn()
	if err == nil {
		err = lp.file.SetReadDeadline(time.Time{}) // fails if the poller did not take it
	}
	if err != nil {
		lp.file.Close()
		unix.Close(wake)
		return nil, err
	}
	return lp, nil
}

// add puts c, waiting for its next request, into the set; false when the loop has
// closed (then c ends). Its caller owns c; from here the loop does.
func (lp *h1EventLoop) add(c *h1Conn) bool {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.closed {
		return false
	}
	var err error
	// Inside Control: the descriptor cannot be closed (and its number reused) meanwhile.
	// Edge-triggered: an event for every arrival; one for bytes already there on adding.
	cerr := c.raw.Control(func(fd uintptr) {
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(fd)}
		err = unix.EpollCtl(lp.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if cerr != nil || err != nil {
		return false
	}
	lp.conns[c.fd] = c
	return true
}

// remove takes c out of the set (the loop's goroutine only: it owns c there).
func (lp *h1EventLoop) remove(c *h1Conn) {
	lp.mu.Lock()
	delete(lp.conns, c.fd)
	lp.mu.Unlock()
	_ = c.raw.Control(func(fd uintptr) {
		_ = unix.EpollCtl(lp.epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
	})
}

// waiting is how many connections are in the set.
func (lp *h1EventLoop) waiting() int {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return len(lp.conns)
}

// shutdown wakes the loop to close its waiting connections and end.
func (lp *h1EventLoop) shutdown() {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if !lp.closed {
		var one = [8]byte{1}
		_, _ = unix.Write(lp.wake, one[:])
	}
}

// run is the loop: handle the events of pending, then wait for more, until the
// listener closes or this goroutine is given to one connection (detach).
func (lp *h1EventLoop) run(pending []unix.EpollEvent) {
	defer lp.l.wg.Done()
	evs := make([]unix.EpollEvent, 128)
	every := lp.sweepEvery()
	nextSweep := time.Now().Add(every)
	if every > 0 {
		_ = lp.file.SetReadDeadline(nextSweep)
	}
	lp.now = time.Now()
	for {
		lp.batch = pending
		for lp.next = 0; lp.next < len(lp.batch); {
			ev := lp.batch[lp.next]
			lp.next++
			if !lp.handle(ev) {
				return // this goroutine now answers one connection; the loop goes on in another
			}
		}
		lp.batch = nil
		if lp.l.isClosed() {
			lp.close()
			return
		}
		n, err := lp.wait(evs)
		lp.now = time.Now()
		if every > 0 && (errors.Is(err, os.ErrDeadlineExceeded) || !lp.now.Before(nextSweep)) {
			lp.sweep()
			nextSweep = time.Now().Add(every)
			_ = lp.file.SetReadDeadline(nextSweep)
			err = nil
		}
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			lp.l.log.Error("http: event loop", "err", err)
			lp.close()
			return
		}
		pending = evs[:n]
	}
}

// wait returns the events that are ready, waiting in Go's poller (so on no thread)
// while there are none.
func (lp *h1EventLoop) wait(evs []unix.EpollEvent) (int, error) {
	if lp.waitFn == nil {
		lp.waitFn = lp.waitStep
	}
	lp.waitEvs, lp.waitN, lp.waitErr = evs, 0, nil
	err := lp.rc.Read(lp.waitFn)
	lp.waitEvs = nil
	if err != nil {
		return 0, err
	}
	return lp.waitN, lp.waitErr
}

// waitStep is wait's epoll_pwait: true when events came or it failed, false to
// wait in Go's poller for the set to be readable.
func (lp *h1EventLoop) waitStep(fd uintptr) bool {
	evs := lp.waitEvs
	// Raw, as the sockets' calls (h1conn.go): a call the scheduler is told of may
	// lose the processor to another thread, and then the runtime's monitor,
	// having taken one back, polls every 20 µs on the servers' core.
	k, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, fd, uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 0, 0, 0)
	switch {
	case errno == unix.EINTR:
		return true // looked again at once by the caller
	case errno != 0:
		lp.waitErr = errno
		return true
	}
	lp.waitN = int(k)
	return lp.waitN > 0
}

// handle answers what one event brought; false when this goroutine left the loop.
func (lp *h1EventLoop) handle(ev unix.EpollEvent) bool {
	if ev.Fd == int32(lp.wake) {
		var b [8]byte
		_, _ = unix.Read(lp.wake, b[:])
		return true // the listener closed: run sees it after the batch
	}
	lp.mu.Lock()
	c := lp.conns[ev.Fd]
	lp.mu.Unlock()
	if c == nil {
		return true // the descriptor left the set after the event was queued
	}
	c.loop = lp
	// The peer closed its side: the bytes before its end may come in a short read,
	// and no event follows for the end itself, so the reads go on until it.
	c.peerDone = ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0
	next := c.pass(true)
	c.peerDone = false
	if c.loop == nil {
		// Its socket filled while it was answered: it left the set, a new goroutine
		// runs the loop, and this one stays with c until c waits again.
		c.drive(next)
		return false
	}
	c.loop = nil
	if next == stepWait {
		return true
	}
	lp.remove(c)
	if next == stepClose {
		c.end()
		return true
	}
	lp.l.wg.Add(1)
	go func() {
		defer lp.l.wg.Done()
		c.drive(next)
	}()
	return true
}

// detach is called, on the loop's goroutine, by a connection that must wait for its
// socket: c leaves the set and a new goroutine takes over the loop with the events
// not yet handled; the calling goroutine then belongs to c.
func (lp *h1EventLoop) detach(c *h1Conn) {
	lp.l.detached.Add(1)
	lp.remove(c)
	c.loop = nil
	rest := slices.Clone(lp.batch[lp.next:])
	lp.batch, lp.next = nil, 0
	lp.l.wg.Add(1)
	go lp.run(rest)
}

// sweepEvery is how often the loop looks for connections past their read deadline
// (idle or header timeout): a quarter of the shorter timeout, within 10 ms to 1 s.
func (lp *h1EventLoop) sweepEvery() time.Duration {
	d := time.Duration(0)
	for _, t := range []time.Duration{lp.l.idleTimeout, lp.l.headerTimeout} {
		if t > 0 && (d == 0 || t < d) {
			d = t
		}
	}
	if d == 0 {
		return 0
	}
	return min(max(d/4, 10*time.Millisecond), time.Second)
}

// sweep ends the waiting connections whose read deadline has passed (the timeouts a
// goroutine waiting in Read would have seen).
func (lp *h1EventLoop) sweep() {
	now := time.Now()
	var late []*h1Conn
	lp.mu.Lock()
	for _, c := range lp.conns {
		if !c.rdl.IsZero() && !now.Before(c.rdl) {
			late = append(late, c)
		}
	}
	lp.mu.Unlock()
	for _, c := range late {
		lp.remove(c)
		c.end()
	}
}

// close ends every waiting connection and the loop's descriptors.
func (lp *h1EventLoop) close() {
	lp.mu.Lock()
	lp.closed = true
	conns := make([]*h1Conn, 0, len(lp.conns))
	for _, c := range lp.conns {
		conns = append(conns, c)
	}
	lp.mu.Unlock()
	for _, c := range conns {
		lp.remove(c)
		c.end()
	}
	lp.mu.Lock()
	defer lp.mu.Unlock()
	lp.file.Close()
	unix.Close(lp.wake)
}
