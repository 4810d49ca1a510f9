// Package player is Streambed's headless player core: live and on-demand timelines, a
// buffer model that plays media in real time, pluggable ABR rules (package abr) and a
// QoE recorder (package qoe).
//
// The core is transport-agnostic and manifest-agnostic: it requests bytes through a
// Fetcher (and accepts pushed segments through a Receiver), and it reads manifests
// through a ManifestLoader (packages dash and hls). Time comes from a Clock, so a
// session under SimClock is deterministic. The player downloads and never decodes.
//
// Downloads are concurrent by default, as in dash.js (one ScheduleController per media
// type): each adaptation set being played (video, audio) is scheduled on its own, with
// at most one request in flight per set, so audio and video segments download at the
// same time — over HTTP/1.1 on separate connections, over HTTP/2 multiplexed on one —
// and a manifest reload may run beside them. Config.Sequential restores one request at
// a time for the whole player: the next segment of the adaptation set whose buffer ends
// earliest (video and audio alternate), as a simple player or an older study would.
// Either way one goroutine (the scheduler) owns the playback model; see schedule.go.
package player

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player/abr"
	"github.com/streambed/streambed/internal/player/qoe"
)

// Config configures a session. URL, Fetcher and Load are required.
type Config struct {
	URL     string
	Fetcher Fetcher
	Load    ManifestLoader
	ABR     abr.Rule // nil: throughput
	Clock   Clock    // nil: RealClock

	// Duration ends the session after this much clock time (0: until an on-demand
	// presentation ends; forever for live).
	Duration time.Duration
	// StartupBuffer is the level at which playback starts, ResumeBuffer the level at
	// which it resumes after a stall (0: one segment duration).
	StartupBuffer, ResumeBuffer time.Duration
	// MaxBuffer is the level above which the player stops requesting (0: 30 s).
	MaxBuffer time.Duration
	// LiveDelay is how far behind the live edge to start (0: the MPD's
	// suggestedPresentationDelay, else three segment durations).
	LiveDelay time.Duration
	// SampleInterval is the period of the QoE time series (0: 1 s).
	SampleInterval time.Duration
	// RequestTimeout bounds each request (0: only the session deadline bounds it), so a
	// dead link fails the request and the player retries instead of hanging.
	RequestTimeout time.Duration
	// PushWait is how long to wait for a pushed segment before requesting it, when the
	// Fetcher is also a Receiver and has delivered media segments already (0: do not
	// wait, only use what already arrived). Until the first delivery the player
	// requests at once: a push session may open only at the first request.
	PushWait time.Duration
	// Sequential downloads one segment at a time for the whole player (the adaptation
	// set whose buffer ends earliest next) instead of one at a time per adaptation set
	// concurrently (the default, as dash.js does). For comparisons.
	Sequential bool

	// For the report.
	Transport string
	LinkRate  float64 // bit/s, 0 when unknown

	Logger *slog.Logger // nil: discard
}

// Player plays one session. Create it with New, run it once with Run; Status may be
// called from other goroutines meanwhile.
type Player struct {
	cfg   Config
	clock Clock
	rule  abr.Rule
	log   *slog.Logger
	rec   *qoe.Recorder
	est   abr.Estimator

	mu sync.Mutex // guards the playback model below against Status
	// model
	manifest        *Manifest
	live            bool
	streams         []*stream
	state           playState
	playhead        time.Duration
	last            time.Time // clock time the model has been advanced to
	nextSample      time.Time
	endedAt         time.Time
	playingRep      *Representation
	startThreshold  time.Duration
	resumeThreshold time.Duration
	clockOffset     time.Duration // server − local, from UTCTiming
	clockSlack      time.Duration // how wrong clockOffset may be: half the UTCTiming round trip

	start      time.Time
	deadline   time.Time // zero: none
	lastLoad   time.Time
	reloadAt   time.Time // after a failed reload: no periodic reload before then (back-off)
	bufTarget  time.Duration
	liveDelay  time.Duration
	pending    []Delivery
	pushing    bool // a media segment has been delivered: PushWait applies
	deliveries <-chan Delivery
	chunks     *chunkInbox // chunk reports, when the transport makes them (chunk.go)
	ll         *lowLatency // latency steering of a low-latency live session (target.go)
	rate       float64     // playback rate: 1, or the steering's

	// The scheduler (schedule.go). Its goroutine sets these up and alone reads and
	// writes them, except that request goroutines run under opCtx and ops and post to
	// results.
	sim      simDriver          // the clock, when it is a SimClock the scheduler drives
	opCtx    context.Context    // parent of every request in flight
	stopOps  context.CancelFunc // cancels them at the end of the session
	ops      sync.WaitGroup     // goroutines of requests in flight
	results  chan *op           // requests completed, in the order they completed
	inbox    []*op              // completed, not yet handled
	reloadOp *op                // the manifest reload in flight
	// errRun counts failures in a row: of manifest reloads, or under Config.Sequential
	// of any request. A media segment that arrives resets it.
	errRun int
}

