package server

import (
	"errors"
	"io"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The read loop: a keep-alive connection's requests are read and answered inside one
// RawConn.Read callback, which returns false to wait for the socket and is called
// again when it is readable. Going through Read once per request, as net.Conn's reads
// do, costs a system call per request that finds nothing: each Read first clears the
// poller's note that bytes came and so must try a read before it may wait, and the
// try after an answer is almost always too early (the client has not read the answer
// yet). Inside one callback the note is kept: after an answer that left the socket
// empty, the loop waits at once, and the poller wakes it when the next request comes
// (edge-triggered: every arrival is an event). This is nginx's pattern of one read
// per readiness event. (A TCP read also ends short at urgent data, which no HTTP
// client sends; one that did would stall only its own connection, until its header
// or idle timeout closes it.)
//
// The callback holds the socket's read side, so nothing else may read it meanwhile:
// requests whose answers may stream (live segments, whose client is watched by a
// second reader) are answered outside the loop, and hand-offs to net/http leave it.

// errWouldBlock says the socket has no bytes now: the read loop waits and comes back.
var errWouldBlock = errors.New("no bytes yet")

// readLoop runs advance inside the socket's read callback until the connection must
// close, changes hands or answers a request outside the loop.
func (c *h1Conn) readLoop() connStep {
	if c.loopFn == nil {
		c.loopFn = c.loopStep // made once: a method value escapes
	}
	c.loopEnd, c.loopCalled = stepClose, false
	err := c.raw.Read(c.loopFn)
	c.inLoop = false
	if err != nil {
		return stepClose // a deadline (idle or header timeout) or the socket closed
	}
	return c.loopEnd
}

// pass runs advance once inside the socket's read callback, for the event loop
// (h1event.go): it returns stepWait rather than waiting. woke says an event for the
// socket came, so the idle deadline set before the last wait stands.
func (c *h1Conn) pass(woke bool) connStep {
	if c.loopFn == nil {
		c.loopFn = c.loopStep
	}
	c.loopEnd, c.loopCalled, c.evented = stepClose, woke, true
	err := c.raw.Read(c.loopFn)
	c.inLoop, c.evented = false, false
	if err != nil {
		return stepClose // a deadline (idle or header timeout) or the socket closed
	}
	return c.loopEnd
}

// loopStep is the callback: called once at the start and again whenever the socket
// has become readable since the last wait.
func (c *h1Conn) loopStep(fd uintptr) bool {
	c.loopFd, c.inLoop, c.drained = fd, true, false // woken: there may be bytes
	c.woke, c.loopCalled = c.loopCalled, true       // the first call is not a wake-up
	next := c.advance()
	if next == stepWait {
		c.releaseReader() // nothing read: no buffer held while waiting
		if c.evented {
			c.loopEnd = stepWait
			return true // the event loop waits, not this call
		}
		return false
	}
	c.inLoop = false
	c.loopEnd = next
	return true
}

// readNow reads what the socket holds, without waiting: errWouldBlock when it holds
// nothing, or when the last read left it empty (bytes that came since then woke the
// loop, which clears drained).
func (c *h1Conn) readNow(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if c.drained {
		return 0, errWouldBlock
	}
	for {
		// recvfrom, as nginx reads: a socket's read(2) goes through the VFS layer first.
		n, _, errno := unix.RawSyscall6(unix.SYS_RECVFROM, c.loopFd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), 0, 0, 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN:
			c.drained = true
			return 0, errWouldBlock
		case errno != 0:
			return 0, errno
		case n == 0:
			return 0, io.EOF
		}
		// A short read emptied the socket; a full one may have left bytes behind.
		c.drained = int(n) < len(p) && !c.peerDone
		return int(n), nil
	}
}

// mayStream reports requests whose answer may stream while it is made (a live
// segment still being produced), so they are answered outside the read loop.
func mayStream(path string) bool { return strings.HasPrefix(path, "/live/") }

// releaseReader gives the head reader back to the listener's pool when it holds no
// bytes, as nginx frees an idle keep-alive connection's buffer: a thousand idle
// connections hold no 4 KiB buffers, and the next request read anywhere gets the
// one used last, still in the processor's cache.
func (c *h1Conn) releaseReader() {
	if c.br != nil && c.br.Buffered() == 0 {
		c.br.Reset(nil)
		c.srv.readers.Put(c.br)
		c.br = nil
	}
}
