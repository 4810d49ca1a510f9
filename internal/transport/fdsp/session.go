package fdsp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/transport/pars"
)

// session is one client's stream: it outlives a dropped TCP connection for
// ResumeWindow so the client can reconnect with its token and go on at the next
// substream, its UDP peer still bound.
type session struct {
	srv   *Server
	token Token
	ssrc  uint32
	mode  Mode
	bp    adaptiveBP
	tcpIP netip.Addr // the TCP peer's address: only it may bind the UDP peer
	rd    *mediaReader
	rs    *resender // the UDP packets a NACK may ask for again

	mu     sync.Mutex
	peer   netip.AddrPort
	bound  chan struct{} // closed when peer is set
	busy   bool          // a TCP connection is running the session
	expire *time.Timer
}

// bind sets the session's UDP peer from a bind datagram; false: refused (another
// address than the bound one, or than the TCP peer's).
func (ss *session) bind(from netip.AddrPort) bool {
	from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.peer.IsValid() {
		return from == ss.peer // a repeated bind from the same place is harmless
	}
	if from.Addr() != ss.tcpIP {
		return false
	}
	ss.peer = from
	close(ss.bound)
	ss.srv.Bound.Add(1)
	return true
}

// handle runs one TCP connection: the handshake, then the session until the
// connection or the server ends.
func (s *Server) handle(ctx context.Context, c net.Conn) {
	defer c.Close()
	log := s.opts.Logger.With("client", c.RemoteAddr().String())
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	fail := func(err error) {
		log.Info("fdsp session refused", "err", err)
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		_ = WriteFrame(c, FrameError, []byte(err.Error()))
	}
	t, p, err := ReadFrame(br)
	if err != nil {
		return
	}
	if t != FrameHello {
		fail(fmt.Errorf("%w: first frame is type %d, not hello", ErrFormat, t))
		return
	}
	h, err := ParseHello(p)
	if err != nil {
		fail(err)
		return
	}
	ss, err := s.open(h, c)
	if err != nil {
		fail(err)
		return
	}
	defer s.release(ss)
	_ = c.SetReadDeadline(time.Time{})
	cw := &countingWriter{c: c, timeout: s.opts.WriteTimeout, n: &s.TCPBytes}
	udpPort := uint16(s.udp.LocalAddr().(*net.UDPAddr).Port)
	if err := WriteFrame(cw, FrameSession, Session{Token: ss.token, SSRC: ss.ssrc, UDPPort: udpPort, SubstreamMS: uint32(s.opts.Substream.Milliseconds())}.Marshal()); err != nil {
		return
	}
	if ss.mode != ModeTCP {
		select {
		case <-ss.bound:
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Second):
			fail(errors.New("no bind datagram with the session token within 10 s"))
			return
		}
	}
	if err := WriteFrame(cw, FrameBound, nil); err != nil {
		return
	}
	s.Active.Add(1)
	defer s.Active.Add(-1)
	log.Info("fdsp session", "stream", h.Stream, "mode", ss.mode.String(), "tcp_cc", pars.CongestionControl(c))
	err = ss.run(ctx, br, cw, h.Resume)
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Debug("fdsp connection ended", "err", err)
	}
}

// open makes a new session for a zero token, or takes up the one a token names.
func (s *Server) open(h Hello, c net.Conn) (*session, error) {
	ra, _ := netip.ParseAddrPort(c.RemoteAddr().String())
	ip := ra.Addr().Unmap()
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.Token != (Token{}) {
		ss := s.sessions[h.Token]
		if ss == nil {
			return nil, errors.New("unknown or expired session token")
		}
		ss.mu.Lock()
		defer ss.mu.Unlock()
		if ss.busy || ip != ss.tcpIP {
			return nil, errors.New("session token in use or from another address")
		}
		ss.busy = true
		if ss.expire != nil {
			ss.expire.Stop()
		}
		return ss, nil
	}
	kind, name, ok := strings.Cut(h.Stream, "/")
	if !ok || (kind != "vod" && kind != "live") {
		return nil, fmt.Errorf("stream %q: want vod/NAME or live/NAME", h.Stream)
	}
	st, err := s.hub.Stream(name, kind == "live")
	if err != nil {
		return nil, err
	}
	rd, err := newMediaReader(st, h.Track, s.opts.Substream)
	if err != nil {
		return nil, err
	}
	tok, ssrc := newToken()
	ss := &session{srv: s, token: tok, ssrc: ssrc, mode: h.Mode, tcpIP: ip, rd: rd, bound: make(chan struct{}), busy: true, rs: newResender()}
	ss.bp.init(h.BP, h.Repair)
	s.sessions[tok] = ss
	return ss, nil
}

// release ends a connection's hold on the session: it waits ResumeWindow for a
// resume, then is forgotten.
func (s *Server) release(ss *session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.busy = false
	ss.expire = time.AfterFunc(s.opts.ResumeWindow, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		ss.mu.Lock()
		defer ss.mu.Unlock()
		if !ss.busy {
			delete(s.sessions, ss.token)
		}
	})
}

// countingWriter writes with a deadline (a client that stops reading ends its own
// connection, not the server) and counts bytes.
type countingWriter struct {
	c       net.Conn
	timeout time.Duration
	n       *atomic.Int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	_ = w.c.SetWriteDeadline(time.Now().Add(w.timeout))
	n, err := w.c.Write(p)
	w.n.Add(int64(n))
	return n, err
}

