package player

import (
	"context"
	"errors"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player/abr"
)

// The scheduler. One goroutine owns the playback model and decides what to request;
// each request runs in a goroutine of its own and reports back on p.results. Every
// stream (adaptation set) has its own schedule — at most one request in flight, a
// time before which it plans nothing (full buffer, segment not yet available, retry
// back-off), or a pushed segment it waits for — as dash.js has one ScheduleController
// per media type. So audio and video download concurrently; with Config.Sequential
// only one request is in flight in the whole player, for the stream whose buffer ends
// earliest. The manifest reload is one more request, beside the streams'.
//
// Under SimClock the scheduler drives simulated time (see SimClock): starting a
// request waits until its goroutine sleeps on the clock or returns, and time moves
// only when nothing else can happen at the current instant, so a session is exactly
// repeatable however the Go runtime schedules goroutines.

type opKind int

const (
	opInit opKind = iota
	opMedia
	opManifest
)

// op is one request (for a manifest, one load) running in its own goroutine.
type op struct {
	kind opKind
	s    *stream // nil for a manifest
	plan *plan   // init and media
	// Written by the goroutine before it posts the op to p.results.
	resp *Response
	m    *Manifest
	err  error
}

// plan is the next segment of a stream, chosen once: the init segment (when it is
// missing) and then the media segment, of the representation the ABR rule chose.
type plan struct {
	rep       *Representation
	seg       Segment
	pushUntil time.Time // waiting until then for a delivery (Config.PushWait); zero: not waiting
	restart   bool      // a switch starting at an independent entry before the buffered end
}

func (pl *plan) request() SegmentRequest {
	return SegmentRequest{Kind: RequestMedia, URL: pl.seg.URL, TrackID: pl.rep.ID, Number: pl.seg.Number, Time: pl.seg.Time}
}

// run loads the manifest, then schedules until the session ends.
func (p *Player) run(ctx context.Context) error {
	if err := p.load(ctx); err != nil {
		return err
	}
	if p.live {
		p.syncClock(ctx)
	}
	p.mu.Lock()
	err := p.setup()
	p.mu.Unlock()
	if err != nil {
		return err
	}
	if d, ok := p.clock.(simDriver); ok {
		if err := d.drive(true); err != nil {
			return err
		}
		p.sim = d
		defer d.drive(false)
	}
	p.results = make(chan *op, len(p.streams)+1) // at most one op per stream and a reload: sends never block
	p.opCtx, p.stopOps = context.WithCancel(ctx)
	defer func() {
		p.stopOps()
		p.ops.Wait() // nothing records into the report after the session
	}()
	for {
		if err := p.checkEnd(ctx); err != nil {
			return err
		}
		p.drainDeliveries()
		p.applyChunks()
		wake, err := p.schedule(ctx)
		if err != nil {
			return err
		}
		p.wait(ctx, wake)
		for len(p.inbox) > 0 {
			o := p.inbox[0]
			p.inbox = p.inbox[1:]
			if err := p.complete(ctx, o); err != nil {
				return err
			}
		}
	}
}

