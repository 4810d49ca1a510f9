//go:build !linux

package pars

import (
	"context"
	"net"
)

// ListenCC listens on TCP addr (IPv4); choosing the congestion control needs Linux.
func ListenCC(ctx context.Context, addr, cc string) (net.Listener, error) {
	return ListenCCOn(ctx, "tcp4", addr, cc)
}

// ListenCCOn is ListenCC on network "tcp", "tcp4" or "tcp6"; cc is ignored.
func ListenCCOn(ctx context.Context, network, addr, _ string) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(ctx, network, addr)
}

// CongestionControl is unknown outside Linux.
func CongestionControl(c net.Conn) string { return "" }
