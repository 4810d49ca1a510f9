// Package transport is what every delivery transport attaches to: the origin seen
// through one small interface. Each transport lives in a folder below this one with
// its server side, client side and wire format; its configuration type is its own,
// and the serve command (internal/cli) assembles them.
package transport

import (
	"context"
	"io/fs"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/streambed/streambed/internal/hub"
)

// Host is the origin as a transport sees it (internal/server.Server implements it).
// A transport's Attach registers its routes, middleware, metrics and background
// components here before the origin serves.
type Host interface {
	// Hub is the media every transport reads.
	Hub() *hub.Hub
	// Handle adds a route beside the origin's own (a transport's own endpoint).
	Handle(pattern string, h http.Handler)
	// Use wraps the origin's pull routes (a transport acting on pull requests).
	Use(mw func(http.Handler) http.Handler)
	// RegisterMetrics adds a collector to /metrics.
	RegisterMetrics(c prometheus.Collector) error
	// Advertise lists the transport's endpoint of each stream in /api/streams under
	// key; endpoint returns "" for a stream the transport does not serve.
	Advertise(key string, endpoint func(s hub.Stream) string)
	// Supervise runs a component that is not an HTTP route (a UDP listener, a relay's
	// upstream) from when the origin serves until it shuts down, with the HTTP servers.
	Supervise(name string, run func(ctx context.Context) error)
	// PageFS is the player page's files (without index.html when it is not built in).
	PageFS() fs.FS
	// DataDir is where a transport keeps state (rules files, certificates).
	DataDir() string
	// Log is the origin's logger.
	Log() *slog.Logger
}