// schedule starts what can start now and returns when the scheduler must look again
// if nothing completes before (zero: only when something completes).
func (p *Player) schedule(ctx context.Context) (time.Time, error) {
	now := p.clock.Now()
	var wake time.Time
	at := func(t time.Time) {
		if !t.IsZero() && (wake.IsZero() || t.Before(wake)) {
			wake = t
		}
	}
	if !p.deadline.IsZero() {
		at(p.deadline)
	}
	// Streams waiting for a pushed segment: take it if it came, else request it once
	// the wait is over.
	for _, s := range p.streams {
		pl := s.next
		if s.op != nil || pl == nil || pl.pushUntil.IsZero() {
			continue
		}
		if r, resp := p.takeDelivery(s, pl.request()); resp != nil {
			s.next = nil
			p.applyMedia(s, pl, r, resp, now)
			at(now)
		} else if p.deliveries == nil || !now.Before(pl.pushUntil) {
			p.startMedia(s, pl)
		} else {
			at(pl.pushUntil)
		}
	}
	busy := p.busy()
	if !busy {
		// Nothing in flight can end a wait for an event any more.
		for _, s := range p.streams {
			s.onEvent = false
		}
	}
	if p.live && p.manifest.MinimumUpdatePeriod > 0 && p.reloadOp == nil && !(p.cfg.Sequential && busy) {
		if due := later(p.lastLoad.Add(p.manifest.MinimumUpdatePeriod), p.reloadAt); now.Before(due) {
			at(due)
		} else {
			p.startReload()
			busy = true
		}
	}
	if p.allDone() {
		// Everything is downloaded: play out what is buffered.
		p.mu.Lock()
		lvl := p.minLevel()
		if p.state != statePlaying {
			if lvl > 0 {
				p.appended(now) // shorter than the start-up threshold
			} else {
				p.state, p.endedAt = stateEnded, now // nothing to play at all
			}
		}
		p.mu.Unlock()
		at(now.Add(max(lvl, time.Millisecond)))
		return wake, nil
	}
	if p.cfg.Sequential {
		if !busy {
			if err := p.planIdle(ctx, p.nextStream(), now, at); err != nil {
				return wake, err
			}
		}
	} else {
		for _, s := range p.streams {
			if err := p.planIdle(ctx, s, now, at); err != nil {
				return wake, err
			}
		}
	}
	if wake.IsZero() && !p.busy() {
		wake = now.Add(100 * time.Millisecond) // never wait for nothing
	}
	return wake, nil
}

// busy says whether a request is in flight or a stream waits for a push.
func (p *Player) busy() bool {
	if p.reloadOp != nil {
		return true
	}
	for _, s := range p.streams {
		if s.op != nil || s.next != nil {
			return true
		}
	}
	return false
}

// planIdle plans the next segment of s if s is free to, and tells at when to look
// at s again.
func (p *Player) planIdle(ctx context.Context, s *stream, now time.Time, at func(time.Time)) error {
	if s == nil || s.done || s.op != nil || s.next != nil || s.onReload || s.onEvent {
		return nil
	}
	if !s.wakeAt.IsZero() {
		if now.Before(s.wakeAt) {
			at(s.wakeAt)
			return nil
		}
		s.wakeAt = time.Time{}
	}
	if err := p.plan(ctx, s, now); err != nil {
		return err
	}
	switch {
	case s.op != nil || s.onReload || s.onEvent:
	case s.next != nil:
		at(s.next.pushUntil)
	case !s.wakeAt.IsZero():
		at(s.wakeAt)
	default:
		at(now) // it moved on without a request (a delivery, the end, a rejoin): again
	}
	return nil
}

// plan does the next thing for s: request a segment (its init segment first when
// missing), take a delivered one, or decide when to look again.
func (p *Player) plan(ctx context.Context, s *stream, now time.Time) error {
	lvl := s.level(p.playhead)
	if lvl >= p.cfg.MaxBuffer {
		if p.state != statePlaying && !p.cfg.Sequential && p.busy() {
			// The buffer drains only when playback resumes, which only a download can
			// bring about: wait for one rather than polling.
			s.onEvent = true
			return nil
		}
		s.wakeAt = now.Add(lvl - p.cfg.MaxBuffer + time.Millisecond)
		return nil
	}
	rep := p.choose(s, lvl)
	s.chosen = rep.ID
	seg, ok := rep.Index.Next(s.end)
	if !ok {
		return p.noNextSegment(s, now)
	}
	if p.live {
		sn := p.serverNow()
		if tsbd := p.manifest.TimeShiftBufferDepth; tsbd > 0 && !seg.AvailableAt.IsZero() && seg.AvailableAt.Add(tsbd).Before(sn) {
			p.log.Info("fell out of the DVR window; rejoining the live edge", "segment", seg.Number)
			p.mu.Lock()
			ok := p.rejoin()
			p.mu.Unlock()
			if !ok {
				s.wakeAt = now.Add(max(p.nominal()/2, 100*time.Millisecond))
			}
			return nil
		}
		avail := seg.AvailableAt
		if p.ll != nil && p.ll.pushRule && !p.manifest.AvailabilityStart.IsZero() {
			avail = p.manifest.AvailabilityStart.Add(seg.Start) // pushed chunk by chunk from its start
		}
		// Ask a little after the segment is due, by the error the clock offset may have,
		// so a request does not reach the origin a millisecond early and bounce.
		if due := avail.Add(p.clockSlack + 2*time.Millisecond); !avail.IsZero() && due.After(sn) {
			s.wakeAt = due.Add(-p.clockOffset)
			return nil
		}
	}
	restart := false
	if seg.Dependent && s.current >= 0 && s.set.Representations[s.current] != rep {
		// A switch to a part that depends on the one before it: from the last
		// independent one, as hls.js loads a new level (media before s.end comes again).
		seg, restart = rep.Index.Independent(seg), true
	}
	s.next = &plan{rep: rep, seg: seg, restart: restart}
	if rep.InitURL != "" && !s.inited[rep.ID] {
		// Init segments are fetched when a representation is first chosen and kept
		// (like dash.js), so switching back costs no second request.
		p.launch(&op{kind: opInit, s: s, plan: s.next}, func(ctx context.Context, o *op) {
			o.resp, o.err = p.fetch(ctx, SegmentRequest{Kind: RequestInit, URL: rep.InitURL, TrackID: rep.ID})
		})
		return nil
	}
	p.mediaPhase(s, now)
	return nil
}

