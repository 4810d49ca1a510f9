package experiment

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/lab/netem"
)

// clientTCPCounters are the client namespace's kernel counters (what `nstat -az`
// shows) that say how the client's own senders recovered losses: its requests, ACKs
// and handshakes. The browser is the only TCP user there.
var clientTCPCounters = []string{
	"Tcp:OutSegs", "Tcp:InSegs", "Tcp:RetransSegs", "Tcp:ActiveOpens",
	"TcpExt:TCPTimeouts", "TcpExt:TCPLossProbes", "TcpExt:TCPLossProbeRecovery",
	"TcpExt:TCPSynRetrans", "TcpExt:TCPLostRetransmit", "TcpExt:TCPFastRetrans",
	"TcpExt:TCPSlowStartRetrans", "TcpExt:TCPSpuriousRTOs", "TcpExt:TCPDSACKRecv",
	"TcpExt:TCPDSACKOldSent", "TcpExt:TCPOFOQueue", "TcpExt:DelayedACKs",
}

// sockEvery is how often the client's sockets are sampled: often enough to see a
// handshake that needed a SYN retransmission (1 s) and each connection's life, cheap
// enough (one `ss` a sample) not to disturb a run.
const sockEvery = 200 * time.Millisecond

// tcpWatch records the client side of a run's TCP: the client namespace's counters,
// its connections to the origin (sampled with ss) and every retransmission and
// congestion-state change on them, either end (tracepoints).
type tcpWatch struct {
	nw       *netem.Network
	counters map[string]int64
	socks    *sockSampler
	server   *sockSampler // the origin's sockets to the client: its sender state over time
	trace    *tcpTrace
	start    time.Time
}

func watchTCP(ctx context.Context, nw *netem.Network) *tcpWatch {
	return &tcpWatch{
		nw:       nw,
		counters: tcpCounters(nw, "client"),
		socks:    startSockSampler(ctx, nw, "client", nw.Server(), sockEvery, false),
		server:   startServerSampler(ctx, nw),
		trace:    startTCPTrace(nw.Server(), httpPort, httpsPort),
		start:    time.Now(),
	}
}

// ClientTCP is a run's metrics.client_tcp.
type ClientTCP struct {
	Counters    map[string]int64 `json:"counters,omitempty"` // the client namespace's, after − before
	Connections []ClientConn     `json:"connections"`
	Samples     int              `json:"samples"`
	// Events: [epoch ms, side, kind, client port], the tracepoints' events on the
	// client's own connections.
	Events      [][4]any       `json:"events"`
	EventCounts map[string]int `json:"event_counts"` // "side kind" → count
	OtherEvents int            `json:"other_events"` // on ports the client namespace never had (another lab's)
	TraceError  string         `json:"trace_error,omitempty"`
	StartMS     int64          `json:"start_ms"`
	// ServerSockets is the origin's side of the same connections every sample:
	// congestion window, pacing and delivery rates, BBR's estimate.
	ServerSockets *SockTimeline `json:"server_sockets,omitempty"`
}

// SockTimeline is sampled socket state as rows of Columns.
type SockTimeline struct {
	Columns []string   `json:"columns"`
	Rows    [][9]int64 `json:"rows"`
	CC      []string   `json:"cc"` // the congestion controls the sockets had
}

// startServerSampler samples the origin's sockets to the client host.
func startServerSampler(ctx context.Context, nw *netem.Network) *sockSampler {
	return startSockSampler(ctx, nw, serverHost(nw), nw.Addr("client"), sockEvery, true)
}

func (w *tcpWatch) stop() ClientTCP {
	out := ClientTCP{StartMS: w.start.UnixMilli(), EventCounts: map[string]int{}, Events: [][4]any{}}
	events := w.trace.stop()
	out.TraceError = w.trace.why
	out.Connections, out.Samples = w.socks.stop()
	if w.server != nil {
		_, _ = w.server.stop()
		out.ServerSockets = &SockTimeline{Columns: serverSockColumns, Rows: w.server.rows, CC: []string{}}
		for cc := range w.server.ccs {
			out.ServerSockets.CC = append(out.ServerSockets.CC, cc)
		}
		sort.Strings(out.ServerSockets.CC)
	}
	out.Counters = counterDeltaOf(clientTCPCounters, w.counters, tcpCounters(w.nw, "client"))
	ours := map[uint16]bool{}
	for _, c := range out.Connections {
		ours[c.Port] = true
	}
	for _, e := range events {
		if !ours[e.Port] {
			out.OtherEvents++
			continue
		}
		out.Events = append(out.Events, [4]any{e.MS, e.Side, e.Kind, e.Port})
		out.EventCounts[e.Side+" "+e.Kind]++
	}
	return out
}

// counterDeltaOf is after − before of names, keyed without the protocol prefix; nil
// when either is missing.
func counterDeltaOf(names []string, before, after map[string]int64) map[string]int64 {
	if before == nil || after == nil {
		return nil
	}
	d := map[string]int64{}
	for _, k := range names {
		d[k[strings.IndexByte(k, ':')+1:]] = after[k] - before[k]
	}
	return d
}
