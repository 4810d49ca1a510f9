// Package server assembles Streambed's HTTP origin: routes for on-demand assets and
// live channels (DASH and HLS), the player page, the API, /time and /metrics, served
// over HTTP/1.1, h2c (prior knowledge) and TLS h2.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/netutil"
	"github.com/streambed/streambed/web"
)

// Server is the HTTP origin over one hub.
type Server struct {
	cfg     Config
	hub     *hub.Hub
	log     *slog.Logger
	metrics *metrics
	mux     *http.ServeMux
	tracks  trackRouter // the track routes ahead of mux (router.go)
	clock   func() time.Time

	manifests sync.Map    // cache key → []byte of rendered manifests (see manifestCache)
	watches   edgeWatches // LL-HLS blocking reloads held, per channel track
	// reloadHold overrides how long a blocking reload is held (0: three target
	// durations, as the LL-HLS spec asks). Tests that hold thousands of reloads on
	// a loaded machine set it longer, so set-up time never reads as a timeout.
	reloadHold atomic.Int64 // time.Duration; atomic: set while the server runs
	// httpsPort is the TLS listener's port once Listen opened it (0: none), listed in
	// /api/streams so a page loaded over plain HTTP can reach HTTP/2 (browsers speak
	// it only over TLS) for LL-HLS.
	httpsPort atomic.Int32

	middleware []func(http.Handler) http.Handler // transports that wrap the origin (e.g. HTTP/2 push)
	endpoints  []advertised                      // transports' endpoints listed in /api/streams
	components []component                       // transports' non-HTTP parts, run while serving

	files             *hub.FileCache // packaged segment files kept open for sendfile
	segmentCache      string         // Cache-Control of segments and inits, formatted once
	segmentCacheValue []string       // the same as a shared header value (never changed in place)

	pacing *pacingGuard // nil: off (pacingguard.go)
}

// New returns a server for h. clock may be nil (time.Now).
func New(cfg Config, h *hub.Hub, log *slog.Logger, clock func() time.Time) *Server {
	if clock == nil {
		clock = time.Now
	}
	s := &Server{cfg: cfg, hub: h, log: log, metrics: newMetrics(h), mux: http.NewServeMux(), clock: clock,
		files:        hub.NewFileCache(cfg.Cache.OpenFiles),
		segmentCache: fmt.Sprintf("public, max-age=%d, immutable", int(cfg.Cache.SegmentMaxAge.Seconds())),
	}
	s.segmentCacheValue = []string{s.segmentCache}
	if cfg.TCPPacingGuard {
		s.pacing = newPacingGuard(log, clock)
		s.metrics.reg.MustRegister(s.pacing.reinits, s.pacing.collapses)
	}
	s.tracks = trackRouter{mux: s.mux, vod: s.serveVODTrack, live: s.serveLiveTrack}
	s.routes()
	return s
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /api/streams", s.handleStreams)
	m.HandleFunc("GET /time", s.handleTime)
	m.Handle("GET /metrics", s.metrics.handler())
	m.HandleFunc("GET /vod/{stream}/{file}", s.handleVOD)
	m.HandleFunc("GET /vod/{stream}/{track}/{file}", s.handleVODTrack)
	m.HandleFunc("GET /live/{stream}/{file}", s.handleLive)
	m.HandleFunc("GET /live/{stream}/{track}/{file}", s.handleLiveTrack)
	m.Handle("GET /", s.pageHandler())
}

// Handle adds a route beside the origin's own: transports with their own endpoints
// (WebSocket push, ingest, admin pages) register here before Listen.
func (s *Server) Handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
	s.tracks.note(pattern)
}

// Use wraps the origin's routes with a middleware, innermost first: a transport that
// acts on pull requests (HTTP/2 push of what a request will need next) registers here.
func (s *Server) Use(mw func(http.Handler) http.Handler) { s.middleware = append(s.middleware, mw) }

// RegisterMetrics adds a transport's collector to the origin's /metrics.
func (s *Server) RegisterMetrics(c prometheus.Collector) error { return s.metrics.reg.Register(c) }

// Hub is the hub the origin serves.
func (s *Server) Hub() *hub.Hub { return s.hub }

// DataDir is where the origin and its transports keep generated state.
func (s *Server) DataDir() string { return s.cfg.DataDir }

// Log is the origin's logger.
func (s *Server) Log() *slog.Logger { return s.log }

// PageFS is the embedded player page's folder (without index.html when the page is
// not built into this binary).
func (s *Server) PageFS() fs.FS {
	dist, err := fs.Sub(web.Dist, "dist")
	if err != nil {
		panic(err) // the embed pattern guarantees dist exists
	}
	return dist
}

// component is a transport's part that is not an HTTP route.
type component struct {
	name string
	run  func(ctx context.Context) error
}

