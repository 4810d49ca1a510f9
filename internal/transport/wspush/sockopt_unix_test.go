//go:build unix

package wspush

import "syscall"

// smallRcvBuf gives a client socket a tiny receive buffer, so a reader that does not
// read pushes back on the server at once.
func smallRcvBuf(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
	})
	if err != nil {
		return err
	}
	return serr
}
