package pars

import (
	"context"
	"net"

	"github.com/streambed/streambed/internal/netutil"
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
// whatever the address says): netutil.ListenTCP with no RTO minimum.
func ListenCCOn(ctx context.Context, network, addr, cc string) (net.Listener, error) {
	return netutil.ListenTCP(ctx, network, addr, 0, cc)
}

// CongestionControl names the congestion control algorithm of a TCP connection
// ("" when it cannot be read).
func CongestionControl(c net.Conn) string { return netutil.Congestion(c) }
