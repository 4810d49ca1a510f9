package cli

import (
	"context"
	"log/slog"

	"github.com/streambed/streambed/internal/server"
	"github.com/streambed/streambed/internal/transport/h2push"
	"github.com/streambed/streambed/internal/transport/pars"
	"github.com/streambed/streambed/internal/transport/wspush"
)

// attachTransports wires the push transports into the origin: each registers its
// routes (srv.Handle) or wraps the pull routes (srv.Use). One line per transport.
func attachTransports(ctx context.Context, srv *server.Server, cfg server.Config, log *slog.Logger) error {
	_, _, _, _ = ctx, srv, cfg, log
	srv.Handle(pars.IndexPattern, pars.IndexHandler(srv.Hub())) // ParS: segment sizes beside the segments
	// HTTP/2 push: strategies around the pull routes, the rules page at /admin/push.
	if _, err := h2push.Attach(ctx, srv, cfg.H2Push, cfg.DataDir, log); err != nil {
		return err
	}
	wspush.Attach(ctx, srv, cfg, log) // WebSocket push: /ws/{channel}, /ws/vod/{asset}
	return nil
}