// Supervise registers a component that Serve runs beside the HTTP servers and stops
// with them. A component that fails stops the origin, as a failed listener does.
func (s *Server) Supervise(name string, run func(ctx context.Context) error) {
	s.components = append(s.components, component{name, run})
}

// Handler is the whole origin as an http.Handler, with CORS, metrics and logging.
func (s *Server) Handler() http.Handler {
	var h http.Handler = &s.tracks
	for _, mw := range s.middleware {
		h = mw(h)
	}
	return s.metrics.wrap(cors(h))
}

// The CORS header values every answer carries, shared rather than made per request
// (never changed in place).
var (
	corsAnyOrigin = []string{"*"}
	corsExposed   = []string{"Content-Length, Content-Range, Date, ETag, Last-Modified"}
)

// cors lets players on other origins read manifests and segments, ranges included.
func cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Access-Control-Allow-Origin"] = corsAnyOrigin
		h["Access-Control-Expose-Headers"] = corsExposed
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Range, If-None-Match, If-Modified-Since")
			h.Set("Access-Control-Max-Age", "86400")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// pageHandler serves the embedded browser app.
func (s *Server) pageHandler() http.Handler {
	dist := s.PageFS()
	if _, err := fs.Stat(dist, "index.html"); err != nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "The player page is not built into this binary. Run `make web` (or `make build`), then rebuild streambed.")
		})
	}
	files := http.FileServerFS(dist)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

// Listen binds the configured listeners; Serve runs them. Split so callers (and tests)
// learn the bound addresses before serving.
type Listeners struct {
	HTTP, HTTPS net.Listener
}

// Listen opens the HTTP and HTTPS listeners that the configuration enables.
func (s *Server) Listen() (*Listeners, error) {
	var ls Listeners
	var err error
	if s.cfg.HTTP != "" {
		if ls.HTTP, err = netutil.ListenTCP(context.Background(), "tcp", s.cfg.HTTP, s.cfg.TCPRTOMin, s.cfg.TCPCongestion); err != nil {
			return nil, fmt.Errorf("listen %s: %w (is another server running? choose another port with --http)", s.cfg.HTTP, err)
		}
	}
	if s.cfg.HTTPS != "" {
		if ls.HTTPS, err = netutil.ListenTCP(context.Background(), "tcp", s.cfg.HTTPS, s.cfg.TCPRTOMin, s.cfg.TCPCongestion); err != nil {
			if ls.HTTP != nil {
				ls.HTTP.Close()
			}
			return nil, fmt.Errorf("listen %s: %w (choose another port with --https, or --https \"\" to disable TLS)", s.cfg.HTTPS, err)
		}
		if a, ok := ls.HTTPS.Addr().(*net.TCPAddr); ok {
			s.httpsPort.Store(int32(a.Port))
		}
	}
	return &ls, nil
}

// Serve serves on ls until ctx ends, then shuts down gracefully: listeners close at
// once, requests in flight get up to 5 s to finish.
func (s *Server) Serve(ctx context.Context, ls *Listeners) error {
	ctx = withPacingGuard(ctx, s.pacing)
	var servers []*http.Server
	errc := make(chan error, 2+len(s.components)) // each listener and component fails at most once
	start := func(srv *http.Server, l net.Listener, useTLS bool) {
		servers = append(servers, srv)
		go func() {
			var err error
			if useTLS {
				err = srv.ServeTLS(l, "", "")
			} else {
				err = srv.Serve(l)
			}
			if !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	base := func() *http.Server {
		return &http.Server{
			Handler:           s.Handler(),
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       120 * time.Second,
			ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
			ConnState:         s.metrics.connState,
			BaseContext:       func(net.Listener) context.Context { return ctx },
			ConnContext:       connContext, // the pacing guard's per-connection state
		}
	}
	var lean *h1Listener
	if ls.HTTP != nil {
		srv := base()
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetUnencryptedHTTP2(true) // h2c with prior knowledge
		l := ls.HTTP
		if !s.cfg.NetHTTPOnly {
			lean = newH1Listener(ctx, l, srv, s.log, s.metrics.conns, !s.cfg.LeanGoroutinePerConn)
			l = lean
		}
		start(srv, l, false)
	}
	if ls.HTTPS != nil {
		cert, err := loadOrCreateCert(s.cfg, s.log)
		if err != nil {
			return err
		}
		srv := base()
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetHTTP2(true)
		start(srv, ls.HTTPS, true)
	}
	cctx, stopComponents := context.WithCancel(ctx)
	defer stopComponents()
	var wg sync.WaitGroup
	for _, c := range s.components {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.run(cctx); err != nil && cctx.Err() == nil {
				errc <- fmt.Errorf("%s: %w", c.name, err)
			}
		}()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	stopComponents()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range servers {
		_ = srv.Shutdown(shutdownCtx)
	}
	if lean != nil {
		_ = lean.Close()
		lean.wait(shutdownCtx)
	}
	wg.Wait()
	return err
}
