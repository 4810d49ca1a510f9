package wspush

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// SessionStats is what one session sent, counted as it was written.
type SessionStats struct {
	Stream   string
	Policy   string
	Duration time.Duration
	// Messages written, and the media chunks (or VOD segments) among them.
	Messages, Chunks int64
	// PayloadBytes are init segments and chunks; HeaderBytes the binary headers of
	// this protocol; FrameBytes the RFC 6455 frame headers of every message; TextBytes
	// the JSON text messages (ready, switch, skip, adapt, end).
	PayloadBytes, HeaderBytes, FrameBytes, TextBytes int64
	Switches, Skips, Lost                            int
	CloseCode                                        int
	CloseReason                                      string
}

// Overhead is what the session wrote on top of the media, per chunk.
func (s SessionStats) Overhead() int64 { return s.HeaderBytes + s.FrameBytes + s.TextBytes }

var (
	errEnd     = errors.New("end of stream")
	errClosed  = errors.New("session closed")
	errTooSlow = errors.New("too slow")
)

const tcpSampleEvery = 100 * time.Millisecond

type session struct {
	h    *Handler
	opts *Options
	conn *websocket.Conn
	net  net.Conn        // the hijacked connection (nil if unknown)
	raw  syscall.RawConn // its socket, for TCP_INFO (nil if not TCP)
	// plainTCP: bytes written to net reach the TCP socket unchanged (a bare
	// *net.TCPConn, or a wrapper that only replays bytes read ahead, such as the
	// lean HTTP/1.1 path's hand-off to net/http), so the fan-out may write the
	// socket directly. False for TLS.
	plainTCP bool
	src      hub.Stream // a live channel or an on-demand asset
	log      *slog.Logger
	q        *outQueue

	closeOnce   sync.Once
	closed      chan struct{}
	closeMu     sync.Mutex
	closeCode   int
	closeReason string
	finishing   atomic.Bool // VOD end queued: the writer stops when the queue is empty

	// Set up by setup, then owned by the feeder.
	start    Start
	policy   Policy
	adaptive bool           // more than one rung and not fixed: observe and decide
	ladder   []*media.Track // the adaptive kind (video), ascending bandwidth
	other    *media.Track   // the other kind (audio), nil if none
	relay    []*media.Track // a relay session's tracks, all sent at once (relay.go); nil otherwise
	index    map[string]uint8
	rung     int
	base     uint64
	segDur   time.Duration
	first    bool // the first segment is still to begin: its rung is the initial one
	lastTCP  time.Time
	tcp      *TCPStats
	skipping bool // dropping chunks until the next segment starts
	skipWhy  string
	skips    []time.Time
	lost     int // chunks dropped since the last skip message
	deadline time.Time
	status   atomic.Pointer[Status]

	st SessionStats // writer counters; switches and skips by the feeder

	// A fan-out viewer (fanout.go): its socket's write guard, and, under the
	// fan-out's lock, where it is in each track and the frames due in this batch.
	guard      *sockGuard
	fan        *fanout // nil: not (or no longer) in a fan-out
	vPos, aPos trackPos
	due        []item
	touched    bool
	held       bool        // the policy holds the segment being sent (fanBegin)
	closing    atomic.Bool // no new frames: the session is closing
}

func newSession(h *Handler, conn *websocket.Conn, nc net.Conn, src hub.Stream) *session {
	s := &session{h: h, opts: &h.opts, conn: conn, net: nc, src: src, q: newOutQueue(), closed: make(chan struct{}), first: true}
	s.log = h.opts.Logger.With("stream", src.Info().Name)
	under := nc
	if tc, ok := nc.(interface{ NetConn() net.Conn }); ok { // TLS, a hand-off wrapper: the TCP socket beneath
		under = tc.NetConn()
	}
	if tc, ok := under.(*net.TCPConn); ok {
		if rc, err := tc.SyscallConn(); err == nil {
			s.raw = rc
		}
		_, isTLS := nc.(*tls.Conn)
		s.plainTCP = !isTLS
	}
	return s
}

