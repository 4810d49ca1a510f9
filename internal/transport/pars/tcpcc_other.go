//go:build !linux

package pars

import (
	"context"
	"net"
)

// ListenCC listens on TCP addr; choosing the congestion control needs Linux.
func ListenCC(ctx context.Context, addr, cc string) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(ctx, "tcp4", addr)
}

// CongestionControl is unknown outside Linux.
func CongestionControl(c net.Conn) string { return "" }
