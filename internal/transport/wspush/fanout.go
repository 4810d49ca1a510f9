package wspush

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// The live fan-out. Every viewer of a rendition receives the same bytes, so a live
// channel's fixed-rung sessions are served by one loop per channel instead of a
// feeder and a writer goroutine each: the loop takes each hub event once, walks the
// viewers of that track, and writes each viewer's due frames to its socket with one
// non-blocking writev (the chunk's bytes are shared, never copied; only the frame
// header of a few bytes is the viewer's own). A viewer whose socket is full keeps
// the rest in its output queue and gets a goroutine of its own to drain it
// (drain); until the queue is empty the loop only appends to it, so a slow viewer
// never delays the others, and past QueueLimit it skips to the next keyframe as
// before. On the steady path there is no goroutine wake-up, channel send, timer or
// allocation per viewer per chunk: the session's goroutine sits in the socket's
// read, waiting for the client's status messages or its close.
//
// Adaptive viewers (they observe their queue and TCP_INFO and decide per segment)
// and stats viewers are fan-out viewers too: a viewer is in the list of its current
// rung, its policy decides at each of its segment boundaries in the loop (a switch
// moves it to the new rung's list), and the loop samples adaptive viewers between
// chunks as their own ticker did. Relay, DVR positions, VOD and TLS keep the
// per-session path (live.go).

// fanoutEventCapacity is the fan-out's hub queue; what overflows it is read from
// the store per viewer, like a session's own queue (sendStored).
const fanoutEventCapacity = 1024

// maxBatch bounds the hub events taken before the due frames are written, so
// events that come together (a video and an audio chunk) leave in one writev.
const maxBatch = 64

// fanout is one live channel's loop and its viewers.
type fanout struct {
	h   *Handler
	c   *hub.Channel
	sub *hub.Subscription

	refs int // sessions using it (Handler.mu)

	mu      sync.Mutex                       // taken before a session's guard, then its queue
	viewers map[string]map[*session]struct{} // by track ID
	touched []*session                       // viewers with frames due in this batch
	sampled map[*session]struct{}            // adaptive viewers, observed every tick
	ended   bool                             // the channel ended

	// The writev of the viewer being written: the iovecs and frame headers are the
	// loop's scratch, reused for every viewer (no allocation per write).
	iov     []iovec
	heads   [][maxFrameHead]byte
	writeFn func(fd uintptr) bool
	wn      int
	werr    error
	ready   readyMemo // the last ready message encoded for a joining viewer
	tally   tally     // counters of this batch, added to /metrics once per batch
	writevs int64     // writev calls of the fast path (tests: frames due together go in one)
	// A large frame written to several viewers in one flush goes out from a memory
	// file holding it once (sendfile: the socket references its pages, no copy per
	// viewer); the files live for one flush (fanshared_linux.go).
	shared    sharedFrames
	sendfiles int64 // sendfile calls of the fast path (tests)
}

func (h *Handler) fanoutFor(c *hub.Channel) *fanout {
	h.mu.Lock()
	defer h.mu.Unlock()
	fo := h.fanouts[c]
	if fo == nil {
		fo = &fanout{h: h, c: c, sub: c.Notify(fanoutEventCapacity), viewers: map[string]map[*session]struct{}{}, sampled: map[*session]struct{}{}}
		fo.writeFn = fo.writevFD
		h.fanouts[c] = fo
		go fo.run()
	}
	fo.refs++
	return fo
}

func (h *Handler) releaseFanout(fo *fanout) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fo.refs--
	if fo.refs == 0 {
		delete(h.fanouts, fo.c)
		fo.sub.Stop() // the loop ends when the queue closes
	}
}

// fanOutEligible says whether the session can be served by its channel's fan-out.
func (s *session) fanOutEligible() bool {
	_, live := s.src.(*hub.Channel)
	// TLS and pipes write through their own layers; a plain TCP socket, bare or
	// behind the lean HTTP/1.1 path's hand-off wrapper, is written directly.
	return fanWriteSupported && !s.opts.NoFanOut && live && s.plainTCP && s.raw != nil && s.guard != nil &&
		s.relay == nil && !s.start.At.Position
}

// runFanOut serves a started session through its channel's fan-out: it joins (the
// ready message, the inits and the chunks of the segment in progress go out), then
// this goroutine reads the client until it leaves.
func (s *session) runFanOut(ctx context.Context, c *hub.Channel, began time.Time) {
	s.h.active.Add(1)
	defer s.h.active.Add(-1)
	if s.opts.NotSentLowat > 0 {
		_ = setNotSentLowat(s.raw, s.opts.NotSentLowat)
	}
	if !s.start.At.Position {
		s.awaitKeyframe(c, s.ladder[s.rung])
	}
	fo := s.h.fanoutFor(c)
	defer s.h.releaseFanout(fo)
	if err := fo.join(s); err != nil {
		s.closeWith(int(closeCodeOf(err)), err.Error())
	} else {
		s.readLoop(ctx, func() {})
		fo.leave(s)
		s.closing.Store(true)
		s.conn.CloseNow() // a drain blocked in a write ends now
	}
	s.q.close()
	// A drain writes and counts only while it holds the guard and the queue is
	// open: with the queue closed and the guard held, the statistics are final.
	s.guard.mu.Lock()
	defer s.guard.mu.Unlock()
	s.finish(began)
}