// closeWith closes the session once with a close code and reason. The close frame
// goes first (the handshake waits up to 5 s for the peer's answer); then the session's
// loops stop.
func (s *session) closeWith(code int, reason string) {
	s.closeOnce.Do(func() {
		s.closing.Store(true) // a fan-out viewer sends nothing after the close frame
		s.closeMu.Lock()
		s.closeCode, s.closeReason = code, reason
		s.closeMu.Unlock()
		_ = s.conn.Close(websocket.StatusCode(code), clip(reason, CloseReasonMaxLen-3))
		close(s.closed)
		s.q.close()
	})
}

// run serves the session until it ends. It ends with the origin through the
// handler's shutdown (which sends 1001), not through ctx, so the close frame is not
// raced by a torn-down connection.
func (s *session) run(ctx context.Context) {
	defer s.conn.CloseNow()
	began := time.Now()
	st, err := s.readStart()
	if err == nil {
		err = s.setup(st)
	}
	if err != nil {
		if !errors.Is(err, errClosed) { // a client that is gone gets no close frame
			s.closeWith(int(closeCodeOf(err)), err.Error())
		}
		s.finish(began)
		return
	}
	if s.fanOutEligible() {
		s.runFanOut(ctx, s.src.(*hub.Channel), began)
		return
	}
	s.h.active.Add(1)
	defer s.h.active.Add(-1)
	if s.raw != nil && s.opts.NotSentLowat > 0 {
		_ = setNotSentLowat(s.raw, s.opts.NotSentLowat)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		s.readLoop(sctx, cancel)
	}()
	writerDone := make(chan struct{})
	go func() {
		defer wg.Done()
		defer close(writerDone)
		if err := s.writeLoop(sctx); err != nil {
			cancel()
		}
	}()
	ferr := s.feed(sctx)
	switch {
	case errors.Is(ferr, errEnd):
		s.push(End{Type: "end"})
		s.finishing.Store(true)
		signal(s.q.wake)
		select {
		case <-writerDone:
		case <-sctx.Done():
		}
		s.closeWith(CloseNormal, "end of stream")
	case errors.Is(ferr, errTooSlow):
		s.closeWith(CloseTooSlow, ferr.Error())
	case s.h.base.Err() != nil:
		s.closeWith(CloseGoingAway, "origin shutting down")
	case sctx.Err() != nil, errors.Is(ferr, errClosed):
		// The client left, a write failed, or the session was closed already.
	default:
		s.log.Error("session failed", "err", ferr)
		s.closeWith(CloseInternal, "internal error; see the server log")
	}
	cancel()
	s.q.close()
	wg.Wait()
	s.finish(began)
}

func (s *session) finish(began time.Time) {
	s.st.Duration = time.Since(began)
	s.st.Stream = s.src.Info().Name
	if s.policy != nil {
		s.st.Policy = s.policy.Name()
	}
	s.closeMu.Lock()
	s.st.CloseCode, s.st.CloseReason = s.closeCode, s.closeReason
	s.closeMu.Unlock()
	s.log.Debug("session ended", "policy", s.st.Policy, "chunks", s.st.Chunks, "bytes", s.st.PayloadBytes,
		"switches", s.st.Switches, "skips", s.st.Skips, "close", s.st.CloseCode, "reason", s.st.CloseReason, "duration", s.st.Duration)
	s.h.ctr.sessionEnded(s.st.CloseCode)
	if f := s.opts.OnSessionEnd; f != nil {
		f(s.st)
	}
}

