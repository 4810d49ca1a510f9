package fdsp

import (
	"context"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// listenCC listens on TCP (v4 or v6, as the address says: pars.ListenCC is
// IPv4-only, fine for the lab, not for serve) with TCP_CONGESTION set on the
// listener, which accepted sockets inherit.
func listenCC(ctx context.Context, addr, cc string) (net.Listener, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc)
		}); err != nil {
			return err
		}
		return serr
	}}
	return lc.Listen(ctx, "tcp", addr)
}
