package wspush

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/streambed/streambed/internal/httperr"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/transport"
)

// Options tune the server side. The zero value is ready to use.
type Options struct {
	// Policy is the adaptation policy when neither the start message nor Channels
	// names one (default tcp).
	Policy string
	// Channels maps a channel (or asset) name to its default policy.
	Channels map[string]string
	// QueueLimit is the media a session may hold unsent before it skips to the next
	// keyframe (default: two segment durations, at least 2 s).
	QueueLimit time.Duration
	// MaxSkips closes a session (4008) that skipped this often within SkipWindow
	// (defaults 3 and 30 s).
	MaxSkips   int
	SkipWindow time.Duration
	// StartTimeout closes a socket that sent no start message (1008; default 30 s).
	StartTimeout time.Duration
	// WriteTimeout ends a session whose one message has not left in this long: the
	// client vanished or is hopelessly slow (default 15 s).
	WriteTimeout time.Duration
	// NotSentLowat sets TCP_NOTSENT_LOWAT on each session's socket (default 16 KiB;
	// negative leaves the kernel default).
	NotSentLowat int
	// Lead is how far ahead of real time a VOD or time-shifted session may push
	// (default 10 s).
	Lead time.Duration
	// SubscriptionCapacity is each live session's hub queue, in chunks (default 64);
	// the session drains it at once into its output queue.
	SubscriptionCapacity int
	// Now is the clock of VOD sessions (live sessions use their channel's). nil: time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// OnSessionEnd, when set, receives each session's statistics (tests, load runs).
	OnSessionEnd func(SessionStats)
	// NoFanOut serves every live session on its own goroutines, as before the
	// channel fan-out (fanout.go): for comparisons.
	NoFanOut bool
}