// join sets the session up in the fan-out: under the loop's lock, so no hub event
// falls between what it reads from the store and what the loop sends next.
func (fo *fanout) join(s *session) error {
	fo.mu.Lock()
	defer fo.mu.Unlock()
	if fo.ended {
		return errors.New("the channel ended")
	}
	s.fan = fo
	t := s.ladder[s.rung]
	n, _, err := s.startLive(fo.c, t)
	if err != nil {
		s.fan = nil
		s.due = nil
		return err
	}
	s.vPos, s.aPos = trackPos{seg: n}, trackPos{seg: n}
	s.first = false // segment n begins at its initial rung (follower.begin's first boundary)
	// Catch up to the live edge from n, as followChannel does: the chunks stored so
	// far; later ones come as events, and those already sent are dropped by index.
	for _, tr := range s.tracksNow() {
		p := s.posOf(tr)
		newest, begun := fo.c.Newest(tr.ID) // no look-up (and error) past the newest
		for m := n; begun && m <= newest; m++ {
			seg, complete, err := fo.c.Partial(tr.ID, m)
			if err != nil {
				break
			}
			p.seg, p.next = m, 0
			for i, ch := range seg.Chunks {
				s.pushChunk(tr, m, i, complete && i == len(seg.Chunks)-1, ch)
				p.next = i + 1
			}
			if !complete {
				break
			}
		}
	}
	for _, tr := range s.tracksNow() {
		vs := fo.viewers[tr.ID]
		if vs == nil {
			vs = map[*session]struct{}{}
			fo.viewers[tr.ID] = vs
		}
		vs[s] = struct{}{}
	}
	if s.adaptive {
		fo.sampled[s] = struct{}{}
	}
	fo.h.fanned.Add(1)
	fo.flush()
	return nil
}

// leave takes the session out of the fan-out (it may have been dropped already).
func (fo *fanout) leave(s *session) {
	fo.mu.Lock()
	defer fo.mu.Unlock()
	fo.remove(s)
}

func (fo *fanout) remove(s *session) {
	if s.fan == fo {
		fo.h.fanned.Add(-1)
	}
	for _, vs := range fo.viewers {
		delete(vs, s)
	}
	delete(fo.sampled, s)
	s.fan = nil
	s.dropDue()
}

// move puts a viewer that switched rungs into the new rung's list.
func (fo *fanout) move(s *session, from, to *media.Track) {
	delete(fo.viewers[from.ID], s)
	vs := fo.viewers[to.ID]
	if vs == nil {
		vs = map[*session]struct{}{}
		fo.viewers[to.ID] = vs
	}
	vs[s] = struct{}{}
}

// dropDue empties the frames due, keeping the slice for the next batch.
func (s *session) dropDue() {
	clear(s.due) // let the chunks go
	s.due = s.due[:0]
}

// run takes the hub's events in batches until the subscription ends, and samples
// the adaptive viewers between them.
func (fo *fanout) run() {
	tick := time.NewTicker(sampleEvery(fo.c.Info().SegmentDuration))
	defer tick.Stop()
	for {
		var ev hub.Event
		var ok bool
		select {
		case ev, ok = <-fo.sub.C:
		case <-tick.C:
			fo.sample()
			continue
		}
		fo.mu.Lock()
		for n := 0; ok; n++ {
			fo.event(ev)
			if n+1 == maxBatch {
				break
			}
			select {
			case ev, ok = <-fo.sub.C:
				continue
			default:
			}
			break
		}
		fo.flush()
		if !ok {
			fo.end()
			fo.mu.Unlock()
			return
		}
		fo.mu.Unlock()
	}
}

// sample observes each adaptive viewer's output queue (and TCP_INFO, when its
// policy asks, at most every tcpSampleEvery), as a session's own ticker did.
func (fo *fanout) sample() {
	fo.mu.Lock()
	defer fo.mu.Unlock()
	if len(fo.sampled) == 0 {
		return
	}
	now := fo.c.Now()
	for s := range fo.sampled {
		s.observe(now, false)
	}
}

// end: the subscription closed, because the last viewer left or because the
// channel ended; the viewers of an ended channel are closed as a session's own
// subscription closing would close them.
func (fo *fanout) end() {
	fo.ended = true
	for _, vs := range fo.viewers {
		for s := range vs {
			fo.remove(s)
			go s.closeWith(CloseInternal, "internal error; see the server log")
			s.log.Error("session failed", "err", "the channel ended the subscription")
		}
	}
}

