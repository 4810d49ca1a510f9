package pars

import (
	"context"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// ListenCC listens on TCP addr (IPv4) with congestion control algorithm cc ("cubic",
// "reno", "bbr"; "" keeps the system default) on the listening socket, which the
// connections it accepts inherit. The lab uses it to make a server send with a
// loss-based algorithm whatever the machine's default is: with BBR, random loss
// hardly slows one connection, and the study's effect disappears.
func ListenCC(ctx context.Context, addr, cc string) (net.Listener, error) {
	return ListenCCOn(ctx, "tcp4", addr, cc)
}

// ListenCCOn is ListenCC on network "tcp", "tcp4" or "tcp6" (serve's listeners take
// whatever the address says).
func ListenCCOn(ctx context.Context, network, addr, cc string) (net.Listener, error) {
	lc := net.ListenConfig{}
	if cc != "" {
		lc.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			if err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc)
			}); err != nil {
				return err
			}
			return serr
		}
	}
	return lc.Listen(ctx, network, addr)
}

// CongestionControl names the congestion control algorithm of a TCP connection
// ("" when it cannot be read).
func CongestionControl(c net.Conn) string {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return ""
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return ""
	}
	var name string
	_ = rc.Control(func(fd uintptr) {
		name, _ = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	})
	return name
}
