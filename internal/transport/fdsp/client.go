package fdsp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/avc"
)

// ClientOptions configure a client session.
type ClientOptions struct {
	Addr   string // the server's TCP address, host:port
	Stream string // "vod/NAME" or "live/NAME"
	Track  string // video track ID; empty: the highest rung
	Mode   Mode
	BP     uint8 // 0..100, or BPAuto
	// PlayoutDelay is how long after the first substream's TCP part is complete the
	// first access unit is due; every later one is due at its media time after that
	// (plus any rebuffering). Default 500 ms.
	PlayoutDelay time.Duration
	// Duration stops the session after this much time (0: to the end of the stream).
	Duration time.Duration
	Output   io.Writer // the received video as an Annex-B H.264 byte stream; nil: none
	// NewSink, if set, takes the played video and audio instead of Output; it is
	// called before the first access unit is written, with the audio's
	// AudioSpecificConfig (nil: the stream has no audio, or the server sent none).
	NewSink func(audioConfig []byte) (Sink, error)
	// Dial and DialUDP make the sockets (a lab namespace's); defaults: net.Dialer.
	Dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	DialUDP func(ctx context.Context, raddr string) (net.Conn, error)
	// Repair NACKs lost UDP packets while their deadline leaves time for a resend
	// (repair_client.go; our fix, not the FDSP study's design). Not in all-TCP mode.
	Repair bool
	// Reconnects bounds TCP reconnections after a drop (default 3).
	Reconnects int
	// Progress, if set, is called after each substream with the stats so far.
	Progress func(Stats)
	// SampleInterval is the period of Stats.Samples (0: 1 s; negative: none).
	SampleInterval time.Duration
	Logger         *slog.Logger
}

// Stats is what a client session measured.
type Stats struct {
	Mode string `json:"mode"`
	// BP is the mean BP (percent) over the substreams played; BPs lists them.
	BP  float64 `json:"bp"`
	BPs []int   `json:"bps"`
	// PLR is the share of the stream's packets lost: UDP packets lost or later than
	// their access unit's deadline, over the packets the video makes when all of it
	// goes over UDP (Packets, the same in every mode; TCP loses none). UDPLoss is
	// the same count over the UDP packets actually sent.
	PLR      float64 `json:"plr"`
	UDPLoss  float64 `json:"udp_loss"`
	Lost     int     `json:"lost_packets"`
	Late     int     `json:"late_packets"` // of Lost, arrived after the deadline
	Expected int     `json:"udp_packets"`
	Packets  int     `json:"packets"` // the video as pure UDP packets
	Dups     int     `json:"duplicate_packets"`
	Rejected int     `json:"rejected_datagrams"` // not this session's, or malformed
	// The client's UDP socket: the receive buffer asked for (from the stream's
	// rate, rcvbuf.go) and what the kernel granted (getsockopt's figure, twice the
	// usable share; 0: unknown), and the datagrams the kernel dropped on it before
	// the client read them — receive buffer full, or a bad checksum (a corrupting
	// link) — a part of Lost that the link did not lose on the wire (-1: unknown).
	RcvbufWanted int   `json:"udp_rcvbuf_wanted"`
	RcvbufBytes  int   `json:"udp_rcvbuf_bytes"`
	SocketDrops  int64 `json:"socket_drops"`
	// Rebuffering: a substream's TCP part not complete at its first access unit's
	// deadline. The first instance is the start-up delay (the study's convention).
	RebufferMS    float64 `json:"rebuffer_ms"`
	RebufferCount int     `json:"rebuffer_count"`
	StartupMS     float64 `json:"startup_delay_ms"`
	// AUs played; Whole: every byte arrived; Decodable: every slice's header arrived
	// (a decoder can place and conceal it). Decodable is the share of AUs.
	AUs          int     `json:"access_units"`
	Whole        int     `json:"whole_access_units"`
	DecodableAUs int     `json:"decodable_access_units"`
	Decodable    float64 `json:"decodable"`
	Substreams   int     `json:"substreams"`
	Skipped      int     `json:"skipped_substreams"` // never complete (their TCP part was cut)
	Reconnects   int     `json:"reconnects"`
	AudioFrames  int     `json:"audio_frames"`
	TCPBytes     int64   `json:"tcp_bytes"`
	UDPBytes     int64   `json:"udp_bytes"`
	PlayedS      float64 `json:"played_s"`
	SessionS     float64 `json:"session_s"`
	EndReason    string  `json:"end_reason"`
	// Samples is the buffer over time: media whose TCP part is complete, ahead of the
	// playhead, every SampleInterval.
	Samples []Sample `json:"samples"`
	// TCPParts is each substream's TCPReport as sent: how long its TCP part took
	// and how early (or late) it was complete.
	TCPParts []TCPReport `json:"tcp_parts"`
	// UDPParts is each played substream's UDP part: loss, lateness and how close
	// its packets came to their deadlines (udpparts.go).
	UDPParts []UDPPart `json:"udp_parts"`
	// Repair is what NACK-based repair did (nil: off).
	Repair *RepairStats `json:"repair,omitempty"`
	// StartedAt is the local wall time of the session's start (Samples' T = 0).
	StartedAt time.Time `json:"started_at"`
}

