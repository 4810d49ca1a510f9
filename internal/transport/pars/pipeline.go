package pars

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/transport/httppull"
)

// Pipelining. Fetched one at a time, a segment's N ranges leave the link idle twice
// per segment: while the slowest range finishes (the other connections have nothing
// to do) and between the last byte of one segment and the first of the next (the
// player's next request, a round trip). Under random loss the ranges' speeds differ
// a lot, so the lab measured only 53–75% of the link with N = 4–8
// (docs/results/pars.md).
//
// So each rendition (a chain: the URLs that differ only in the segment number) has
// its connections work through a queue of ranges: the ranges of the segment the
// player asked for, then those of the ones after it. A connection that finishes its
// range of segment n starts a range of n+1 at once; the player's request for n+1 is
// answered from that fetch in flight. The pipeline is bounded: at most Options.Ahead
// segments (2) beyond the one the player asked for are fetched, so a player whose
// buffer is full (it stops asking) costs at most that, and a switch to another
// rendition drops them (Stats.Wasted). A segment is fetched ahead only when its size is
// known without a request (the sidecar index of an on-demand asset); live segments
// and URLs without the number in their last path element are fetched one at a time,
// as before.

// maxChains bounds the renditions followed at once (video, audio and a switch).
const maxChains = 4

// chain is the pipeline of one rendition.
type chain struct {
	c    *Client
	key  string
	used time.Time

	// Guarded by c.mu.
	want    int     // connections the newest requested segment asked for
	owned   int     // lanes taken from the pool and not given back
	idle    []*lane // free request slots: each owned lane once per free stream
	busy    map[*lane]int
	jobs    []*segJob
	retired bool
	asked   int // segments the player asked for on this chain
}

// segJob is one segment being fetched by a chain.
type segJob struct {
	u      string
	num    uint64
	n      int
	size   int64
	ranges []Range // nil: one GET of the whole resource
	next   int     // first unit not started
	left   int     // units not finished
	ahead  bool    // started before the player asked for it
	taken  bool    // the player asked for it
	// mixed: some of its ranges ran while a segment fetched with another N was
	// running too, so its throughput is not a sample of X_n.
	mixed   bool
	running int // units in flight

	ctx    context.Context
	cancel context.CancelFunc
	sf     *segFetch
	ctxs   []context.Context
	buf    []byte
	m      *meter
	errs   []error

	start, end time.Time
	wire       int64 // bytes of its exchanges, both ways
	body       []byte
	err        error
	done       chan struct{}
}

func (j *segJob) units() int { return max(len(j.ranges), 1) }