// readStart reads and parses the start message, within StartTimeout.
func (s *session) readStart() (Start, error) {
	timer := time.AfterFunc(s.opts.StartTimeout, func() {
		s.closeWith(ClosePolicy, fmt.Sprintf("no start message within %v", s.opts.StartTimeout))
	})
	defer timer.Stop()
	s.conn.SetReadLimit(MaxStartLen + 1)
	typ, r, err := s.conn.Reader(context.Background())
	if err != nil {
		return Start{}, fmt.Errorf("%w: %w", errClosed, err)
	}
	if typ != websocket.MessageText {
		return Start{}, fmt.Errorf("%w: the start message must be a text message", ErrStart)
	}
	bp := startBufs.Get().(*[MaxStartLen + 1]byte)
	defer startBufs.Put(bp)
	b, err := readAtMost(r, bp[:])
	if err != nil {
		return Start{}, fmt.Errorf("%w: %w", errClosed, err)
	}
	return s.h.starts.parse(b)
}

// startBufs hold start messages while they are read (one read each, no growing).
var startBufs = sync.Pool{New: func() any { return new([MaxStartLen + 1]byte) }}

// readAtMost reads r to its end into buf, or until buf is full: as
// io.ReadAll(io.LimitReader(r, len(buf))) does, without allocating.
func readAtMost(r io.Reader, buf []byte) ([]byte, error) {
	n := 0
	for n < len(buf) {
		k, err := r.Read(buf[n:])
		n += k
		if err == io.EOF {
			return buf[:n], nil
		}
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// setup chooses the tracks, the policy and the start segment.
func (s *session) setup(st Start) error {
	s.start = st
	info := s.src.Info()
	name := st.Policy
	if name == "" {
		name = s.opts.Channels[info.Name]
	}
	if name == "" {
		name = s.opts.Policy
	}
	pol, err := NewPolicy(name)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStart, err)
	}
	s.policy = pol
	playable := func(t *media.Track) bool {
		if len(st.Codecs) == 0 {
			return true
		}
		for _, c := range st.Codecs {
			if strings.HasPrefix(strings.ToLower(t.Codec), strings.ToLower(c)) {
				return true
			}
		}
		return false
	}
	var video, audio []*media.Track
	for _, t := range info.Tracks {
		if !playable(t) {
			continue
		}
		if t.Kind == media.Video {
			video = append(video, t)
		} else {
			audio = append(audio, t)
		}
	}
	s.ladder = video
	if len(s.ladder) == 0 {
		s.ladder, audio = audio, nil // audio only: adapt among the audio tracks
	}
	if len(s.ladder) == 0 {
		return fmt.Errorf("%w: no track of %q plays with codecs %v", ErrStart, info.Name, st.Codecs)
	}
	if st.MaxBitrate > 0 {
		var capped []*media.Track
		for _, t := range s.ladder {
			if int64(t.Bandwidth) <= st.MaxBitrate {
				capped = append(capped, t)
			}
		}
		if len(capped) == 0 {
			capped = s.ladder[:1] // nothing fits: the lowest rung rather than nothing
		}
		s.ladder = capped
	}
	// Named tracks: exactly the kinds named are sent (a video track alone means no
	// audio). Otherwise the first audio track goes with the ladder.
	if len(audio) > 0 && len(st.Tracks) == 0 {
		s.other = audio[0]
	}
	if st.Relay {
		return s.setupRelay(st, audio)
	}
	wantRung := -1
	for _, id := range st.Tracks {
		found := false
		for i, t := range s.ladder {
			if t.ID == id {
				wantRung, found = i, true
			}
		}
		for _, t := range audio {
			if t.ID == id {
				s.other, found = t, true
			}
		}
		if !found {
			return fmt.Errorf("%w: no playable track %q in %q", ErrStart, id, info.Name)
		}
	}
	if len(st.Tracks) > 0 && wantRung < 0 && s.other != nil {
		// Only an audio track named: send it alone.
		s.ladder, s.other = []*media.Track{s.other}, nil
		wantRung = 0
	}
	if len(s.ladder)+1 > 255 {
		return fmt.Errorf("%w: too many tracks", ErrStart)
	}
	s.index = map[string]uint8{}
	rungs := make([]Rung, len(s.ladder))
	for i, t := range s.ladder {
		s.index[t.ID] = uint8(i)
		rungs[i] = Rung{ID: t.ID, Bandwidth: t.Bandwidth}
	}
	if s.other != nil {
		s.index[s.other.ID] = uint8(len(s.ladder))
	}
	s.segDur = info.SegmentDuration
	if s.segDur <= 0 {
		s.segDur = 2 * time.Second
	}
	s.rung = pol.Init(rungs, s.segDur, s.now())
	if wantRung >= 0 {
		s.rung = wantRung
	}
	s.rung = min(max(s.rung, 0), len(s.ladder)-1)
	s.adaptive = len(s.ladder) > 1 && pol.Name() != PolicyFixed
	return nil
}