// Sample is one point of the buffer time series.
type Sample struct {
	T       float64 `json:"t"`        // session seconds
	BufferS float64 `json:"buffer_s"` // media seconds ready to play (TCP part complete) ahead of the playhead
	State   string  `json:"state"`    // startup, playing, stalled
	// PlayheadS is the presentation time being shown (the last access unit played,
	// 90 kHz media time in seconds, moving on by the wall clock within its duration);
	// absent before the first. A live stream's latency is its wall time against this.
	PlayheadS *float64 `json:"playhead_s,omitempty"`
}

// rxSub is one substream as it arrives.
type rxSub struct {
	hdr      Substream
	aus      []AU
	complete bool
	doneAt   time.Time
	frags    map[uint16]Fragment
	firstAt  time.Time // when its Substream frame arrived (the TCP part's first bytes)
	doneSeq  int       // sequence numbers below this belong to played access units
	// audio is kept only for a Sink (ClientOptions.NewSink), bounded by audioBytes.
	audio      []Audio
	audioBytes int
}

type client struct {
	opts  ClientOptions
	log   *slog.Logger
	start time.Time

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change the player waits for
	subs     map[uint32]*rxSub
	maxSeen  int64 // highest substream index whose header arrived, -1 before any
	skipTo   uint32
	ended    bool
	fatal    error
	conn     net.Conn
	sess     Session
	playing  uint32
	stats    Stats
	bpSum    int
	ps       *avc.ParameterSets
	psParams string
	state    string // startup, playing, stalled
	dts0     int64  // first substream's first DTS (90 kHz), -1 before
	readyEnd uint64 // end (90 kHz) of the newest substream whose TCP part is complete
	asc      []byte // the audio's AudioSpecificConfig (FrameAudioConfig)
	// The playout clock as the player set it, so the TCP reader can tell how early
	// a TCP part was (TCPReport): anchor is the first substream's completion, shift
	// the rebuffering so far.
	anchor time.Time
	shift  time.Duration
	// The last access unit played: its PTS (90 kHz), duration and deadline.
	shownPTS, shownDur uint64
	shownAt            time.Time
	udp                net.Conn   // nil in all-TCP mode
	drops0             int64      // the socket's drop count at the start
	wmu                sync.Mutex // one writer of client frames at a time (reports from two goroutines)
	sink               Sink       // from opts.NewSink at the first access unit; the player's only
	parts              map[uint32]*UDPPart
	playedAUs          map[uint32][]AU // the last keepPlayed played substreams' maps
	handshake          time.Duration   // Hello to Session: the first RTT estimate
	rep                *repairer       // nil: no repair
}

