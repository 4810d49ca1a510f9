//go:build !linux

package netutil

import (
	"context"
	"fmt"
	"net"
	"time"
)

// ListenRTOMin listens on a TCP address; an RTO minimum other than 0 needs Linux.
func ListenRTOMin(ctx context.Context, network, addr string, rtoMin time.Duration) (net.Listener, error) {
	if rtoMin > 0 {
		return nil, fmt.Errorf("TCP RTO minimum %s: only on Linux (TCP_RTO_MIN_US)", rtoMin)
	}
	var lc net.ListenConfig
	return lc.Listen(ctx, network, addr)
}

// ListenTCP listens on a TCP address; an RTO minimum or a congestion control needs
// Linux.
func ListenTCP(ctx context.Context, network, addr string, rtoMin time.Duration, cc string) (net.Listener, error) {
	if cc != "" {
		return nil, fmt.Errorf("TCP congestion control %q: only on Linux (TCP_CONGESTION)", cc)
	}
	return ListenRTOMin(ctx, network, addr, rtoMin)
}

// Congestion is unknown outside Linux.
func Congestion(net.Conn) string { return "" }

// RTOMin is unknown outside Linux.
func RTOMin(net.Conn) time.Duration { return 0 }
