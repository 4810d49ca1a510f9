package experiment

import (
	"bufio"
	"context"
	"io"
	"net/netip"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/lab/netem"
)

// sockSample is one TCP socket in one `ss -tinoHO` line: its state, its two ends
// and the tcp_info figures that say how it recovered losses and what it carried.
type sockSample struct {
	State         string
	CC            string // congestion control, when ss names it (cubic, bbr, reno)
	Local, Peer   netip.AddrPort
	BytesSent     int64
	BytesRetrans  int64
	BytesReceived int64
	SegsOut       int64
	SegsIn        int64
	Retrans       int64 // tcpi_retransmits: unrecovered retransmissions in a row (an RTO backoff in progress)
	TotalRetrans  int64 // tcpi_total_retrans
	Lost          int64 // packets the sender believes lost now
	Backoff       int64 // icsk_backoff: RTO doublings in progress
	RTOms         float64
	// The sender's side: congestion window (packets), packets not yet acknowledged,
	// pacing and delivery rate and BBR's bandwidth estimate (kbit/s; 0 when absent).
	Cwnd, Unacked                       int64
	PacingKbps, DeliveryKbps, BBRBwKbps int64
}

// parseRate reads an ss rate ("1012721610bps", "87.4Mbps") as kbit/s.
func parseRate(v string) int64 {
	mult := 1.0
	for _, u := range []struct {
		suffix string
		m      float64
	}{{"Gbps", 1e9}, {"Mbps", 1e6}, {"Kbps", 1e3}, {"kbps", 1e3}, {"bps", 1}} {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSuffix(v, u.suffix), u.m
			break
		}
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0
	}
	return int64(x * mult / 1000)
}

// parseSS reads `ss -tinoHO` output (one socket per line, no header). Lines it cannot
// read (a listener's "*" peer, an unknown layout) are skipped: the figures are extra.
func parseSS(text string) []sockSample {
	var out []sockSample
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		s := sockSample{State: f[0]}
		var err error
		if s.Local, err = netip.ParseAddrPort(f[3]); err != nil {
			continue
		}
		if s.Peer, err = netip.ParseAddrPort(f[4]); err != nil {
			continue
		}
		// A dual-stack listener's sockets show IPv4 peers as ::ffff:a.b.c.d.
		s.Local = netip.AddrPortFrom(s.Local.Addr().Unmap(), s.Local.Port())
		s.Peer = netip.AddrPortFrom(s.Peer.Addr().Unmap(), s.Peer.Port())
		for i, kv := range f[5:] {
			switch kv { // "name value" pairs, and the congestion control's bare name
			case "cubic", "bbr", "reno", "bbr2", "bbr3", "dctcp", "vegas", "westwood", "htcp":
				s.CC = kv
				continue
			case "pacing_rate", "delivery_rate":
				if 5+i+1 < len(f) {
					r := parseRate(f[5+i+1])
					if kv == "pacing_rate" {
						s.PacingKbps = r
					} else {
						s.DeliveryKbps = r
					}
				}
				continue
			}
			if bw, ok := strings.CutPrefix(kv, "bbr:(bw:"); ok {
				bw, _, _ = strings.Cut(bw, ",")
				s.BBRBwKbps = parseRate(strings.TrimSuffix(bw, ")"))
				continue
			}
			k, v, ok := strings.Cut(kv, ":")
			if !ok {
				continue
			}
			n := func() int64 { x, _ := strconv.ParseInt(v, 10, 64); return x }
			switch k {
			case "bytes_sent":
				s.BytesSent = n()
			case "bytes_retrans":
				s.BytesRetrans = n()
			case "bytes_received":
				s.BytesReceived = n()
			case "segs_out":
				s.SegsOut = n()
			case "segs_in":
				s.SegsIn = n()
			case "lost":
				s.Lost = n()
			case "cwnd":
				s.Cwnd = n()
			case "unacked":
				s.Unacked = n()
			case "backoff":
				s.Backoff = n()
			case "rto":
				s.RTOms, _ = strconv.ParseFloat(v, 64)
			case "retrans": // "now/total"
				a, b, _ := strings.Cut(v, "/")
				s.Retrans, _ = strconv.ParseInt(a, 10, 64)
				s.TotalRetrans, _ = strconv.ParseInt(b, 10, 64)
			}
		}
		out = append(out, s)
	}
	return out
}

// ClientConn is one of the client's TCP connections to the origin as the sampler saw
// it: when it was first and last seen (epoch ms), whether it was seen still in its
// handshake (SYN-SENT) and for how long, and its largest counters.
type ClientConn struct {
	Port          uint16  `json:"port"` // the client's local port: the same key in the origin's events
	FirstMS       int64   `json:"first_ms"`
	LastMS        int64   `json:"last_ms"`
	SynSentMS     int64   `json:"syn_sent_ms,omitempty"` // sampled time in SYN-SENT (> 0: the handshake was slow)
	BytesSent     int64   `json:"bytes_sent"`
	BytesReceived int64   `json:"bytes_received"`
	TotalRetrans  int64   `json:"total_retrans"`
	BytesRetrans  int64   `json:"bytes_retrans"`
	MaxLost       int64   `json:"max_lost,omitempty"`
	MaxBackoff    int64   `json:"max_backoff,omitempty"` // > 0: the client's RTO fired on it (seen while in backoff)
	MaxRTOms      float64 `json:"max_rto_ms"`
	synSince      int64
}