// now is the session's clock: the channel's for live, Options.Now for VOD.
func (s *session) now() time.Time {
	if c, ok := s.src.(*hub.Channel); ok {
		return c.Now()
	}
	return s.opts.Now()
}

// push queues a text message.
func (s *session) push(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	s.emit(item{text: b})
}

func (s *session) pushInit(t *media.Track, n uint64) error {
	b, err := s.src.Init(t.ID)
	if err != nil {
		return err
	}
	s.emit(item{kind: KindInit, track: s.index[t.ID], seq: n - s.base, data: b})
	return nil
}

// pushChunk queues chunk i of segment n of track t.
func (s *session) pushChunk(t *media.Track, n uint64, i int, last bool, c *media.Chunk) {
	seq := uint64(i)
	if i == 0 {
		seq = n - s.base
	}
	s.emit(item{
		kind: KindChunk, start: i == 0, end: last, track: s.index[t.ID], seq: seq, data: c.Data,
		media: true, primary: t.Kind == s.ladder[0].Kind && (s.relay == nil || t == s.ladder[0]), dur: t.Duration(c.Duration),
	})
}

// ready sends the ready message and the first init segments.
func (s *session) ready(start time.Duration, live bool, ast time.Time, dur time.Duration) error {
	info := s.src.Info()
	r := Ready{
		Type: "ready", Stream: info.Name, Live: live, SegmentDuration: s.segDur.Seconds(),
		Base: s.base, Start: start.Seconds(), Policy: s.policy.Name(),
	}
	if live {
		r.AvailabilityStart = ast.UTC().Format(time.RFC3339Nano)
	} else {
		r.Duration = dur.Seconds()
	}
	add := func(t *media.Track) {
		r.Tracks = append(r.Tracks, TrackInfo{
			Index: int(s.index[t.ID]), ID: t.ID, Kind: string(t.Kind), Codec: t.Codec, MimeType: t.MimeType(),
			Bandwidth: t.Bandwidth, Width: t.Width, Height: t.Height, Timescale: t.Timescale,
		})
	}
	if s.relay != nil {
		for _, t := range s.relay {
			add(t)
		}
		s.push(r)
		for _, t := range s.relay {
			if err := s.pushInit(t, s.base); err != nil {
				return err
			}
		}
		return nil
	}
	for _, t := range s.ladder {
		add(t)
	}
	if s.other != nil {
		add(s.other)
	}
	cur := s.ladder[s.rung]
	if cur.Kind == media.Video {
		r.Video = cur.ID
		if s.other != nil {
			r.Audio = s.other.ID
		}
	} else {
		r.Audio = cur.ID
	}
	if s.fan != nil {
		// Joining a fan-out (under its lock): viewers that join at the same segment
		// with the same tracks get the same bytes.
		b, err := s.fan.ready.encode(&r)
		if err != nil {
			return err
		}
		s.emit(item{text: b})
	} else {
		s.push(r)
	}
	if err := s.pushInit(cur, s.base); err != nil {
		return err
	}
	if s.other != nil {
		return s.pushInit(s.other, s.base)
	}
	return nil
}

// observe hands the policy a sample of the output buffer (and TCP_INFO when it asks,
// at most every 100 ms, or now when force).
func (s *session) observe(now time.Time, force bool) {
	if !s.adaptive && !(force && s.start.Stats) {
		return
	}
	backlog, _ := s.q.level()
	o := Observation{At: now, Backlog: backlog}
	if s.raw != nil && (s.policy.WantsTCP() || force && s.start.Stats) && (force || now.Sub(s.lastTCP) >= tcpSampleEvery) {
		if st, err := tcpStats(s.raw); err == nil {
			s.tcp, s.lastTCP = &st, now
			o.TCP = &st
		}
	}
	if s.adaptive {
		s.policy.Observe(o)
	}
}

