package fdsp

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/transport"
	"github.com/streambed/streambed/internal/transport/pars"
)

// Config is the serve configuration's `fdsp:` section.
type Config struct {
	// Listen is the TCP address of the critical path, e.g. ":9710"; empty: FDSP off.
	Listen string `yaml:"listen"`
	// UDP is the address the RTP path is sent from and binds are read on; empty: the
	// TCP address's host with the next port.
	UDP string `yaml:"udp"`
	// Substream is the substream length (default 10 s; whole segments, at least one).
	Substream time.Duration `yaml:"substream"`
	// CC is the TCP congestion control of the critical path's sockets
	// (TCP_CONGESTION): empty means cubic, the loss-based one the FDSP study ran
	// on (BBR, this machine's default, paces through loss and makes TCP lateness
	// mean something else to adaptive BP); "system" keeps the kernel's default.
	CC string `yaml:"cc"`
}

// congestion is the TCP_CONGESTION name to set, "" for the kernel's default.
func (c Config) congestion() string {
	switch c.CC {
	case "":
		return "cubic"
	case "system":
		return ""
	}
	return c.CC
}

// listen is the TCP listener maker for the configured congestion control.
func (c Config) listen(ctx context.Context) func(network, addr string) (net.Listener, error) {
	cc := c.congestion()
	if cc == "" {
		return nil
	}
	return func(_, addr string) (net.Listener, error) {
		ln, err := pars.ListenCCOn(ctx, "tcp", addr, cc) // v4 or v6, as the address says
		if err != nil {
			return nil, fmt.Errorf("TCP congestion control %q (fdsp.cc; \"system\" keeps the kernel's): %w", cc, err)
		}
		return ln, nil
	}
}

// Options configure a Server.
type Options struct {
	Substream    time.Duration // default 10 s
	WriteTimeout time.Duration // a TCP write stalled this long ends the connection (default 10 s)
	ResumeWindow time.Duration // a session whose TCP path dropped waits this long for a resume (default 30 s)
	// Listen makes the TCP listener (the lab's, with a congestion control of its
	// choice); default net.Listen.
	Listen func(network, addr string) (net.Listener, error)
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Substream <= 0 {
		o.Substream = 10 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.ResumeWindow <= 0 {
		o.ResumeWindow = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Server is the FDSP origin side: a TCP listener for the critical path and one UDP
// socket for every session's RTP path.
type Server struct {
	hub  *hub.Hub
	opts Options
	ln   net.Listener
	udp  *net.UDPConn

	mu       sync.Mutex
	sessions map[Token]*session
	wg       sync.WaitGroup

	// Counters (tests and /metrics-style logging).
	Rejected  atomic.Int64 // datagrams refused: malformed, unknown token, wrong source
	Bound     atomic.Int64 // sessions whose UDP peer was bound
	Active    atomic.Int64 // sessions with a TCP connection now
	TCPBytes  atomic.Int64
	UDPBytes  atomic.Int64
	UDPPacket atomic.Int64
	// Repair (NACKs, repair_server.go): packets sent again, and packets or
	// NACK frames refused (malformed, unknown, expired, not yet sent, another
	// SSRC) or left unsent because the session's repair budget was spent.
	Resent           atomic.Int64
	ResentBytes      atomic.Int64
	RepairIgnored    atomic.Int64
	RepairOverBudget atomic.Int64
}

// NewServer listens on the TCP and UDP addresses.
func NewServer(h *hub.Hub, tcpAddr, udpAddr string, o Options) (*Server, error) {
	listen := o.Listen
	if listen == nil {
		listen = net.Listen
	}
	ln, err := listen("tcp", tcpAddr)
	if err != nil {
		return nil, fmt.Errorf("fdsp: %w", err)
	}
	if udpAddr == "" {
		host, port, _ := net.SplitHostPort(ln.Addr().String())
		p, _ := strconv.Atoi(port)
		udpAddr = net.JoinHostPort(host, strconv.Itoa(p+1))
		if strings.HasSuffix(tcpAddr, ":0") {
			udpAddr = net.JoinHostPort(host, "0")
		}
	}
	ua, err := net.ResolveUDPAddr("udp", udpAddr)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("fdsp: %w", err)
	}
	uc, err := net.ListenUDP("udp", ua)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("fdsp: %w", err)
	}
	_ = uc.SetWriteBuffer(4 << 20)
	return &Server{hub: h, opts: o.withDefaults(), ln: ln, udp: uc, sessions: map[Token]*session{}}, nil
}

// Addr is the TCP address; UDPAddr the UDP one.
func (s *Server) Addr() net.Addr    { return s.ln.Addr() }
func (s *Server) UDPAddr() net.Addr { return s.udp.LocalAddr() }

// Sessions is the number of sessions kept (connected or waiting for a resume).
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Serve accepts sessions until ctx ends, then closes every connection and waits
// for their goroutines.
func (s *Server) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		<-ctx.Done()
		s.ln.Close()
		s.udp.Close()
	}()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.readUDP()
	}()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if ctx.Err() == nil {
				cancel()
			}
			break
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(ctx, c)
		}()
	}
	s.wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("fdsp: listener closed")
}

// readUDP takes bind datagrams: a token the server issued, from the address of the
// session's TCP peer, binds that session's UDP peer once. Anything else is counted
// and dropped.
func (s *Server) readUDP() {
	buf := make([]byte, 2048)
	for {
		n, from, err := s.udp.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		tok, err := ParseBind(buf[:n])
		if err != nil {
			s.Rejected.Add(1)
			continue
		}
		s.mu.Lock()
		ss := s.sessions[tok]
		s.mu.Unlock()
		if ss == nil || !ss.bind(from) {
			s.Rejected.Add(1)
			continue
		}
	}
}

// Attach serves FDSP beside the origin: the listener runs under host.Supervise and
// /api/streams lists each stream's endpoint under "fdsp"
// (fdsp://HOST:PORT/vod/NAME or /live/NAME; an empty HOST means the origin's).
func Attach(ctx context.Context, host transport.Host, cfg Config) (*Server, error) {
	if cfg.Listen == "" {
		return nil, nil
	}
	s, err := NewServer(host.Hub(), cfg.Listen, cfg.UDP, Options{Substream: cfg.Substream, Listen: cfg.listen(ctx), Logger: host.Log().With("transport", "fdsp")})
	if err != nil {
		return nil, err
	}
	h, port, _ := net.SplitHostPort(s.Addr().String())
	if ip := net.ParseIP(h); ip != nil && ip.IsUnspecified() {
		h = ""
	}
	base := "fdsp://" + net.JoinHostPort(h, port)
	if h == "" {
		base = "fdsp://:" + port
	}
	host.Advertise("fdsp", func(st hub.Stream) string {
		kind := "vod"
		if st.Live() {
			kind = "live"
		}
		return base + "/" + kind + "/" + st.Info().Name
	})
	for _, c := range s.collectors() {
		if err := host.RegisterMetrics(c); err != nil {
			host.Log().Warn("FDSP metrics are not on /metrics", "err", err)
		}
	}
	host.Supervise("fdsp", s.Serve)
	return s, nil
}

func newToken() (Token, uint32) {
	var t Token
	_, _ = rand.Read(t[:])
	var b [4]byte
	_, _ = rand.Read(b[:])
	return t, binary.BigEndian.Uint32(b[:])
}