// job is one substream handed from the TCP writer to the UDP sender.
type job struct {
	hdr Substream
	aus []plannedAU
}

// run sends substreams: the TCP writer sends substream k+1's critical part while
// the UDP sender plays substream k's datagrams at the media rate.
func (ss *session) run(ctx context.Context, br *bufio.Reader, w *countingWriter, resume uint32) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan *job)
	readerDone, udpDone := make(chan struct{}), make(chan struct{})
	go func() { // client reports, and the end of the connection
		defer close(readerDone)
		for {
			t, p, err := ReadFrame(br)
			if err != nil {
				cancel(fmt.Errorf("reading the client: %w", err))
				return
			}
			switch t {
			case FrameReport:
				if r, err := ParseReport(p); err == nil {
					ss.bp.report(r)
				}
			case FrameTCPReport:
				if r, err := ParseTCPReport(p); err == nil {
					if tp, ok := readTCPPath(w.c); ok {
						ss.bp.observePath(tp)
					}
					ss.bp.tcpReport(r)
				}
			case FrameNACK:
				ss.repair(p)
			}
		}
	}()
	go func() {
		defer close(udpDone)
		if err := ss.sendUDP(ctx, jobs); err != nil {
			cancel(err)
		}
	}()
	err := ss.writeTCP(ctx, w, jobs, resume)
	close(jobs)
	<-udpDone // the UDP sender plays the last substream out
	if err == nil && ctx.Err() == nil {
		err = WriteFrame(w, FrameEnd, []byte("end of stream"))
		if err == nil {
			// The client closes after the end; give it a moment, then close anyway.
			select {
			case <-readerDone:
			case <-time.After(5 * time.Second):
			}
		}
	}
	if err == nil {
		err = context.Cause(ctx)
	}
	cancel(err)
	w.c.Close() // unblocks the report reader
	<-readerDone
	return err
}

func (ss *session) writeTCP(ctx context.Context, w *countingWriter, jobs chan<- *job, resume uint32) error {
	if ss.rd.asc != nil {
		if err := WriteFrame(w, FrameAudioConfig, ss.rd.asc); err != nil {
			return err
		}
	}
	for {
		sub, err := ss.rd.Next(ctx)
		if errors.Is(err, errEnd) || errors.Is(err, media.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if sub.index < resume {
			continue
		}
		bp := ss.bp.plan(sub.index, ticks90(uint64(sub.dur)), func(bp int) int { return tcpBytes(sub, ss.rd.ps, ss.mode, bp) })
		if ss.bp.auto && ss.srv.opts.Logger.Enabled(ctx, slog.LevelDebug) {
			in := ss.bp.inputs()
			ss.srv.opts.Logger.Debug("fdsp adaptive BP", "substream", sub.index, "bp", bp, "goodput_kB_s", int(in.Measured/1e3),
				"loss_limited_kB_s", int(in.LossLimited/1e3), "loss", in.Loss, "rtt", in.RTT, "window", in.Window, "ceiling", in.Ceiling, "tcp_retrans", in.Retrans)
		}
		hdr, aus := plan(sub, ss.rd.ps, ss.mode, bp, ss.ssrc)
		bw := bufio.NewWriterSize(w, 64<<10)
		if err := WriteFrame(bw, FrameSubstream, hdr.Marshal()); err != nil {
			return err
		}
		for i := range aus {
			if err := WriteFrame(bw, FrameAU, aus[i].au.Marshal()); err != nil {
				return err
			}
		}
		for _, a := range sub.audio {
			if err := WriteFrame(bw, FrameAudio, a.Marshal()); err != nil {
				return err
			}
		}
		if err := WriteFrame(bw, FrameSubstreamOK, u32Payload(hdr.Index)); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		select {
		case jobs <- &job{hdr: hdr, aus: aus}: // waits while the previous one plays
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// sendUDP plays each substream's datagrams at the media rate: an access unit's
// packets spread over its duration, substreams back to back on one media clock that
// never runs ahead of the TCP part it needs. At the end it sends FrameEnd on TCP.
func (ss *session) sendUDP(ctx context.Context, jobs <-chan *job) error {
	ss.mu.Lock()
	peer := ss.peer
	ss.mu.Unlock()
	var next time.Time // where the media clock is
	for j := range jobs {
		ss.rs.begin(j)
		sent := 0
		start := time.Now()
		if next.After(start) {
			start = next
		}
		for _, a := range j.aus {
			at := start.Add(ticks90(a.au.DTS - j.hdr.FirstDTS))
			step := ticks90(uint64(a.au.Duration)) / time.Duration(max(1, len(a.datagrams)))
			for i, d := range a.datagrams {
				if err := sleepUntil(ctx, at.Add(time.Duration(i)*step)); err != nil {
					return err
				}
				if _, err := ss.srv.udp.WriteToUDPAddrPort(d, peer); err == nil {
					ss.srv.UDPBytes.Add(int64(len(d)))
					ss.srv.UDPPacket.Add(1)
				}
				sent++
				ss.rs.sentUpTo(j.hdr.Index, sent)
			}
		}
		next = start.Add(ticks90(uint64(j.hdr.Duration)))
		if err := sleepUntil(ctx, next); err != nil {
			return err
		}
	}
	return nil
}

func ticks90(t uint64) time.Duration { return time.Duration(t) * time.Second / 90000 }

// sleepUntil waits for t (at once if it has passed) or ctx.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= time.Millisecond {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