// boundary is called before segment n starts: the policy picks its rung; a switch
// queues the switch message and the new init first. It returns whether to hold
// (not send) the segment.
func (s *session) boundary(n uint64, now time.Time) (hold bool, err error) {
	if s.first {
		s.first = false
		return false, nil
	}
	if !s.adaptive && !s.start.Stats {
		return false, nil
	}
	s.observe(now, true)
	d := Decision{Rung: s.rung, Reason: "fixed"}
	if s.adaptive {
		d = s.policy.Decide(now, s.rung)
	}
	d.Rung = min(max(d.Rung, 0), len(s.ladder)-1)
	if !d.Hold && d.Rung != s.rung {
		from, to := s.ladder[s.rung], s.ladder[d.Rung]
		s.push(Switch{Type: "switch", Kind: string(to.Kind), From: from.ID, To: to.ID, Segment: n, Reason: d.Reason})
		if err := s.pushInit(to, n); err != nil {
			return false, err
		}
		s.rung = d.Rung
		s.st.Switches++
		s.h.ctr.switches.Add(1)
	}
	if s.start.Stats {
		a := Adapt{Type: "adapt", Segment: n, Track: s.ladder[s.rung].ID, Reason: d.Reason, Estimate: d.Estimate}
		a.Backlog, _ = s.q.level()
		if s.tcp != nil {
			a.NotSent, a.RTT, a.MinRTT = s.tcp.NotSent, ms(s.tcp.RTT), ms(s.tcp.MinRTT)
			a.DeliveryRate, a.AppLimited = s.tcp.DeliveryRate, s.tcp.AppLimited
		}
		if d.Hold {
			a.Track = ""
		}
		s.push(a)
	}
	return d.Hold, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// beginSkip stops sending until the next keyframe; drop also discards the chunks
// queued (a slow reader), while a policy's hold lets them drain.
func (s *session) beginSkip(why string, drop bool) {
	if drop {
		s.lost += s.q.dropMedia()
		if s.fan != nil {
			s.lost += s.dropDueMedia()
		}
	}
	if !s.skipping {
		s.skipping, s.skipWhy = true, why
	}
}

// endSkip resumes at segment n after a skip or a hold: it tells the client and
// closes the session when skips come too often.
func (s *session) endSkip(n uint64, now time.Time) error {
	s.skipping = false
	s.push(Skip{Type: "skip", Segment: n, Lost: s.lost, Reason: s.skipWhy})
	s.st.Lost += s.lost
	s.st.Skips++
	s.h.ctr.skips.Add(1)
	s.h.ctr.lostMsg.Add(int64(s.lost))
	s.lost = 0
	recent := s.skips[:0]
	for _, t := range s.skips {
		if now.Sub(t) < s.opts.SkipWindow {
			recent = append(recent, t)
		}
	}
	s.skips = append(recent, now)
	if len(s.skips) > s.opts.MaxSkips && !strings.HasPrefix(s.skipWhy, "policy") {
		return fmt.Errorf("%w: reader too slow: skipped %d times within %v (%s)", errTooSlow, len(s.skips), s.opts.SkipWindow, s.skipWhy)
	}
	return nil
}

// feed produces the session's messages until the stream ends or the session does.
func (s *session) feed(ctx context.Context) error {
	// A channel is followed as it grows; an asset is paced from its start.
	switch src := s.src.(type) {
	case *hub.Channel:
		if s.relay != nil {
			return s.feedRelay(ctx, src)
		}
		return s.feedChannel(ctx, src)
	case *hub.Asset:
		return s.feedAsset(ctx, src)
	}
	return fmt.Errorf("unknown source %T", s.src)
}