// mediaPhase gets the media segment of s.next: from a delivery if one arrived, else
// (after waiting up to PushWait for one) by request.
func (p *Player) mediaPhase(s *stream, now time.Time) {
	pl := s.next
	if r, resp := p.takeDelivery(s, pl.request()); resp != nil {
		s.next = nil
		p.applyMedia(s, pl, r, resp, now)
		return
	}
	if p.deliveries != nil && p.cfg.PushWait > 0 && p.pushing {
		pl.pushUntil = now.Add(p.cfg.PushWait)
		return
	}
	p.startMedia(s, pl)
}

func (p *Player) startMedia(s *stream, pl *plan) {
	pl.pushUntil = time.Time{}
	req := pl.request()
	req.Chunks = p.ll != nil
	p.launch(&op{kind: opMedia, s: s, plan: pl}, func(ctx context.Context, o *op) {
		o.resp, o.err = p.fetch(ctx, req)
		if o.err == nil {
			p.rec.MediaRequest()
		}
	})
}

func (p *Player) startReload() {
	now := p.serverNow()
	playing := p.playing()
	p.launch(&op{kind: opManifest}, func(ctx context.Context, o *op) {
		o.m, o.err = p.cfg.Load(WithPlaying(ctx, playing), p.fetch, p.cfg.URL, now)
	})
}

// playing is the representation each stream chose last (the one its next request is
// for), else the one it delivered last; nil before any choice.
func (p *Player) playing() []string {
	var ids []string
	for _, s := range p.streams {
		switch {
		case s.chosen != "":
			ids = append(ids, s.chosen)
		case s.current >= 0 && s.current < len(s.set.Representations):
			ids = append(ids, s.set.Representations[s.current].ID)
		}
	}
	return ids
}

// launch runs f in a goroutine of its own, which posts o when f returns.
func (p *Player) launch(o *op, f func(context.Context, *op)) {
	if o.s != nil {
		o.s.op = o
	} else {
		p.reloadOp = o
	}
	p.ops.Add(1)
	if p.sim != nil {
		p.sim.join()
	}
	go func() {
		defer p.ops.Done()
		f(p.opCtx, o)
		p.results <- o // before leaving: a settled clock finds the result posted
		if p.sim != nil {
			p.sim.leave()
		}
	}()
	if p.sim != nil {
		p.sim.settle() // one goroutine at a time: what the Fetcher does is repeatable
	}
}

// wait returns when a request completes (into p.inbox), a delivery arrives, ctx
// ends or clock time until comes (zero: no limit).
func (p *Player) wait(ctx context.Context, until time.Time) {
	if p.sim != nil {
		p.waitSim(ctx, until)
		return
	}
	if p.poll() {
		return
	}
	var timer <-chan time.Time
	if !until.IsZero() {
		d := until.Sub(p.clock.Now())
		if d <= 0 {
			return
		}
		timer = p.clock.After(d)
	}
	var chunkNote chan struct{}
	if p.chunks != nil {
		chunkNote = p.chunks.note
	}
	select {
	case o := <-p.results:
		p.inbox = append(p.inbox, o)
		p.poll()
	case d, ok := <-p.deliveries:
		p.received(d, ok)
	case <-chunkNote:
	case <-timer:
	case <-ctx.Done():
	}
}

