package cli

import (
	"context"

	"github.com/streambed/streambed/internal/server"
	"github.com/streambed/streambed/internal/transport"
	"github.com/streambed/streambed/internal/transport/fdsp"
	"github.com/streambed/streambed/internal/transport/h2push"
	"github.com/streambed/streambed/internal/transport/pars"
	"github.com/streambed/streambed/internal/transport/wspush"
)

var _ transport.Host = (*server.Server)(nil)

// attachTransports wires the transports into the origin through transport.Host: each
// registers its routes, middleware, metrics and background parts. One line each.
func attachTransports(ctx context.Context, host transport.Host, cfg Config) error {
	host.Handle(pars.IndexPattern, pars.IndexHandler(host.Hub())) // ParS: segment sizes beside the segments
	// HTTP/2 push: strategies around the pull routes, the rules page at /admin/push.
	if _, err := h2push.Attach(ctx, host, cfg.H2Push); err != nil {
		return err
	}
	// WebSocket push: /ws/{channel}, /ws/vod/{asset}.
	if _, err := wspush.Attach(ctx, host, cfg.wsPushConfig()); err != nil {
		return err
	}
	// FDSP: its own TCP and UDP listeners when configured ("fdsp" in /api/streams).
	if _, err := fdsp.Attach(ctx, host, cfg.FDSP); err != nil {
		return err
	}
	return nil
}
