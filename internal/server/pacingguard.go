package server

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/streambed/streambed/internal/netutil"
)

// The pacing guard: before a live response (an LL-HLS part, a blocking playlist
// reload, a live segment) the origin reads its connection's TCP_INFO, and when the
// sender's pacing rate has collapsed it restarts the connection's congestion
// control (netutil.ReinitCongestion).
//
// Why: on a lossy link this machine's default congestion control, BBR v1, can cut
// its bandwidth estimate 10-160x some time after a loss on an app-limited
// connection (one small part every 200 ms): its windowed max filter ages out and a
// slow retransmission's sample is the only one left. It then paces the next 720p
// part at tens of kbit/s for one to five seconds, and the player stalls
// (docs/results/latency.md, "Where the lossy LL-HLS stalls come from"). Restarted,
// BBR paces from cwnd/srtt at its startup gain and re-learns the path.

// pacingGuard decides, per connection, when to restart congestion control.
type pacingGuard struct {
	log       *slog.Logger
	clock     func() time.Time
	reinits   prometheus.Counter // congestion controls restarted
	collapses prometheus.Counter // collapses seen, restarted or not
}

func newPacingGuard(log *slog.Logger, clock func() time.Time) *pacingGuard {
	return &pacingGuard{log: log, clock: clock,
		reinits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "streambed_tcp_pacing_reinit_total",
			Help: "Connections' congestion control restarted by the pacing guard (TCP_CONGESTION set away and back) because their pacing rate had collapsed before a live response.",
		}),
		collapses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "streambed_tcp_pacing_collapses_total",
			Help: "Live responses whose connection's pacing rate had collapsed (under an eighth of its peak and under twice the track's bitrate), restarted or not (at most one restart per connection a second).",
		}),
	}
}

// pacedConn is one connection's guard state, in its context (ConnContext, or the
// lean path's connection context): HTTP/2 streams of one connection share it.
type pacedConn struct {
	rc syscall.RawConn
	mu sync.Mutex // HTTP/2 streams check at once; also guards read's buffer
	pacingState
	read *netutil.PacingReader
}

// pacingState is what the rule remembers of a connection.
type pacingState struct {
	peak   uint64    // highest pacing rate read, bytes/s
	reinit time.Time // last restart (zero: none)
}

type pacedConnKey struct{}
type pacingGuardKey struct{}

// withPacingGuard puts g where connContext finds it (nil: the guard is off).
func withPacingGuard(ctx context.Context, g *pacingGuard) context.Context {
	if g == nil {
		return ctx
	}
	return context.WithValue(ctx, pacingGuardKey{}, g)
}

// connContext gives connection c its guard state when the guard is on: net/http's
// ConnContext, and the lean path's per-connection context.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if ctx.Value(pacingGuardKey{}) == nil {
		return ctx
	}
	rc := netutil.RawConnOf(c)
	if rc == nil {
		return ctx
	}
	return context.WithValue(ctx, pacedConnKey{}, &pacedConn{rc: rc, read: netutil.NewPacingReader(rc)})
}

// Rule's constants: a collapse is a pacing rate under peak/collapseRatio and under
// headroom × the track's bitrate; one restart per connection per max(restartRTTs ×
// srtt, restartEvery).
const (
	collapseRatio = 8
	headroom      = 2
	restartRTTs   = 8
	restartEvery  = time.Second
)

// pacingCollapsed is the rule, a pure function of one TCP_INFO sample: the pacing
// rate fell under an eighth of the highest this connection has had (so a path that
// was never fast is left alone) and under twice the track's bitrate (so the
// response, a part duration of media, would take more than half its duration to
// send; a connection still fast enough for the media is left alone).
func pacingCollapsed(p netutil.Pacing, peak uint64, trackBitsPerSecond int) bool {
	if p.Rate == 0 || trackBitsPerSecond <= 0 {
		return false
	}
	need := uint64(trackBitsPerSecond) / 8 * headroom
	return p.Rate < peak/collapseRatio && p.Rate < need
}

// decide notes sample p in st and reports whether to restart now: a collapse, and
// no restart on this connection within max(8 srtt, 1 s), so a path that is slow
// for good is not restarted into loss again and again.
func (st *pacingState) decide(p netutil.Pacing, trackBitsPerSecond int, now time.Time) (collapsed, restart bool) {
	collapsed = pacingCollapsed(p, st.peak, trackBitsPerSecond)
	st.peak = max(st.peak, p.Rate)
	if !collapsed {
		return false, false
	}
	if !st.reinit.IsZero() && now.Sub(st.reinit) < max(restartRTTs*p.RTT, restartEvery) {
		return true, false
	}
	st.reinit = now
	return true, true
}

// check runs the guard for a live response of a track of bitrate bps on r's
// connection: one getsockopt, and two setsockopts when it restarts.
func (g *pacingGuard) check(r *http.Request, bps int) {
	if g == nil {
		return
	}
	pc, _ := r.Context().Value(pacedConnKey{}).(*pacedConn)
	if pc == nil {
		return
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	p, err := pc.read.Read()
	if err != nil {
		return // the connection is closing: nothing to guard
	}
	collapsed, restart := pc.decide(p, bps, g.clock())
	if !collapsed {
		return
	}
	g.collapses.Inc()
	if !restart {
		return
	}
	// Only BBR: loss-based algorithms pace from cwnd/srtt, which a restart keeps.
	name, done, err := netutil.ReinitCongestion(pc.rc, "bbr")
	if err != nil {
		g.log.Warn("pacing guard: congestion control not restarted", "remote", r.RemoteAddr, "err", err)
		return
	}
	if !done {
		return
	}
	g.reinits.Inc()
	after, _ := pc.read.Read()
	g.log.Info("pacing guard: congestion control restarted", "remote", r.RemoteAddr, "path", r.URL.Path,
		"cc", name, "pacing_kbps", p.Rate*8/1000, "peak_kbps", pc.peak*8/1000, "after_kbps", after.Rate*8/1000,
		"cwnd", p.Cwnd, "rtt_ms", float64(p.RTT.Microseconds())/1000, "delivery_kbps", p.Delivery*8/1000)
}