func (o *Options) defaults() {
	if o.Policy == "" {
		o.Policy = PolicyTCP
	}
	if o.MaxSkips <= 0 {
		o.MaxSkips = 3
	}
	if o.SkipWindow <= 0 {
		o.SkipWindow = 30 * time.Second
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 30 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 15 * time.Second
	}
	if o.NotSentLowat == 0 {
		o.NotSentLowat = 16 << 10
	}
	if o.Lead <= 0 {
		o.Lead = 10 * time.Second
	}
	if o.SubscriptionCapacity <= 0 {
		o.SubscriptionCapacity = 64
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Handler serves WebSocket push sessions: GET /ws/{channel} for live channels and
// GET /ws/vod/{asset} for on-demand assets.
type Handler struct {
	hub  *hub.Hub
	opts Options
	base context.Context // ends every session with 1001 when done

	mu       sync.Mutex
	sessions map[*session]struct{}
	fanouts  map[*hub.Channel]*fanout
	active   atomic.Int64
	fanned   atomic.Int64 // sessions in a channel fan-out
	ctr      counters     // for /metrics
	starts   startMemo    // start messages parsed (setupmemo.go)
}

// NewHandler returns a handler over h. Sessions end with 1001 when ctx is done.
func NewHandler(ctx context.Context, h *hub.Hub, opts Options) (*Handler, error) {
	opts.defaults()
	if _, err := NewPolicy(opts.Policy); err != nil {
		return nil, fmt.Errorf("wspush: %w", err)
	}
	for name, p := range opts.Channels {
		if _, err := NewPolicy(p); err != nil {
			return nil, fmt.Errorf("wspush: channel %q: %w", name, err)
		}
	}
	hd := &Handler{hub: h, opts: opts, base: ctx, sessions: map[*session]struct{}{}, fanouts: map[*hub.Channel]*fanout{}}
	context.AfterFunc(ctx, hd.shutdown)
	return hd, nil
}

// Config is WebSocket push's part of the serve configuration.
type Config struct {
	// Policy is the default adaptation policy: tcp (default), buffer or fixed.
	Policy string `yaml:"policy"`
	// Channels maps a channel (or asset) name to its own policy (a channel's
	// ws_policy in the serve configuration).
	Channels map[string]string `yaml:"channels"`
}

// Attach registers the WebSocket push routes on the origin, GET /ws/{channel} and
// GET /ws/vod/{asset}, lists them in /api/streams ("ws") and adds the sessions'
// counters to /metrics. A policy name it does not know is an error.
func Attach(ctx context.Context, host transport.Host, cfg Config) (*Handler, error) {
	opts := Options{Policy: cfg.Policy, Channels: cfg.Channels, Logger: host.Log().With("transport", "wspush")}
	h, err := NewHandler(ctx, host.Hub(), opts)
	if err != nil {
		return nil, err
	}
	if err := host.RegisterMetrics(h); err != nil {
		opts.Logger.Warn("WebSocket push metrics are not on /metrics", "err", err)
	}
	host.Handle("GET /ws/{channel}", h)
	host.Handle("GET /ws/vod/{asset}", h)
	host.Advertise("ws", func(st hub.Stream) string { return layout.WebSocket(st.Live(), st.Info().Name) })
	return h, nil
}

// Active is the number of sessions streaming now.
func (h *Handler) Active() int { return int(h.active.Load()) }

// FanOutViewers is the number of sessions served by a channel's fan-out loop.
func (h *Handler) FanOutViewers() int { return int(h.fanned.Load()) }

// Sessions is the number of open sockets, started or still waiting for start.
func (h *Handler) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

func (h *Handler) shutdown() {
	h.mu.Lock()
	ss := make([]*session, 0, len(h.sessions))
	for s := range h.sessions {
		ss = append(ss, s)
	}
	h.mu.Unlock()
	for _, s := range ss {
		go s.closeWith(CloseGoingAway, "origin shutting down") // each waits for its peer's close
	}
}

// ServeHTTP answers 404 before the upgrade for an unknown stream, then runs a session.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var src hub.Stream
	if name := r.PathValue("asset"); name != "" {
		a, err := h.hub.Asset(name)
		if err != nil {
			httperr.Write(w, httperr.WithStatus(http.StatusNotFound, err))
			return
		}
		src = a
	} else {
		name := r.PathValue("channel")
		c, err := h.hub.Channel(name)
		if err != nil {
			httperr.Write(w, httperr.WithStatus(http.StatusNotFound, err))
			return
		}
		src = c
	}
	hw := &hijackRecorder{ResponseWriter: w}
	conn, err := websocket.Accept(hw, r, &websocket.AcceptOptions{
		InsecureSkipVerify: true, // public media, like the pull routes' CORS *
		CompressionMode:    websocket.CompressionDisabled,
	})
	if err != nil {
		return // Accept answered the request
	}
	s := newSession(h, conn, hw.conn, src)
	s.guard = hw.guard
	if h.base.Err() != nil {
		s.closeWith(CloseGoingAway, "origin shutting down")
		return
	}
	h.mu.Lock()
	h.sessions[s] = struct{}{}
	h.mu.Unlock()
	// The session runs on a goroutine of its own and the handler returns: the
	// connection is hijacked, so net/http is done with it. A fresh goroutine's stack
	// starts small, while the request's goroutine has grown to 16 KiB parsing the
	// request and keeps it: at 10 000 idle sockets that is 80 MiB less
	// (docs/results/wspush-capacity.md).
	ctx := context.WithoutCancel(r.Context())
	go func() {
		defer func() {
			h.mu.Lock()
			delete(h.sessions, s)
			h.mu.Unlock()
		}()
		s.run(ctx)
	}()
}

// hijackRecorder keeps the connection the WebSocket library hijacks, so the session
// can read TCP_INFO and set socket options on it, and puts the library's writes
// behind a sockGuard, so a fan-out viewer's frames (written to the socket directly)
// and the library's control frames (pong, close) never interleave.
type hijackRecorder struct {
	http.ResponseWriter
	conn  net.Conn
	guard *sockGuard
}

func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	h.conn = c
	if err == nil && rw != nil && rw.Writer.Buffered() == 0 {
		h.guard = &sockGuard{c: c}
		rw.Writer.Reset(h.guard) // keeps the buffer; only where it flushes changes
	}
	return c, rw, err
}

func (h *hijackRecorder) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// closeCodeOf maps an error kind to a close code.
func closeCodeOf(err error) websocket.StatusCode {
	switch {
	case errors.Is(err, ErrStart), errors.Is(err, media.ErrNotFound), errors.Is(err, media.ErrBadRequest):
		return ClosePolicy
	}
	return CloseInternal
}
