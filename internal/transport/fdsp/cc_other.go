//go:build !linux

package fdsp

import (
	"context"
	"net"
)

// listenCC ignores the congestion control outside Linux (no TCP_CONGESTION).
func listenCC(ctx context.Context, addr, _ string) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(ctx, "tcp", addr)
}