// waitSim is wait on a SimClock the scheduler drives: while every request in flight
// sleeps on the clock and nothing has completed, it moves time to the earliest
// sleeper (completions at an instant come before the scheduler's own wake-up at it).
func (p *Player) waitSim(ctx context.Context, until time.Time) {
	for {
		p.sim.settle()
		if p.poll() || ctx.Err() != nil {
			return
		}
		if p.sim.wakeNext(until) {
			continue
		}
		if !until.IsZero() {
			p.sim.advanceTo(until)
		}
		return
	}
}

// poll takes what completed and what was delivered, without waiting, and reports
// whether there was anything.
func (p *Player) poll() bool {
	got := false
	for {
		select {
		case o := <-p.results:
			p.inbox = append(p.inbox, o)
			got = true
			continue
		default:
		}
		break
	}
	if p.chunks != nil {
		select {
		case <-p.chunks.note:
			got = true
		default:
		}
	}
	return p.drainDeliveries() || got
}

// complete handles a request that finished.
func (p *Player) complete(ctx context.Context, o *op) error {
	now := p.clock.Now()
	for _, s := range p.streams {
		s.onEvent = false // what they waited for may have happened
	}
	if o.kind == opManifest {
		p.reloadOp = nil
		return p.reloaded(ctx, o, now)
	}
	s, pl := o.s, o.plan
	s.op = nil
	if o.kind == opInit && o.err == nil {
		s.inited[pl.rep.ID] = true
	}
	if s.next != pl {
		return nil // the player rejoined the live edge meanwhile: no longer wanted
	}
	if o.kind == opInit {
		if o.err != nil {
			s.next = nil
			return p.retryLater(ctx, s, "init "+pl.rep.ID, o.err, now)
		}
		p.mediaPhase(s, now)
		return nil
	}
	s.next = nil
	if o.err != nil {
		if p.live && errors.Is(o.err, media.ErrGone) {
			p.rec.Error()
			p.mu.Lock()
			p.rejoin()
			p.mu.Unlock()
			return nil
		}
		return p.retryLater(ctx, s, "segment "+pl.seg.URL, o.err, now)
	}
	p.applyMedia(s, pl, pl.rep, o.resp, now)
	return nil
}

// retryLater counts a failed request of s and has s try again after a back-off.
func (p *Player) retryLater(ctx context.Context, s *stream, what string, err error, now time.Time) error {
	run := &s.errRun
	if p.cfg.Sequential {
		run = &p.errRun // one count of failures in a row, whatever failed, as one loop has
	}
	backoff, err := p.failed(ctx, run, what, err)
	if err != nil {
		return err
	}
	s.wakeAt = now.Add(backoff)
	return nil
}

// applyMedia puts a downloaded (or delivered) segment into the buffer of s. got is
// the representation the bytes belong to.
func (p *Player) applyMedia(s *stream, pl *plan, got *Representation, resp *Response, now time.Time) {
	s.errRun, p.errRun = 0, 0
	seg := pl.seg
	if got != pl.rep {
		// A push transport delivered another rendition of this segment (found by its
		// start: chunks may have brought s.end to its end already).
		if g, ok := got.Index.Next(pl.seg.Start); ok {
			seg = g
		}
	}
	for _, x := range p.streams {
		x.onEvent = false
	}
	p.lastChunk(s, pl, now)
	p.mu.Lock()
	defer p.mu.Unlock()
	dl := resp.Duration()
	if resp.Busy > 0 {
		dl = resp.Busy
	}
	p.est.Add(resp.PayloadBytes, dl)
	if !p.deadline.IsZero() && now.After(p.deadline) {
		return // completed after the end of the session: not played
	}
	p.advance(now)
	if p.chunks != nil {
		p.chunks.forget(pl.request())
	}
	if seg.End() < s.end || seg.End() == s.end && !s.chunked {
		if idx := indexOf(s.set, got); pl.restart && idx >= 0 {
			s.current = idx // a switch's first entry, all before the buffered end
		}
		return // a duplicate
	}
	if seg.End() > s.end {
		p.appendMedia(s, max(seg.Start, s.end), seg.End(), got)
	}
	s.chunked = false
	if idx := indexOf(s.set, got); idx >= 0 {
		s.current = idx
	}
	p.appended(now)
}

