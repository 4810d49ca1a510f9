package main

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/lab/netem"
	"github.com/streambed/streambed/internal/transport/fdsp"
	"github.com/streambed/streambed/internal/transport/pars"
)

// lab is an FDSP server in the server namespace of a two-host emulated network.
type lab struct {
	nw     *netem.Network
	addr   string
	cancel context.CancelFunc
	// the last play's UDP datagrams dropped in the client namespace: a full
	// socket receive buffer, a bad checksum (the link's corruption)
	rcvbufErrors, csumErrors int64
	repair                   bool // -repair: FDSP's split variants NACK lost UDP packets
}

// repairs says whether variant v's client repairs UDP losses in this lab.
func (l *lab) repairs(v variant) bool {
	return v.Repair == repairOn || (v.Repair == repairFlag && l.repair)
}

// udpCounters reads the client namespace's UDP counters (/proc/net/snmp as the
// namespace's thread sees it); nil when unreadable.
func (l *lab) udpCounters() map[string]int64 {
	var b []byte
	_ = l.nw.Do("client", func() (err error) {
		b, err = os.ReadFile("/proc/thread-self/net/snmp")
		return err
	})
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if names == nil {
			names = f[1:]
			continue
		}
		m := map[string]int64{}
		for i, v := range f[1:] {
			if i < len(names) {
				m[names[i]], _ = strconv.ParseInt(v, 10, 64)
			}
		}
		return m
	}
	return nil
}

func newLab(ctx context.Context, h *hub.Hub, p netem.Profile, cc string, substream time.Duration, serverLog *slog.Logger) (*lab, error) {
	ctx, cancel := context.WithCancel(ctx)
	nw, err := netem.Up(ctx, netem.TwoHosts(p), netem.Options{Name: "fdsp-study", Seed: 7})
	if err != nil {
		cancel()
		return nil, err
	}
	var srv *fdsp.Server
	listen := func(network, addr string) (net.Listener, error) { return pars.ListenCC(ctx, addr, cc) }
	if err := nw.Do("server", func() (err error) {
		srv, err = fdsp.NewServer(h, "0.0.0.0:0", "0.0.0.0:0", fdsp.Options{Substream: substream, Listen: listen, Logger: serverLog})
		return err
	}); err != nil {
		nw.Close()
		cancel()
		return nil, err
	}
	go srv.Serve(ctx)
	addr := netip.AddrPortFrom(nw.Server(), uint16(srv.Addr().(*net.TCPAddr).Port)).String()
	return &lab{nw: nw, addr: addr, cancel: cancel}, nil
}

func (l *lab) Close() {
	l.cancel()
	l.nw.Close()
}

// Throughput is the client's received bytes per sample interval (both paths, payload).
type Throughput struct {
	T    float64 `json:"t"`
	Mbps float64 `json:"mbit_s"`
}

// countingConn counts the bytes the client reads.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

// Unwrap is the socket, for the client's socket options (receive buffer, drops).
func (c countingConn) Unwrap() net.Conn { return c.Conn }

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// play runs one client session of stream in variant v; video, if set, receives the
// Annex-B output; throughput is sampled every interval.
func (l *lab) play(ctx context.Context, stream string, v variant, video *bytes.Buffer, interval time.Duration) (fdsp.Stats, []Throughput, error) {
	var n atomic.Int64
	dial := func(ctx context.Context, network, addr string) (c net.Conn, err error) {
		err = l.nw.Do("client", func() error {
			c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		if err != nil {
			return nil, err
		}
		return countingConn{c, &n}, nil
	}
	o := fdsp.ClientOptions{
		Addr: l.addr, Stream: stream, Mode: v.Mode, BP: v.BP, Repair: l.repairs(v), Dial: dial, SampleInterval: interval,
		DialUDP: func(ctx context.Context, raddr string) (net.Conn, error) { return dial(ctx, "udp", raddr) },
	}
	if video != nil {
		o.Output = video
	}
	var tp []Throughput
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // throughput over time, beside the player's own buffer samples
		defer close(sampled)
		t0 := time.Now()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		var last int64
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				cur := n.Load()
				tp = append(tp, Throughput{T: now.Sub(t0).Seconds(), Mbps: float64(cur-last) * 8 / interval.Seconds() / 1e6})
				last = cur
			}
		}
	}()
	before := l.udpCounters()
	st, err := fdsp.Play(ctx, o)
	close(done)
	<-sampled
	after := l.udpCounters()
	l.rcvbufErrors, l.csumErrors = after["RcvbufErrors"]-before["RcvbufErrors"], after["InCsumErrors"]-before["InCsumErrors"]
	log.Printf("  %s %s: BP %.0f %v, rebuffer %.0f ms in %d, PLR %.4f (lost %d of %d), decodable %.3f, client receive-buffer drops %d",
		stream, v.Name, st.BP, st.BPs, st.RebufferMS, st.RebufferCount, st.PLR, st.Lost, st.Packets, st.Decodable, l.rcvbufErrors)
	return st, tp, err
}