// event hands one hub event to every viewer of its track.
func (fo *fanout) event(ev hub.Event) {
	var now time.Time
	for s := range fo.viewers[ev.Track] {
		if err := s.fanEvent(ev, &now); err != nil {
			fo.remove(s)
			go s.closeWith(CloseTooSlow, err.Error())
		}
	}
}

// flush writes each touched viewer's due frames.
func (fo *fanout) flush() {
	for _, s := range fo.touched {
		s.touched = false
		if s.fan == fo {
			if err := fo.send(s); err != nil {
				fo.remove(s)
				s.closing.Store(true)
				go s.conn.CloseNow() // the client is gone; its reader sees it and ends the session
			}
		}
		s.dropDue()
	}
	clear(fo.touched)
	fo.touched = fo.touched[:0]
	fo.shared.release()
	fo.tally.addTo(&fo.h.ctr)
	fo.tally = tally{}
}

// maxWritevItems bounds one writev (IOV_MAX is 1024 iovecs, two per frame).
const maxWritevItems = 256

// send writes s's due frames: at once when its queue is empty and the socket takes
// them, otherwise into its queue for its drain goroutine.
func (fo *fanout) send(s *session) error {
	if len(s.due) == 0 || s.closing.Load() {
		return nil
	}
	q := s.q
	if q.busy() || !s.guard.mu.TryLock() {
		q.pushAll(s.due)
		s.dropDue() // queued now: a skip must not count them twice
		s.startDrain(false)
		return fo.checkBacklog(s)
	}
	items := s.due[:min(len(s.due), maxWritevItems)]
	fo.writevs++
	n, err := fo.writev(s, items)
	if err != nil {
		s.guard.mu.Unlock()
		return err
	}
	k, off := 0, 0 // items written whole; bytes of item k written
	for ; k < len(items); k++ {
		fl := items[k].frameLen()
		if n < fl {
			off = n
			break
		}
		n -= fl
		s.countWritten(&items[k], &fo.tally)
	}
	if k == len(s.due) {
		s.guard.mu.Unlock()
		return nil
	}
	s.due[k].off = off
	q.pushAll(s.due[k:])
	s.dropDue()
	if off > 0 {
		// A frame is half out: the guard stays locked, handed to the drain, so no
		// control frame of the library can come between its halves.
		s.startDrain(true)
	} else {
		s.guard.mu.Unlock()
		s.startDrain(false)
	}
	return fo.checkBacklog(s)
}

// checkBacklog skips to the next keyframe when the queue holds more media than
// QueueLimit: the slow reader loses chunks instead of falling further behind.
func (fo *fanout) checkBacklog(s *session) error {
	if _, queued := s.q.level(); queued > s.queueLimit() {
		s.beginSkip(fmt.Sprintf("output queue over %v", s.queueLimit()), true)
	}
	return nil
}

// startDrain starts the session's drain goroutine unless it runs; held says the
// caller holds the guard and hands it over.
func (s *session) startDrain(held bool) {
	if s.q.claimDrain() {
		s.h.ctr.handoffs.Add(1)
		go s.drain(held)
	} else if held {
		s.guard.mu.Unlock() // cannot happen: a running drain means the queue was busy
	}
}

// drain writes the session's queue with blocking writes until it is empty; it holds
// the guard for each frame, so the library's control frames go between frames.
func (s *session) drain(held bool) {
	var t tally
	defer t.addTo(&s.h.ctr)
	for {
		if !held {
			s.guard.mu.Lock()
		}
		held = false
		it, ok := s.q.popDrain()
		if !ok {
			// The fan-out's non-blocking writev goes through the same descriptor,
			// whose write deadline it would fail on once past: the drain's ends here.
			_ = s.net.SetWriteDeadline(time.Time{})
			s.guard.mu.Unlock()
			return
		}
		var err error
		if it.off > 0 || !s.closing.Load() { // a frame begun is finished: the stream stays parseable
			err = s.writeFrame(&it)
			if err == nil {
				s.countWritten(&it, &t)
			}
		}
		s.q.written()
		s.guard.mu.Unlock()
		if err != nil {
			s.closing.Store(true)
			s.conn.CloseNow()
			s.q.stopDrain()
			return
		}
	}
}

// writeFrame writes the rest of one frame with a blocking write (the drain's
// path): a frame that cannot leave within WriteTimeout ends the session.
func (s *session) writeFrame(it *item) error {
	var hb [maxFrameHead]byte
	head, body := it.head(&hb), it.body()
	bufs := net.Buffers{head, body}
	off := it.off
	if off >= len(head) {
		bufs = net.Buffers{body[off-len(head):]}
	} else {
		bufs[0] = head[off:]
	}
	_ = s.net.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	_, err := bufs.WriteTo(s.net) // writev on a TCP socket
	return err
}