// newJob prepares segment u (number num) for n connections; size < 0 or n == 1
// fetches it whole. first marks a rendition's first segment (start-up), which gets
// one range per connection whatever RangesPerConnection says: its connections are
// new, their round trip is not known yet, so a second range each would cost a round
// trip (the lab measured start-up 20–60 ms later with two).
func (c *Client) newJob(u string, num uint64, n int, size int64, first bool) *segJob {
	ctx, cancel := context.WithCancel(c.life)
	j := &segJob{u: u, num: num, n: n, size: size, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	if n > 1 && size > 0 {
		units := n
		if c.est == nil && c.opts.RangesPerConnection > 1 && !first {
			units = n * c.opts.RangesPerConnection
		}
		if rs := Split(size, units, c.opts.MinRange); len(rs) > 1 {
			j.ranges = rs // j.buf is made when the first range starts
			j.sf = &segFetch{size: size, cancels: make([]context.CancelFunc, len(rs))}
			j.ctxs = make([]context.Context, len(rs))
			for i := range rs {
				j.ctxs[i], j.sf.cancels[i] = context.WithCancel(ctx)
			}
		}
	}
	j.left = j.units()
	j.errs = make([]error, j.units())
	j.m = c.newMeter(j.units())
	return j
}

// chainFor returns the chain of the rendition of u, making it (and forgetting the
// least recently used one beyond maxChains). Callers hold c.mu.
func (c *Client) chainFor(key string) *chain {
	ch := c.chains[key]
	if ch == nil {
		if len(c.chains) >= maxChains {
			var old *chain
			for _, x := range c.chains {
				if old == nil || x.used.Before(old.used) {
					old = x
				}
			}
			old.retire()
			delete(c.chains, old.key)
		}
		ch = &chain{c: c, key: key, busy: map[*lane]int{}}
		c.chains[key] = ch
	}
	ch.used = time.Now()
	return ch
}

// retire cancels the chain's jobs and gives its idle lanes back; busy lanes go back
// when their range ends. Callers hold c.mu.
func (ch *chain) retire() {
	ch.retired = true
	ch.drop(ch.jobs)
	ch.jobs = nil
	ch.want = 0
	seen := map[*lane]bool{}
	for _, l := range ch.idle { // a lane is there once per free stream
		if !seen[l] && ch.busy[l] == 0 {
			seen[l] = true
			ch.c.pool.put([]*lane{l})
			ch.owned--
		}
	}
	ch.idle = nil // lanes still busy go back when their last request ends (work)
}

// fetchPipelined fetches media segment req with n connections through its chain;
// ok is false when the URL has no chain (the number is not in its last element).
func (c *Client) fetchPipelined(ctx context.Context, req player.SegmentRequest, n int) (resp *player.Response, s Sample, ok bool, err error) {
	key, ok := nextURL(req.URL, req.Number, 0)
	if !ok {
		return nil, Sample{}, false, nil
	}
	whole, err := c.checkURL(req.URL)
	if err != nil {
		return nil, Sample{}, true, err
	}
	c.mu.Lock()
	ch := c.chainFor(key)
	j := ch.find(req.URL)
	first := ch.asked == 0
	c.mu.Unlock()
	if j == nil {
		size := int64(-1)
		if n > 1 && !whole {
			if known, ok := c.knownSize(req.URL); ok {
				size = known // no lane needed (sizeOnLane would dial ones for nothing)
			} else if size, err = c.sizeOnLane(ctx, req.URL, warmLanes(first, n)); err != nil {
				return nil, Sample{}, true, err
			}
		}
		j = c.newJob(req.URL, req.Number, n, size, first)
		if size < 0 && !first {
			// So that the next segments' sizes are known; not before the first
			// segment, which is fetched alone anyway (start-up).
			c.loadIndex(ctx, req.URL)
		}
	}
	// The segments after it, as far as their sizes are known without asking.
	var ahead []*segJob
	depth := c.opts.Ahead
	if c.est != nil && c.est.Probing() {
		depth = 0 // each probe alone on the link: X1 and X2 must not share it
	}
	c.mu.Lock()
	ch.asked++
	if ch.asked == 1 {
		// The first segment of a rendition is what start-up waits for: it has the
		// link to itself; the pipeline starts with the second.
		depth = 0
	}
	c.mu.Unlock()
	for k := uint64(1); k <= uint64(depth); k++ {
		nu, ok := nextURL(req.URL, req.Number, req.Number+k)
		if !ok {
			break
		}
		size, known := c.knownSize(nu)
		if !known {
			break
		}
		if whole {
			size = -1
		}
		a := c.newJob(nu, req.Number+k, n, size, false)
		a.ahead = true
		ahead = append(ahead, a)
	}
	c.mu.Lock()
	ch.schedule(j, ahead, n)
	c.mu.Unlock()

	select {
	case <-j.done:
	case <-ctx.Done():
		return nil, Sample{}, true, ctx.Err() // the fetch goes on; a retry of the request finds it
	}
	err = j.err
	if errors.Is(err, errWholeBody) {
		c.noRangeFor(req.URL) // the body is the whole resource all the same
		err = nil
	}
	if err != nil {
		return nil, Sample{}, true, err
	}
	if j.ahead {
		c.prefetched.Add(1)
	}
	resp = &player.Response{Body: j.body, PayloadBytes: int64(len(j.body)), Start: j.start, FirstByte: j.m.firstByte(), End: j.end, Protocol: c.Protocol()}
	if resp.FirstByte.IsZero() {
		resp.FirstByte = j.end
	}
	// With more than one request per connection the bytes on it are not this
	// segment's alone.
	resp.OverheadBytes, resp.OverheadExact = max(j.wire-resp.PayloadBytes, 0), c.opts.Streams == 1
	s = c.sample(j.m, j.n, len(j.ranges), j.start, j.end, resp.PayloadBytes)
	s.N = j.n // the N it was fetched with, which may be an earlier choice (fetched ahead)
	c.mu.Lock()
	s.Mixed = j.mixed
	c.mu.Unlock()
	return resp, s, true, nil
}

// find returns the job for u and drops the jobs before it; with none, it drops them
// all (the player went elsewhere). Callers hold c.mu.
func (ch *chain) find(u string) *segJob {
	for i, j := range ch.jobs {
		if j.u == u && !(j.isDone() && j.err != nil) {
			j.taken = true
			ch.drop(ch.jobs[:i])
			ch.jobs = ch.jobs[i:]
			return j
		}
	}
	ch.drop(ch.jobs)
	ch.jobs = nil
	return nil
}

func (ch *chain) drop(js []*segJob) {
	for _, j := range js {
		if j.ahead && !j.taken {
			ch.c.wasted.Add(1)
		}
		j.abandon()
	}
}

// abandon cancels j: its ranges in flight end with an error, those not started are
// not started, and a caller waiting for it is answered. Callers hold c.mu.
func (j *segJob) abandon() {
	j.cancel()
	for ; j.next < j.units(); j.next++ {
		j.errs[j.next] = context.Canceled
		j.left--
	}
	if j.left == 0 && !j.isDone() {
		j.finish()
	}
}

func (j *segJob) isDone() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// schedule makes j the segment asked for and ahead the ones after it (a job already
// under way for one of them is kept), and puts idle or new connections to work, up
// to n. Callers hold c.mu.
func (ch *chain) schedule(j *segJob, ahead []*segJob, n int) {
	jobs := []*segJob{j}
	for _, x := range ch.jobs {
		if x == j {
			continue
		}
		kept := false
		for i, a := range ahead {
			if x.u == a.u && !(x.isDone() && x.err != nil) {
				a.cancel()
				ahead[i], kept = x, true // already on its way
				break
			}
		}
		if !kept {
			ch.drop([]*segJob{x})
		}
	}
	jobs = append(jobs, ahead...)
	ch.jobs = jobs
	ch.want = n
	ch.shed()
	ch.start(n)
}

// shed gives idle connections beyond want back to the pool: when N drops (the
// estimator chose fewer), the chain must not keep fetching consecutive segments on
// the connections of the larger N. Busy ones go when their request ends (work).
// Callers hold c.mu.
func (ch *chain) shed() {
	for i := len(ch.idle) - 1; i >= 0 && ch.owned > ch.want; i-- {
		if i >= len(ch.idle) { // release removed entries after i
			continue
		}
		if l := ch.idle[i]; ch.busy[l] == 0 {
			ch.release(l)
		}
	}
}

// release gives lane l, idle, back to the pool. Callers hold c.mu.
func (ch *chain) release(l *lane) {
	ch.idle = slices.DeleteFunc(ch.idle, func(x *lane) bool { return x == l }) // once per free stream
	delete(ch.busy, l)
	ch.owned--
	ch.c.pool.put([]*lane{l})
}

// start puts idle or new connections to work on the units not started, up to n
// connections. Callers hold c.mu.
func (ch *chain) start(n int) {
	todo := 0
	for _, x := range ch.jobs {
		todo += x.units() - x.next
	}
	for todo > 0 {
		var l *lane
		free := -1 // an idle connection with nothing in flight
		for i := len(ch.idle) - 1; i >= 0; i-- {
			if ch.busy[ch.idle[i]] == 0 {
				free = i
				break
			}
		}
		switch {
		case free >= 0:
			l = ch.idle[free]
			ch.idle = slices.Delete(ch.idle, free, free+1)
		case ch.owned < n:
			ls, err := ch.c.pool.get(1)
			if err != nil {
				return // the busy lanes will do the work
			}
			l = ls[0]
			ch.owned++
			// A connection that carries more than one request at a time is a slot
			// for each (Streams): the others wait in idle. Pipelined HTTP/1.1 asks
			// for its next range only near the end of the current one (near).
			for k := 1; k < ch.c.opts.Streams && !ch.c.pipelinedH1(); k++ {
				ch.idle = append(ch.idle, l)
			}
		case len(ch.idle) > 0:
			// A second request on a busy connection (Streams > 1) only once every
			// one of the n connections has one: a segment's ranges go on different
			// connections first.
			l = ch.idle[len(ch.idle)-1]
			ch.idle = ch.idle[:len(ch.idle)-1]
		default:
			return
		}
		todo--
		ch.busy[l]++
		go ch.work(l)
	}
}

// work runs units of the chain's jobs on lane l until there is none left, then
// leaves l idle (or gives it back when the chain wants fewer connections now).
func (ch *chain) work(l *lane) {
	c := ch.c
	for {
		c.mu.Lock()
		if ch.owned > ch.want && ch.busy[l] == 1 && !ch.retired {
			// N dropped while this connection worked: it goes back (nothing is
			// pipelined behind on it), and the others, up to want, take the rest.
			ch.busy[l] = 0
			ch.release(l)
			ch.start(ch.want)
			c.mu.Unlock()
			return
		}
		var j *segJob
		i := 0
		for _, x := range ch.jobs {
			if x.next < x.units() {
				j, i = x, x.next
				x.next++
				x.running++
				for _, y := range ch.jobs {
					if y != x && y.running > 0 && y.n != x.n {
						x.mixed, y.mixed = true, true
					}
				}
				if x.start.IsZero() {
					x.start = time.Now()
				}
				if x.ranges != nil && x.buf == nil {
					x.buf = make([]byte, x.size)
				}
				break
			}
		}
		if j == nil {
			ch.busy[l]--
			switch {
			case c.pipelinedH1() && ch.busy[l] > 0:
				// The request ahead on this connection has a worker: it stays busy.
			case ch.retired:
				if ch.busy[l] == 0 {
					delete(ch.busy, l)
					ch.owned--
					c.pool.put([]*lane{l})
				}
			case ch.busy[l] == 0 && ch.owned > ch.want:
				ch.release(l)
			default:
				ch.idle = append(ch.idle, l)
			}
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		picked := time.Now()
		r0, w0 := l.c.WireBytes()
		err := c.runUnit(j, i, l, ch.near(l))
		c.trace(j, i, l, picked, err)
		r1, w1 := l.c.WireBytes()
		c.mu.Lock()
		j.wire += r1 - r0 + w1 - w0
		j.running--
		j.errs[i] = err
		j.left--
		if j.left == 0 {
			j.finish()
		}
		if c.pipelinedH1() && ch.busy[l] > 1 {
			// The next range's request is already on this connection with a worker
			// of its own (near): this one ends.
			ch.busy[l]--
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// nearRTTs: a pipelined HTTP/1.1 connection asks for its next range when the rest of
// the current body is expected within this many round trips, so that the next body
// follows without a gap. Asked earlier, the range would be bound to this connection
// while faster ones could have taken it (under random loss the connections' speeds
// differ a lot: the lab saw a pipeline depth of two from the start lose throughput).
const nearRTTs = 1.5

// near returns what lane l's worker calls as a body arrives with the time its rest
// is expected to take, or nil when requests are not pipelined over HTTP/1.1.
func (ch *chain) near(l *lane) func(rest time.Duration) {
	if !ch.c.pipelinedH1() {
		return nil
	}
	asked := false
	return func(rest time.Duration) {
		rtt := time.Duration(l.rtt.Load())
		if asked || rtt <= 0 || rest > time.Duration(nearRTTs*float64(rtt)) {
			return
		}
		c := ch.c
		c.mu.Lock()
		defer c.mu.Unlock()
		if ch.retired || ch.busy[l] != 1 || !ch.hasWork() || ch.owned > ch.want {
			return // asked again at the next arrival: work may come (the player's next request)
		}
		asked = true
		ch.busy[l]++
		go ch.work(l) // its request goes out on l behind the body being read
	}
}

// hasWork says whether a unit waits to be started. Callers hold c.mu.
func (ch *chain) hasWork() bool {
	for _, x := range ch.jobs {
		if x.next < x.units() {
			return true
		}
	}
	return false
}

// pipelinedH1 says whether connections carry more than one request at once over
// HTTP/1.1 (pipelining, h1pipe.go).
func (c *Client) pipelinedH1() bool {
	return c.opts.Streams > 1 && c.opts.LaneProtocol == httppull.HTTP1
}

// runUnit fetches unit i of j on lane l: range i, or the whole resource.
func (c *Client) runUnit(j *segJob, i int, l *lane, near func(rest time.Duration)) error {
	if j.ranges == nil {
		b, err := fetchWhole(j.ctx, l, j.u, &c.opts.ConnOptions, j.m, 0, near, func(attempt int, err error) {
			c.retries.Add(1)
			c.opts.Logger.Debug("retrying segment", "url", j.u, "attempt", attempt, "err", err)
		})
		if err == nil {
			j.body = b
		} else if j.ctx.Err() == nil {
			j.cancel()
		}
		return err
	}
	r := j.ranges[i]
	err := c.fetchRange(j.ctxs[i], l, i, j.u, r, j.buf[r.Off:r.End()], j.m, j.sf, near)
	if err != nil && j.ctxs[i].Err() == nil {
		j.sf.cancelOthers(i) // the segment has failed: stop the other ranges
	}
	return err
}

// finish settles j's outcome once every unit has ended. Callers hold c.mu.
func (j *segJob) finish() {
	j.end = time.Now()
	switch {
	case j.sf != nil && j.sf.whole != nil:
		j.body, j.err = j.sf.whole, errWholeBody
	default:
		for _, err := range j.errs {
			if err != nil && !errors.Is(err, context.Canceled) {
				j.err = err
				break
			}
		}
		if j.err == nil {
			for _, err := range j.errs {
				if err != nil {
					j.err = err
					break
				}
			}
		}
		if j.err == nil && j.ranges != nil {
			j.body = j.buf
		}
	}
	if j.err != nil && !errors.Is(j.err, errWholeBody) {
		j.body = nil
	}
	j.buf = nil
	close(j.done)
	j.cancel()
}

// checkURL refuses what ParS cannot fetch and says whether the host ignores Range.
func (c *Client) checkURL(u string) (whole bool, err error) {
	host, err := parsURLHost(u)
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.noRange[host], nil
}

func (c *Client) noRangeFor(u string) {
	host, err := parsURLHost(u)
	if err != nil {
		return
	}
	c.mu.Lock()
	first := !c.noRange[host]
	c.noRange[host] = true
	c.mu.Unlock()
	if first {
		c.fallbacks.Add(1)
		c.opts.Logger.Info("server ignores Range; fetching whole segments from now on", "host", host)
	}
}

// warmLanes is how many lanes sizeOnLane takes: a rendition's first segment's n
// (its chain has none yet and takes these from the pool next), else 1 (later
// segments run on the chain's own lanes: more would be idle connections).
func warmLanes(first bool, n int) int {
	if first {
		return n
	}
	return 1
}

// sizeOnLane learns u's size on a lane of the pool (the index, else HEAD). The
// other n−1 connections the segment will use are dialled meanwhile (pipelined
// HTTP/1.1 lanes), so a rendition's first ranges do not wait a handshake after the
// index's round trip: the traces showed 2–3% of the connections' time before their
// first byte, at start-up.
func (c *Client) sizeOnLane(ctx context.Context, u string, n int) (int64, error) {
	ls, err := c.pool.get(max(n, 1))
	if err != nil {
		return 0, err
	}
	defer c.pool.put(ls)
	for _, l := range ls[1:] {
		if pc, ok := l.c.(*pipeConn); ok {
			go pc.connect(ctx, u) // a request on it waits for this dial rather than dialling again
		}
	}
	size, err := c.size(ctx, ls[0], u)
	if err != nil {
		return 0, err
	}
	if size > c.opts.MaxSegmentBytes {
		return 0, tooLarge(u, size, c.opts.MaxSegmentBytes)
	}
	return size, nil
}

// loadIndex fetches the sidecar index beside u once (no HEAD): a segment fetched
// whole needs no size, but the one after it is fetched ahead only if it is listed.
func (c *Client) loadIndex(ctx context.Context, u string) {
	ix, _, ok := indexURL(u)
	if !ok || c.opts.NoIndex {
		return
	}
	c.mu.Lock()
	_, known := c.indexes[ix]
	c.mu.Unlock()
	if known {
		return
	}
	ls, err := c.pool.get(1)
	if err != nil {
		return
	}
	defer c.pool.put(ls)
	_, _ = c.index(ctx, ls[0], ix) // a failure leaves the pipeline off for now
}

// knownSize is u's size if the client knows it without a request (learnt, or in an
// index fetched already).
func (c *Client) knownSize(u string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.sizes[u]; ok {
		return s, s >= 0 && s <= c.opts.MaxSegmentBytes
	}
	ix, file, ok := indexURL(u)
	if !ok || c.opts.NoIndex {
		return 0, false
	}
	s, ok := c.indexes[ix][file]
	return s, ok && s >= 0 && s <= c.opts.MaxSegmentBytes
}

// closeChains stops every chain (Client.Close).
func (c *Client) closeChains() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, ch := range c.chains {
		ch.retire()
		delete(c.chains, k)
	}
}

// parsURLHost is the host of an http(s) URL ParS can fetch.
func parsURLHost(u string) (string, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return "", fmt.Errorf("%s: %w: %w", u, err, media.ErrBadRequest)
	}
	if pu.Scheme != "http" && pu.Scheme != "https" {
		return "", fmt.Errorf("%s: ParS needs an http(s) URL: %w", u, media.ErrBadRequest)
	}
	return pu.Host, nil
}

// bodyWatch follows a body of known length as it arrives on lane l: its first byte
// is a round-trip sample of the lane, and near (if set) is told how long the rest is
// expected to take at the rate so far.
type bodyWatch struct {
	l           *lane
	sent, first time.Time
	got, total  int
	near        func(rest time.Duration)
}

func (w *bodyWatch) saw(n int, t time.Time) {
	if w == nil {
		return
	}
	if w.first.IsZero() {
		w.first = t
		if _, ok := w.l.c.(*pipeConn); !ok { // a pipeConn measures its own, without the dial
			w.l.sawRTT(t.Sub(w.sent))
		}
	}
	w.got += n
	// The rate is judged over a round trip at least: the first reads come as a burst
	// (a window's worth at once) and would make the rest look instantaneous.
	if rtt := time.Duration(w.l.rtt.Load()); w.near != nil && w.got < w.total && rtt > 0 {
		d := max(t.Sub(w.first), rtt)
		w.near(time.Duration(float64(w.total-w.got) / float64(w.got) * float64(d)))
	}
}
