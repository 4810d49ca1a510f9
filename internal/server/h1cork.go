package server

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// A segment GET is a response head and then the file by sendfile. For the two to
// share packets the head must wait in the socket until the file's bytes join it.
// MSG_MORE on the head asks that only of the send that queues it: any push before the
// sendfile appends to it — the processing of an ACK that came meanwhile, or TCP small
// queues' deferred transmit, both run when the sendfile takes the socket's lock —
// sends the head alone, because the socket has TCP_NODELAY. Under load (200
// keep-alive connections on loopback) that was about one response in two: a packet
// of ~300 bytes per response and an ACK for it, kernel work on both ends
// (docs/results/origin.md, 2026-11-25T06Z). TCP_CORK holds partial packets whoever
// pushes until it is cleared, so the head goes out with the file's first bytes and
// clearing it sends the file's tail at once: nginx's tcp_nopush, the same two
// setsockopt calls per response.

// setCork sets or clears TCP_CORK on the socket fd (inside a RawConn callback) and
// notes it in c.corked. An error is ignored: without the cork the response is the
// same bytes, in more packets.
func (c *h1Conn) setCork(fd uintptr, on bool) {
	v := int32(0)
	if on {
		v = 1
	}
	// Raw, as the sockets' other calls (h1conn.go): it returns at once.
	_, _, _ = unix.RawSyscall6(unix.SYS_SETSOCKOPT, fd, unix.IPPROTO_TCP, unix.TCP_CORK, uintptr(unsafe.Pointer(&v)), 4, 0)
	c.corked = on
	if f := c.srv.onCork.Load(); f != nil {
		(*f)(fd, on)
	}
}