// New checks cfg and builds a player.
func New(cfg Config) (*Player, error) {
	if cfg.URL == "" || cfg.Fetcher == nil || cfg.Load == nil {
		return nil, errors.New("player: URL, Fetcher and Load are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	if cfg.ABR == nil {
		cfg.ABR = abr.Throughput{}
	}
	if cfg.MaxBuffer <= 0 {
		cfg.MaxBuffer = 30 * time.Second
	}
	if cfg.SampleInterval <= 0 {
		cfg.SampleInterval = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Player{cfg: cfg, clock: cfg.Clock, rule: cfg.ABR, log: cfg.Logger, rate: 1}
	if r, ok := cfg.Fetcher.(Receiver); ok {
		p.deliveries = r.Deliveries()
	}
	if r, ok := cfg.Fetcher.(ChunkReporter); ok {
		p.chunks = newChunkInbox()
		r.SetChunkSink(p.chunks.add)
	}
	return p, nil
}

// Status is a snapshot of a running session, for progress lines.
type Status struct {
	State       string
	Session     time.Duration // clock time since the start
	Position    time.Duration // playhead
	Buffer      time.Duration
	Rendition   string
	BitrateKbps float64
	Stalls      int
	StallTime   time.Duration
	Switches    int
	Bytes       int64
	Requests    int
	Throughput  float64        // estimate, bit/s
	Latency     *time.Duration // live, while playing
	Live        bool
	// Low-latency live: the target latency and the playback rate steering to it (0:
	// not steering).
	TargetLatency time.Duration
	PlaybackRate  float64
}

// Status extrapolates the model to now without changing it.
func (p *Player) Status() Status {
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Status{State: p.state.String(), Live: p.live, Throughput: p.est.Estimate()}
	if p.start.IsZero() {
		st.State = "loading"
		return st
	}
	st.Session = now.Sub(p.start)
	pos, lvl := p.playhead, p.minLevel()
	if p.state == statePlaying && now.After(p.last) {
		adv := min(p.scaleRate(now.Sub(p.last)), lvl)
		pos += adv
		lvl -= adv
	}
	st.Position, st.Buffer = pos, lvl
	if p.playingRep != nil {
		st.Rendition = p.playingRep.ID
		st.BitrateKbps = float64(p.playingRep.Bandwidth) / 1000
	}
	stalls, stallMS, switches, bytes, reqs := p.rec.Snapshot()
	st.Stalls, st.StallTime, st.Switches, st.Bytes, st.Requests = stalls, time.Duration(stallMS*float64(time.Millisecond)), switches, bytes, reqs
	if p.live && p.state == statePlaying && p.manifest != nil {
		l := now.Add(p.clockOffset).Sub(p.manifest.AvailabilityStart.Add(pos))
		st.Latency = &l
	}
	if p.ll != nil {
		st.TargetLatency, st.PlaybackRate = p.ll.target, p.rate
	}
	return st
}

// errStop ends the loop for a reason that is not a failure.
type errStop string

func (e errStop) Error() string { return string(e) }

const maxConsecutiveErrors = 8

// Run plays the session to its end and returns the QoE report. The report is valid
// (partial) even when err is not nil. Cancelling ctx ends the session normally, with
// end reason "canceled".
func (p *Player) Run(ctx context.Context) (qoe.Report, error) {
	p.mu.Lock()
	p.start = p.clock.Now()
	p.last = p.start
	p.nextSample = p.start
	if p.cfg.Duration > 0 {
		p.deadline = p.start.Add(p.cfg.Duration)
	}
	p.rec = qoe.NewRecorder(p.start, qoe.Options{URL: p.cfg.URL, Transport: p.cfg.Transport, ABR: p.rule.Name(), LinkRate: p.cfg.LinkRate})
	p.mu.Unlock()

	err := p.run(ctx)
	reason := "ended"
	var stop errStop
	switch {
	case err == nil:
	case errors.As(err, &stop):
		reason, err = string(stop), nil
	case ctx.Err() != nil:
		reason, err = "canceled", nil
	default:
		reason = "error"
	}
	p.mu.Lock()
	end := p.clock.Now()
	if !p.deadline.IsZero() && end.After(p.deadline) {
		end = p.deadline
	}
	if p.state == stateEnded && !p.endedAt.IsZero() {
		end = p.endedAt
	}
	p.advance(end)
	p.mu.Unlock()
	var rd, wr int64
	wc, known := p.cfg.Fetcher.(WireCounter)
	if known {
		rd, wr = wc.WireBytes()
	}
	rep := p.rec.Finish(end, reason, err, rd, wr, known)
	if pr, ok := p.cfg.Fetcher.(Protocoler); ok && rep.Protocol == "" {
		rep.Protocol = pr.Protocol()
	}
	return rep, err
}

// checkEnd advances the model to now and says whether the session is over.
func (p *Player) checkEnd(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.deadline.IsZero() && !now.Before(p.deadline) {
		p.advance(p.deadline)
		return errStop("duration")
	}
	p.advance(now)
	if p.state == stateEnded {
		return errStop("ended")
	}
	p.steer(now)
	return nil
}

// fetch sends one request through the Fetcher and records it.
func (p *Player) fetch(ctx context.Context, req SegmentRequest) (*Response, error) {
	fctx, cancel := ctx, context.CancelFunc(func() {})
	end := p.deadline
	if t := p.cfg.RequestTimeout; t > 0 {
		if rt := p.clock.Now().Add(t); end.IsZero() || rt.Before(end) {
			end = rt
		}
	}
	if !end.IsZero() {
		fctx, cancel = p.clock.WithDeadline(ctx, end)
	}
	defer cancel()
	resp, err := p.cfg.Fetcher.Fetch(fctx, req)
	if err != nil {
		if ctx.Err() == nil && fctx.Err() != nil {
			if !p.deadline.IsZero() && !p.clock.Now().Before(p.deadline) {
				return nil, errStop("duration")
			}
			return nil, fmt.Errorf("%s %s: no answer within %v: %w", req.Kind, req.URL, p.cfg.RequestTimeout, err)
		}
		return nil, fmt.Errorf("%s %s: %w", req.Kind, req.URL, err)
	}
	isMedia := req.Kind == RequestMedia || req.Kind == RequestInit
	p.rec.Request(resp.PayloadBytes, resp.OverheadBytes, isMedia, false, resp.Duration(), resp.Protocol)
	return resp, nil
}

// failed counts a failed request and returns how long to wait before trying again;
// more than a few failures in a row (run counts them) end the session.
func (p *Player) failed(ctx context.Context, run *int, what string, err error) (time.Duration, error) {
	var stop errStop
	if errors.As(err, &stop) || ctx.Err() != nil {
		return 0, err
	}
	p.rec.Error()
	*run++
	notYet := errors.Is(err, media.ErrNotYet) || errors.Is(err, media.ErrNotFound)
	limit := maxConsecutiveErrors
	if p.live && notYet {
		limit = 4 * maxConsecutiveErrors // a live edge a little ahead of the origin
	}
	if *run > limit {
		return 0, fmt.Errorf("%s: giving up after %d failures: %w", what, *run, err)
	}
	p.log.Debug("request failed; retrying", "what", what, "err", err)
	backoff := min(time.Duration(*run)*100*time.Millisecond, time.Second)
	if p.live && notYet {
		backoff = min(max(p.nominal()/10, 50*time.Millisecond), 500*time.Millisecond)
	}
	return backoff, nil
}

// load fetches and installs the manifest for the first time.
func (p *Player) load(ctx context.Context) error {
	m, err := p.cfg.Load(ctx, p.fetch, p.cfg.URL, p.clock.Now())
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	if err := m.Validate(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.manifest = m
	p.live = m.Live
	p.lastLoad = p.clock.Now()
	p.rec.SetLive(m.Live)
	return nil
}

// install replaces the manifest with a reloaded one and rebinds the streams to it.
// Callers hold p.mu.
func (p *Player) install(m *Manifest) {
	if !m.Live {
		// A live presentation that ended (the MPD turned static) keeps its availability
		// start for latency; its segments are now all listed.
		m.AvailabilityStart = p.manifest.AvailabilityStart
	}
	p.manifest = m
	p.live = m.Live
	for _, s := range p.streams {
		set := m.Set(s.kind)
		if set == nil {
			s.done = true
			continue
		}
		cur := ""
		if s.current >= 0 && s.current < len(s.set.Representations) {
			cur = s.set.Representations[s.current].ID
		}
		s.set = set
		s.current = -1
		for i, r := range set.Representations {
			if r.ID == cur {
				s.current = i
			}
		}
	}
}

// setup creates the streams and places the playhead. Callers hold p.mu.
func (p *Player) setup() error {
	m := p.manifest
	var sets []*AdaptationSet
	if v := m.Set(media.Video); v != nil {
		sets = append(sets, v)
	}
	if a := m.Set(media.Audio); a != nil {
		sets = append(sets, a)
	}
	if len(sets) == 0 {
		sets = m.Sets[:1]
	}
	p.streams = nil
	for i, set := range sets {
		p.streams = append(p.streams, &stream{kind: set.Kind, set: set, primary: i == 0, current: -1, inited: map[string]bool{}})
	}
	seg := p.nominal()
	p.startThreshold = p.cfg.StartupBuffer
	if p.startThreshold <= 0 {
		p.startThreshold = seg
	}
	p.resumeThreshold = p.cfg.ResumeBuffer
	if p.resumeThreshold <= 0 {
		p.resumeThreshold = seg
	}
	p.startThreshold = min(p.startThreshold, p.cfg.MaxBuffer)
	p.resumeThreshold = min(p.resumeThreshold, p.cfg.MaxBuffer)
	p.bufTarget = p.cfg.MaxBuffer
	if p.live {
		p.liveDelay = p.cfg.LiveDelay
		if p.liveDelay <= 0 {
			p.liveDelay = m.SuggestedPresentationDelay
		}
		if p.liveDelay <= 0 {
			p.liveDelay = 3 * seg
		}
		// Never wait for more than the delay allows.
		p.startThreshold = min(p.startThreshold, max(p.liveDelay-seg, seg/2))
		p.setupLowLatency()
		if p.ll != nil {
			// Chunk by chunk, a browser starts as soon as the playhead has media ahead.
			p.liveDelay = p.ll.target
			if p.cfg.StartupBuffer <= 0 {
				p.startThreshold = min(max(p.ll.target/4, 40*time.Millisecond), 250*time.Millisecond)
			}
		}
		p.bufTarget = min(p.bufTarget, p.liveDelay)
		p.resumeThreshold = min(p.resumeThreshold, p.startThreshold)
	}
	start, end, err := p.startAt()
	if err != nil {
		return err
	}
	p.playhead = start
	for _, s := range p.streams {
		s.end = end
	}
	if p.ll != nil {
		p.ll.floor = end
	}
	return nil
}

// startAt is where playback starts (the playhead) and where the buffers start (the
// first segment's start): the same position, except in a low-latency session, which
// starts in the middle of a segment it gets from the segment's start.
func (p *Player) startAt() (playhead, end time.Duration, err error) {
	start, err := p.startPosition()
	if err != nil || p.ll == nil {
		return start, start, err
	}
	ix := p.streams[0].set.Representations[0].Index
	lo := time.Duration(0)
	if first, ok := ix.First(); ok && !ix.IsTemplate() {
		lo = first.Start
	}
	if tsbd := p.manifest.TimeShiftBufferDepth; tsbd > 0 && ix.IsTemplate() {
		lo = max(p.serverNow().Sub(p.manifest.AvailabilityStart)-tsbd, ix.PeriodStart)
	}
	pos, seg, ok := p.lowLatencyStart(lo)
	if !ok {
		return start, start, nil
	}
	return pos, seg.Start, nil
}

// nominal is the nominal segment duration of the primary adaptation set.
func (p *Player) nominal() time.Duration {
	if p.manifest == nil {
		return 2 * time.Second
	}
	set := p.manifest.Sets[0]
	if len(p.streams) > 0 {
		set = p.streams[0].set
	}
	if d := set.Representations[0].Index.NominalDuration(); d > 0 {
		return d
	}
	if p.manifest.MaxSegmentDuration > 0 {
		return p.manifest.MaxSegmentDuration
	}
	return 2 * time.Second
}

// startPosition is where playback begins: the first segment on demand; for live,
// the segment that holds (live edge − delay), within the DVR window.
func (p *Player) startPosition() (time.Duration, error) {
	ix := p.streams[0].set.Representations[0].Index
	first, ok := ix.First()
	if !p.live {
		if !ok {
			return 0, fmt.Errorf("no segments: %w", media.ErrInvalidMedia)
		}
		return first.Start, nil
	}
	now := p.serverNow()
	last, ok := ix.Last(now)
	if !ok {
		return 0, fmt.Errorf("live stream has no available segment yet (availability start %s): %w",
			p.manifest.AvailabilityStart.UTC().Format(time.RFC3339), media.ErrNotYet)
	}
	edge := last.End()
	target := edge - p.liveDelay
	lo := first.Start
	if ix.IsTemplate() {
		lo = 0
		if tsbd := p.manifest.TimeShiftBufferDepth; tsbd > 0 {
			lo = max(now.Sub(p.manifest.AvailabilityStart)-tsbd, 0)
		}
		lo = max(lo, ix.PeriodStart)
	}
	target = max(target, lo)
	seg, ok := ix.Next(target)
	if !ok {
		seg = last
	}
	// Starting at the boundary of the segment that holds the target means starting up to
	// a segment earlier than asked; take the next boundary when it is closer.
	if target-seg.Start > seg.Duration/2 && seg.End() <= edge-seg.Duration {
		seg, _ = ix.Next(seg.End())
	}
	return seg.Start, nil
}

// rejoin drops the buffer and restarts at the live edge minus the delay (after the
// player fell out of the DVR window). It counts as a stall. What is in flight is
// dropped when it completes. It reports false when there is no live edge to rejoin.
// Callers hold p.mu.
func (p *Player) rejoin() bool {
	start, end, err := p.startAt()
	if err != nil {
		return false
	}
	now := p.clock.Now()
	p.advance(now)
	if p.state == statePlaying {
		p.state = stateStalled
		p.rec.StallStarted(now)
	}
	p.playhead = start
	if p.ll != nil {
		p.ll.floor = end
	}
	for _, s := range p.streams {
		s.end, s.queue = end, nil
		s.next, s.wakeAt, s.onEvent, s.onReload, s.chunked = nil, time.Time{}, false, false, false
	}
	return true
}

// serverNow is local clock time corrected by the UTCTiming offset.
func (p *Player) serverNow() time.Time { return p.clock.Now().Add(p.clockOffset) }

// Offset returns the measured server-minus-local clock offset.
func (p *Player) Offset() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.clockOffset
}

// syncClock reads the first usable UTCTiming source and records the offset.
func (p *Player) syncClock(ctx context.Context) {
	for _, u := range p.manifest.UTCTiming {
		var off time.Duration
		slack := time.Duration(-1) // unknown
		switch {
		case strings.Contains(u.Scheme, ":http-iso:") || strings.Contains(u.Scheme, ":http-xsdate:"):
			t0 := p.clock.Now()
			resp, err := p.fetch(ctx, SegmentRequest{Kind: RequestTime, URL: u.Value, KeepBody: true})
			if err != nil {
				p.rec.Error()
				p.log.Warn("UTCTiming source failed", "url", u.Value, "err", err)
				continue
			}
			t1 := p.clock.Now()
			st, err := ParseISOTime(string(resp.Body))
			if err != nil {
				p.log.Warn("UTCTiming answer is not a time", "url", u.Value, "err", err)
				continue
			}
			off = st.Sub(t0.Add(t1.Sub(t0) / 2))
			slack = t1.Sub(t0) / 2
			p.mu.Lock()
			p.clockSlack = slack
			p.mu.Unlock()
		case strings.Contains(u.Scheme, ":direct:"):
			st, err := ParseISOTime(u.Value)
			if err != nil {
				continue
			}
			off = st.Sub(p.lastLoad)
		default:
			continue
		}
		p.mu.Lock()
		p.clockOffset = off
		p.mu.Unlock()
		p.rec.ClockOffset(off, slack, u.Scheme)
		return
	}
}

// ParseISOTime parses an xs:dateTime / ISO 8601 time as UTCTiming sources send it.
func ParseISOTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05.999999999Z0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("not an ISO 8601 time: %q", s)
}

// drainDeliveries accepts every delivery that has arrived, without waiting, and
// reports whether there was any.
func (p *Player) drainDeliveries() bool {
	got := false
	for p.deliveries != nil {
		select {
		case d, ok := <-p.deliveries:
			p.received(d, ok)
			got = true
		default:
			return got
		}
	}
	return got
}

// received handles what the deliveries channel gave: a delivery, or its end.
func (p *Player) received(d Delivery, ok bool) {
	if ok {
		p.accept(d)
	} else {
		p.deliveries = nil
	}
	p.interrupted()
}

// accept records a delivery and keeps it until the player wants it.
func (p *Player) accept(d Delivery) {
	if d.Response == nil {
		return
	}
	d.Response.Pushed = true
	isMedia := d.Request.Kind == RequestMedia || d.Request.Kind == RequestInit
	p.rec.Request(d.Response.PayloadBytes, d.Response.OverheadBytes, isMedia, true, d.Response.Duration(), d.Response.Protocol)
	if d.Request.Kind == RequestInit {
		for _, s := range p.streams {
			for _, r := range s.set.Representations {
				if r.ID == d.Request.TrackID || (r.InitURL != "" && r.InitURL == d.Request.URL) {
					s.inited[r.ID] = true
				}
			}
		}
		return
	}
	if d.Request.Kind != RequestMedia {
		return
	}
	p.pushing = true
	const maxPending = 64 // a transport pushing far ahead must not grow memory unboundedly
	if len(p.pending) >= maxPending {
		p.pending = p.pending[1:]
	}
	p.pending = append(p.pending, d)
}

// takeDelivery returns a delivered segment matching req: the same URL, or the same
// number in any representation of the stream's adaptation set.
func (p *Player) takeDelivery(s *stream, req SegmentRequest) (*Representation, *Response) {
	for i, d := range p.pending {
		var rep *Representation
		if d.Request.URL != "" && d.Request.URL == req.URL {
			rep = s.set.Representations[max(indexByID(s.set, req.TrackID), 0)]
		} else if d.Request.Number == req.Number && d.Request.TrackID != "" {
			if j := indexByID(s.set, d.Request.TrackID); j >= 0 {
				rep = s.set.Representations[j]
			}
		}
		if rep != nil {
			p.pending = append(p.pending[:i], p.pending[i+1:]...)
			return rep, d.Response
		}
	}
	return nil, nil
}

func indexByID(set *AdaptationSet, id string) int {
	for i, r := range set.Representations {
		if r.ID == id {
			return i
		}
	}
	return -1
}