// Play runs a client session to the end of the stream, Duration, a fatal error or
// ctx, and returns what it measured.
func Play(ctx context.Context, o ClientOptions) (Stats, error) {
	if o.PlayoutDelay <= 0 {
		o.PlayoutDelay = 500 * time.Millisecond
	}
	if o.Reconnects == 0 {
		o.Reconnects = 3
	}
	if o.Dial == nil {
		o.Dial = (&net.Dialer{}).DialContext
	}
	if o.DialUDP == nil {
		o.DialUDP = func(ctx context.Context, raddr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "udp", raddr)
		}
	}
	if o.Output == nil {
		o.Output = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Mode == ModeTCP {
		o.Repair = false // nothing goes over UDP
	}
	c := &client{opts: o, log: o.Logger, start: time.Now(), changed: make(chan struct{}), subs: map[uint32]*rxSub{}, maxSeen: -1, state: "startup", dts0: -1}
	c.stats.Mode = o.Mode.String()
	c.stats.StartedAt = c.start
	if o.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Duration)
		defer cancel()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	conn, br, err := c.connect(ctx, Token{}, 0)
	if err != nil {
		return c.stats, err
	}
	var wg sync.WaitGroup
	var u net.Conn
	if o.Mode != ModeTCP {
		u, err = o.DialUDP(ctx, net.JoinHostPort(hostOf(o.Addr), strconv.Itoa(int(c.sess.UDPPort))))
		if err != nil {
			conn.Close()
			return c.stats, fmt.Errorf("fdsp: UDP: %w", err)
		}
		defer u.Close()
		c.udp, c.drops0 = u, socketDrops(u)
		c.growRcvbuf(rcvbufFor(0, o.PlayoutDelay))
		if o.Repair {
			c.rep = newRepairer(c.handshake)
			wg.Add(1)
			go func() { defer wg.Done(); c.repairLoop(ctx) }()
		}
		wg.Add(1)
		go func() { defer wg.Done(); c.readUDP(u) }()
		if err := c.bindUDP(ctx, u, br); err != nil {
			conn.Close()
			return c.stats, err
		}
	} else if err := expectBound(br); err != nil {
		conn.Close()
		return c.stats, err
	}
	wg.Add(1)
	go func() { defer wg.Done(); c.readTCP(ctx, conn, br) }()
	if o.SampleInterval >= 0 {
		wg.Add(1)
		go func() { defer wg.Done(); c.sample(ctx) }()
	}
	err = c.play(ctx)
	cancel()
	c.mu.Lock()
	if c.conn != nil {
		c.conn.Close()
	}
	c.mu.Unlock()
	if u != nil {
		c.mu.Lock()
		if d := socketDrops(u); d >= 0 && c.drops0 >= 0 {
			c.stats.SocketDrops = d - c.drops0
		} else {
			c.stats.SocketDrops = -1
		}
		c.mu.Unlock()
		u.Close() // ends readUDP
	}
	wg.Wait()
	st := c.finish(err)
	if st.EndReason != "error" {
		err = nil // the end, --duration or the caller's cancel: a normal end
	}
	return st, err
}

func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}

// connect dials TCP and runs the handshake up to the Session frame.
func (c *client) connect(ctx context.Context, tok Token, resume uint32) (net.Conn, *bufio.Reader, error) {
	conn, err := c.opts.Dial(ctx, "tcp", c.opts.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("fdsp: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	h := Hello{Mode: c.opts.Mode, BP: c.opts.BP, Token: tok, Resume: resume, Stream: c.opts.Stream, Track: c.opts.Track, Repair: c.opts.Repair}
	sent := time.Now()
	if err := WriteFrame(conn, FrameHello, h.Marshal()); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("fdsp: %w", err)
	}
	br := bufio.NewReaderSize(conn, 64<<10)
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	t, p, err := ReadFrame(br)
	if err == nil && t == FrameError {
		err = fmt.Errorf("server refused: %s", p)
	} else if err == nil && t != FrameSession {
		err = fmt.Errorf("%w: frame type %d before the session", ErrFormat, t)
	}
	var s Session
	if err == nil {
		s, err = ParseSession(p)
	}
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("fdsp: %w", err)
	}
	_ = conn.SetReadDeadline(time.Time{})
	c.mu.Lock()
	c.sess, c.conn = s, conn
	if c.handshake == 0 {
		c.handshake = time.Since(sent)
		// The kernel's smoothed RTT is better where it is known: Hello to
		// Session includes a retransmission when one of them was lost (at least
		// 200 ms), and an RTT too large starves repair (no NACK seems in time).
		if tp, ok := readTCPPath(conn); ok && tp.rtt > 0 {
			c.handshake = tp.rtt
		}
	}
	c.mu.Unlock()
	return conn, br, nil
}

func expectBound(br *bufio.Reader) error {
	t, p, err := ReadFrame(br)
	if err == nil && t == FrameError {
		err = fmt.Errorf("server refused: %s", p)
	} else if err == nil && t != FrameBound {
		err = fmt.Errorf("%w: frame type %d, want bound", ErrFormat, t)
	}
	if err != nil {
		return fmt.Errorf("fdsp: %w", err)
	}
	return nil
}