// reloaded installs a reloaded manifest, or counts the failure.
func (p *Player) reloaded(ctx context.Context, o *op, now time.Time) error {
	p.lastLoad = now
	p.interrupted()
	var waiting []*stream
	for _, s := range p.streams {
		if s.onReload || p.cfg.Sequential {
			waiting = append(waiting, s) // Sequential: the one loop waits out the back-off
		}
		s.onReload = false
	}
	err := o.err
	if err == nil {
		err = o.m.Validate()
	}
	if err == nil {
		p.mu.Lock()
		p.install(o.m)
		p.mu.Unlock()
		if !p.cfg.Sequential {
			p.errRun = 0
		}
		return nil
	}
	backoff, err := p.failed(ctx, &p.errRun, "manifest", err)
	if err != nil {
		return err
	}
	p.reloadAt = now.Add(backoff) // back-to-back reloads (LL-HLS) must not hammer a failing origin
	for _, s := range waiting {
		if t := now.Add(backoff); t.After(s.wakeAt) {
			s.wakeAt = t
		}
	}
	return nil
}

// interrupted ends the waits of every stream under Config.Sequential, where a manifest
// reload or a delivery cuts the one loop's wait short and the loop then looks again
// at once: a wait for a full buffer or for availability comes out the same, a retry
// back-off ends early. Kept so that Sequential reproduces the one-loop player exactly.
func (p *Player) interrupted() {
	if !p.cfg.Sequential {
		return
	}
	for _, s := range p.streams {
		s.wakeAt = time.Time{}
	}
}

// noNextSegment handles an index with nothing at the buffered end of s.
func (p *Player) noNextSegment(s *stream, now time.Time) error {
	if !p.live {
		p.mu.Lock()
		s.done = true
		p.appended(now)
		p.mu.Unlock()
		return nil
	}
	if p.manifest.BlockingReload {
		// LL-HLS: the reload in flight (back to back) comes when the next part is listed.
		if p.reloadOp == nil && now.Before(p.reloadAt) {
			s.wakeAt = p.reloadAt // backing off after a failed reload
			return nil
		}
		s.onReload = true
		if p.reloadOp == nil {
			p.startReload()
		}
		return nil
	}
	// A live list (SegmentTimeline, HLS) ends where the last reload ended: reload,
	// but not more often than every half segment.
	if next := p.lastLoad.Add(max(p.nominal()/2, 100*time.Millisecond)); now.Before(next) {
		s.wakeAt = next
		return nil
	}
	s.onReload = true
	if p.reloadOp == nil {
		p.startReload()
	}
	return nil
}

// nextStream is the stream whose buffer ends earliest among those with more to fetch
// (Config.Sequential).
func (p *Player) nextStream() *stream {
	var best *stream
	for _, s := range p.streams {
		if s.done {
			continue
		}
		if best == nil || s.end < best.end {
			best = s
		}
	}
	return best
}

func indexOf(set *AdaptationSet, r *Representation) int {
	for i, x := range set.Representations {
		if x == r || x.ID == r.ID {
			return i
		}
	}
	return -1
}

// choose asks the ABR rule for the representation of the next segment of s.
func (p *Player) choose(s *stream, lvl time.Duration) *Representation {
	reps := s.set.Representations
	if len(reps) == 1 {
		return reps[0]
	}
	rs := make([]abr.Rendition, len(reps))
	for i, r := range reps {
		rs[i] = abr.Rendition{ID: r.ID, Bandwidth: r.Bandwidth}
	}
	cur := min(max(s.current, 0), len(reps)-1)
	i := p.rule.Choose(abr.State{
		Renditions:      rs,
		Current:         s.current,
		Buffer:          lvl,
		BufferTarget:    p.bufTarget,
		SegmentDuration: reps[cur].Index.NominalDuration(),
		Throughput:      p.est.Estimate(),
		Live:            p.live,
	})
	return reps[min(max(i, 0), len(reps)-1)]
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