// serverSockColumns name the rows of the server's socket timeline.
var serverSockColumns = []string{"ms", "client_port", "cwnd", "unacked", "pacing_kbps", "delivery_kbps", "bbr_bw_kbps", "total_retrans", "lost"}

// maxSockRows bounds a run's timeline (60 s of 200 ms samples of ~10 connections is
// 3,000 rows).
const maxSockRows = 20000

// sockSampler runs `ss` in a host every interval and folds its sockets to peer into
// ClientConns. One shell loop per run: cheap, and the sample's time is when its
// marker line is read.
type sockSampler struct {
	mu      sync.Mutex
	conns   map[uint16]*ClientConn
	samples int
	// The server's side: sockets are keyed by their peer's (the client's) port, and
	// each sample's sender state is kept as a timeline row (serverSockColumns).
	serverSide bool
	rows       [][9]int64
	ccs        map[string]bool // congestion controls seen
	cmd        *exec.Cmd
	done       chan struct{}
}

// startSockSampler samples host's TCP sockets whose peer is peer's address (on the
// server's side, serverSide, also as a timeline). It stops
// when ctx ends or stop is called; an error starting it gives nil (figures are extra).
func startSockSampler(ctx context.Context, nw *netem.Network, host string, peer netip.Addr, every time.Duration, serverSide bool) *sockSampler {
	loop := "while :; do echo @; ss -tinoHO; sleep " + strconv.FormatFloat(every.Seconds(), 'f', 3, 64) + "; done"
	cmd := nw.CommandContext(ctx, host, "sh", "-c", loop)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil
	}
	if err := cmd.Start(); err != nil {
		return nil
	}
	s := &sockSampler{conns: map[uint16]*ClientConn{}, cmd: cmd, done: make(chan struct{}), serverSide: serverSide}
	go s.read(out, peer)
	return s
}

// read folds the sampler's output until it ends.
func (s *sockSampler) read(r io.Reader, peer netip.Addr) {
	defer close(s.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var at int64
	var block strings.Builder
	flush := func() {
		if at != 0 {
			s.fold(at, parseSS(block.String()), peer)
		}
		block.Reset()
	}
	for sc.Scan() {
		if sc.Text() == "@" {
			flush()
			at = time.Now().UnixMilli()
			continue
		}
		block.WriteString(sc.Text())
		block.WriteByte('\n')
	}
	flush()
	_, _ = io.Copy(io.Discard, r)
}

// fold adds one sample's sockets (taken at epoch ms at) to the connections.
func (s *sockSampler) fold(at int64, socks []sockSample, peer netip.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	for _, k := range socks {
		if k.Peer.Addr() != peer {
			continue
		}
		port := k.Local.Port()
		if k.CC != "" {
			if s.ccs == nil {
				s.ccs = map[string]bool{}
			}
			s.ccs[k.CC] = true
		}
		if s.serverSide {
			port = k.Peer.Port()
			if len(s.rows) < maxSockRows {
				s.rows = append(s.rows, [9]int64{at, int64(port), k.Cwnd, k.Unacked, k.PacingKbps, k.DeliveryKbps, k.BBRBwKbps, k.TotalRetrans, k.Lost})
			}
		}
		c := s.conns[port]
		if c == nil {
			c = &ClientConn{Port: port, FirstMS: at}
			s.conns[c.Port] = c
		}
		c.LastMS = at
		if k.State == "SYN-SENT" {
			if c.synSince == 0 {
				c.synSince = at
			}
			c.SynSentMS = max(c.SynSentMS, at-c.synSince)
		}
		c.BytesSent = max(c.BytesSent, k.BytesSent)
		c.BytesReceived = max(c.BytesReceived, k.BytesReceived)
		c.TotalRetrans = max(c.TotalRetrans, k.TotalRetrans)
		c.BytesRetrans = max(c.BytesRetrans, k.BytesRetrans)
		c.MaxLost = max(c.MaxLost, k.Lost)
		c.MaxBackoff = max(c.MaxBackoff, k.Backoff, k.Retrans)
		c.MaxRTOms = max(c.MaxRTOms, k.RTOms)
	}
}

// stop ends the sampler and returns its connections by first sight, and the number
// of samples taken.
func (s *sockSampler) stop() ([]ClientConn, int) {
	if s == nil {
		return nil, 0
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	_ = s.cmd.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ClientConn, 0, len(s.conns))
	for _, c := range s.conns {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].FirstMS != out[j].FirstMS {
			return out[i].FirstMS < out[j].FirstMS
		}
		return out[i].Port < out[j].Port
	})
	return out, s.samples
}