// bindUDP sends bind datagrams from the UDP socket until the server says the peer
// is bound (a datagram may be lost).
func (c *client) bindUDP(ctx context.Context, u net.Conn, br *bufio.Reader) error {
	done := make(chan error, 1)
	go func() { done <- expectBound(br) }()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	d := AppendBind(nil, c.sess.Token)
	for {
		_, _ = u.Write(d)
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// notify wakes the player; c.mu is held.
func (c *client) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// readTCP takes the critical path's frames, reconnecting with the session token
// (resuming at the next substream) when the connection drops before the end.
func (c *client) readTCP(ctx context.Context, conn net.Conn, br *bufio.Reader) {
	for {
		err := c.readFrames(br)
		conn.Close()
		c.mu.Lock()
		ended := c.ended
		c.mu.Unlock()
		if ended || ctx.Err() != nil {
			return
		}
		c.log.Info("fdsp: TCP path dropped", "err", err)
		conn, br, err = c.reconnect(ctx)
		if err != nil {
			c.mu.Lock()
			c.fatal = err
			c.notify()
			c.mu.Unlock()
			return
		}
	}
}

func (c *client) reconnect(ctx context.Context) (net.Conn, *bufio.Reader, error) {
	var last error
	for i := 0; i < c.opts.Reconnects; i++ {
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(time.Duration(i) * 300 * time.Millisecond):
		}
		c.mu.Lock()
		resume := uint32(c.maxSeen + 1)
		tok := c.sess.Token
		c.mu.Unlock()
		conn, br, err := c.connect(ctx, tok, resume)
		if err != nil {
			last = err
			continue
		}
		if err := expectBound(br); err != nil {
			conn.Close()
			last = err
			continue
		}
		c.mu.Lock()
		c.skipTo = resume // a substream cut short will never complete
		c.stats.Reconnects++
		c.notify()
		c.mu.Unlock()
		return conn, br, nil
	}
	return nil, nil, fmt.Errorf("fdsp: TCP path lost, %d reconnections failed: %w", c.opts.Reconnects, last)
}

// sub returns substream i's state, made on first sight; nil if i is outside the
// window a client keeps (already played, or far ahead: outside bytes cannot make
// it hold unbounded state). c.mu is held.
func (c *client) sub(i uint32) *rxSub {
	if i < c.playing || i > c.playing+4 {
		return nil
	}
	s := c.subs[i]
	if s == nil {
		s = &rxSub{frags: map[uint16]Fragment{}}
		c.subs[i] = s
	}
	return s
}

func (c *client) readFrames(br *bufio.Reader) error {
	var cur *rxSub
	for {
		t, p, err := ReadFrame(br)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.stats.TCPBytes += int64(len(p) + 5)
		switch t {
		case FrameSubstream:
			h, perr := ParseSubstream(p)
			if err = perr; err == nil {
				cur = c.sub(h.Index)
				if cur != nil {
					cur.hdr, cur.aus, cur.audio, cur.audioBytes = h, nil, nil, 0
					cur.firstAt = time.Now()
				}
				if int64(h.Index) > c.maxSeen {
					c.maxSeen = int64(h.Index)
				}
			}
		case FrameAU:
			a, perr := ParseAU(p)
			if err = perr; err == nil && cur != nil && len(cur.aus) < int(cur.hdr.AUs) {
				cur.aus = append(cur.aus, a)
			}
		case FrameAudio:
			c.stats.AudioFrames++
			c.keepAudio(cur, p)
		case FrameAudioConfig:
			if len(p) <= maxAudioConfig {
				c.asc = p
			}
		case FrameSubstreamOK:
			i, perr := parseU32(p)
			if err = perr; err == nil && cur != nil && i == cur.hdr.Index && len(cur.aus) == int(cur.hdr.AUs) {
				cur.complete, cur.doneAt = true, time.Now()
				if c.dts0 < 0 {
					c.dts0 = int64(cur.hdr.FirstDTS)
				}
				if c.udp != nil {
					c.growRcvbuf(rcvbufFor(substreamRate(cur.hdr, cur.aus), c.opts.PlayoutDelay))
				}
				tr := c.tcpReport(cur)
				c.stats.TCPParts = append(c.stats.TCPParts, tr)
				c.readyEnd = max(c.readyEnd, cur.hdr.FirstDTS+uint64(cur.hdr.Duration))
				c.notify()
				c.mu.Unlock()
				c.send(FrameTCPReport, tr.Marshal())
				c.mu.Lock()
			}
			cur = nil
		case FrameEnd:
			c.ended = true
			c.notify()
			c.mu.Unlock()
			return nil
		case FrameError:
			err = fmt.Errorf("fdsp: server: %s", p)
		}
		c.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// readUDP takes the RTP path's datagrams. The socket is connected to the server's
// UDP address, so the kernel drops other sources; the SSRC names the session.
func (c *client) readUDP(u net.Conn) {
	buf := make([]byte, 2048)
	for {
		n, err := u.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		f, err := ParseRTP(buf[:n])
		c.mu.Lock()
		switch {
		case err != nil || f.SSRC != c.sess.SSRC:
			c.stats.Rejected++
		default:
			c.stats.UDPBytes += int64(n)
			s := c.sub(f.Substream)
			now := time.Now()
			if f.Resent && c.rep != nil {
				c.rep.st.RepairBytes += int64(n)
			}
			switch {
			case s == nil:
				c.late(f) // its substream is played (or implausibly far ahead)
				if aus, ok := c.playedAUs[f.Substream]; ok {
					c.placeUDP(f, aus, true, now)
				}
			case int(f.Seq) < s.doneSeq:
				c.late(f)
				c.placeUDP(f, s.aus, true, now)
			default:
				if c.rep != nil {
					c.rep.arrived(f.Substream, f.Seq, f.Resent, now, c.udpCount)
				}
				if _, dup := s.frags[f.Seq]; dup {
					c.stats.Dups++
					if f.Resent && c.rep != nil {
						c.rep.st.RepairDup++
					}
				} else {
					f.Data = append([]byte(nil), f.Data...) // buf is reused
					s.frags[f.Seq] = f
					if f.Resent && c.rep != nil {
						c.rep.st.Repaired++
						c.part(f.Substream).Repaired++
					}
					if s.complete {
						c.placeUDP(f, s.aus, false, now)
					}
				}
			}
		}
		c.mu.Unlock()
	}
}

// sample records the buffer every SampleInterval until ctx ends.
func (c *client) sample(ctx context.Context) {
	every := c.opts.SampleInterval
	if every == 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.mu.Lock()
		buf := 0.0
		if c.dts0 >= 0 {
			buf = max(0, float64(int64(c.readyEnd)-c.dts0)/90000-c.stats.PlayedS)
		}
		c.stats.Samples = append(c.stats.Samples, Sample{T: time.Since(c.start).Seconds(), BufferS: buf, State: c.state, PlayheadS: c.playhead()})
		c.mu.Unlock()
	}
}

// growRcvbuf asks for a larger UDP receive buffer when n is more than asked so
// far (a stream's rate is learnt from its substreams); c.mu is held.
func (c *client) growRcvbuf(n int) {
	if c.udp == nil || n <= c.stats.RcvbufWanted {
		return
	}
	c.stats.RcvbufWanted = n
	c.stats.RcvbufBytes = setRcvbuf(c.udp, n)
}

// tcpReport measures substream s's TCP part, just complete; c.mu is held. Its
// deadline is the playout clock's for its first access unit: known once the
// start-up substream set the clock (the anchor's own part has none). A part that
// completes while an earlier one is still late will see that rebuffering added to
// its deadline later: its slack here is then an underestimate, the safe side.
func (c *client) tcpReport(s *rxSub) TCPReport {
	r := TCPReport{Substream: s.hdr.Index, TCPms: uint32(max(0, s.doneAt.Sub(s.firstAt).Milliseconds()))}
	if c.anchor.IsZero() {
		c.anchor = s.doneAt // as play sets it: the first complete substream starts the clock
		return r
	}
	due := c.anchor.Add(c.opts.PlayoutDelay + ticks90(s.hdr.FirstDTS-uint64(c.dts0)) + c.shift)
	r.SlackMS, r.SlackKnown = int32(due.Sub(s.doneAt).Milliseconds()), true
	return r
}

// send writes one client frame on the current TCP connection (best effort: a
// dropped connection is the reader's to notice).
func (c *client) send(t FrameType, payload []byte) {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn == nil {
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
	_ = WriteFrame(conn, t, payload)
}

// playhead is the presentation time being shown (seconds, 90 kHz media time): the
// last access unit played, advanced by the wall clock within its duration; nil
// before the first. c.mu is held.
func (c *client) playhead() *float64 {
	if c.shownAt.IsZero() {
		return nil
	}
	p := float64(c.shownPTS)/90000 + min(time.Since(c.shownAt).Seconds(), float64(c.shownDur)/90000)
	return &p
}
