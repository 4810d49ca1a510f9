package pars

import (
	"context"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streambed/streambed/internal/player"
)

// Parallel is the study's comparison mode: N persistent HTTP/1.1 connections, each
// fetching a different segment. When the player asks for segment n of a track,
// Parallel starts n and, on the connections left, the next segments of the same
// track (n+1, n+2, … up to N in flight), and answers the player's later requests from
// what is in flight or done. The first segment therefore shares the link with N−1
// others: start-up grows with N, which is what the study measured against ParS.
//
// The next segments' URLs are made by replacing the segment number in the last
// path element of the requested URL ("…/v360/7.m4s" → "…/v360/8.m4s"); a URL without
// the number there is fetched alone. A response's Start is when its request was sent
// on a connection, so its Duration is the real download time of that segment.
type Parallel struct {
	opts  ConnOptions
	n     int
	lanes []*lane
	ctx   context.Context
	stop  context.CancelFunc

	mu    sync.Mutex
	free  []*lane
	queue []*job          // waiting for a connection, first served first
	jobs  map[string]*job // media by URL: in flight, queued or done and not yet taken
	order []*job          // media jobs in creation order, for eviction

	prefetched, wasted, retries atomic.Int64
	unpredictable               atomic.Bool
}

type job struct {
	req     player.SegmentRequest
	done    chan struct{}
	started bool
	resp    *player.Response
	err     error
}

var (
	_ player.Fetcher     = (*Parallel)(nil)
	_ player.WireCounter = (*Parallel)(nil)
	_ player.Protocoler  = (*Parallel)(nil)
)

// NewParallel builds a Parallel fetcher over n connections.
func NewParallel(n int, o ConnOptions) (*Parallel, error) {
	if n < 1 || n > 64 {
		return nil, fmt.Errorf("parallel: %d connections: want 1..64", n)
	}
	o = o.withDefaults()
	lanes, err := newLanes(n, o)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	p := &Parallel{opts: o, n: n, lanes: lanes, ctx: ctx, stop: stop, jobs: map[string]*job{}}
	p.free = append(p.free, lanes...)
	return p, nil
}

// Connections is N.
func (p *Parallel) Connections() int { return p.n }

// Protocol is always HTTP/1.1.
func (p *Parallel) Protocol() string { return "HTTP/1.1" }

// WireBytes returns the bytes read and written on all connections so far.
func (p *Parallel) WireBytes() (read, written int64) { return wireBytes(p.lanes) }

// Close stops what is in flight and closes the connections. Fetches waiting for a
// queued segment fail.
func (p *Parallel) Close() error {
	p.stop()
	p.mu.Lock()
	for _, j := range p.queue {
		j.err = fmt.Errorf("parallel: closed: %w", context.Canceled)
		close(j.done)
	}
	p.queue = nil
	p.mu.Unlock()
	closeLanes(p.lanes)
	return nil
}

// ParallelStats counts what a Parallel fetcher did.
type ParallelStats struct {
	Prefetched int64 // segments fetched ahead of the player's request
	Wasted     int64 // prefetched segments dropped unrequested
	Retries    int64
}

// Stats returns the counters so far.
func (p *Parallel) Stats() ParallelStats {
	return ParallelStats{Prefetched: p.prefetched.Load(), Wasted: p.wasted.Load(), Retries: p.retries.Load()}
}

// Fetch answers req from a fetch in flight or done, or starts it, and keeps N
// segments of its track in flight.
func (p *Parallel) Fetch(ctx context.Context, req player.SegmentRequest) (*player.Response, error) {
	if err := p.ctx.Err(); err != nil {
		return nil, fmt.Errorf("parallel: closed: %w", err)
	}
	p.mu.Lock()
	var j *job
	if req.Kind == player.RequestMedia {
		j = p.jobs[req.URL]
	}
	if j == nil {
		j = &job{req: req, done: make(chan struct{})}
		if req.Kind == player.RequestMedia {
			p.jobs[req.URL] = j
			p.order = append(p.order, j)
		}
		p.enqueue(j, true)
	} else if !j.started {
		p.promote(j)
	}
	if req.Kind == player.RequestMedia {
		p.prefetch(req)
		p.evict()
	}
	p.mu.Unlock()

	select {
	case <-j.done:
	case <-ctx.Done():
		return nil, ctx.Err() // the fetch goes on; a retry of the request finds it
	}
	p.mu.Lock()
	if p.jobs[req.URL] == j {
		delete(p.jobs, req.URL)
	}
	p.mu.Unlock()
	if j.err != nil {
		return nil, j.err
	}
	resp := *j.resp
	if !req.KeepBody {
		resp.Body = nil
	}
	return &resp, nil
}

// prefetch queues the segments after req until N fetches are outstanding. Callers
// hold p.mu.
func (p *Parallel) prefetch(req player.SegmentRequest) {
	for k := uint64(1); k < uint64(p.n) && p.outstanding() < p.n; k++ {
		u, ok := nextURL(req.URL, req.Number, req.Number+k)
		if !ok {
			if !p.unpredictable.Swap(true) {
				p.opts.Logger.Warn("parallel: cannot derive the next segment URLs; fetching one segment at a time", "url", req.URL)
			}
			return
		}
		if p.jobs[u] != nil {
			continue
		}
		next := req
		next.URL, next.Number, next.Time, next.KeepBody = u, req.Number+k, 0, true
		j := &job{req: next, done: make(chan struct{})}
		p.jobs[u] = j
		p.order = append(p.order, j)
		p.prefetched.Add(1)
		p.enqueue(j, false)
	}
}

// outstanding counts fetches running or waiting. Callers hold p.mu.
func (p *Parallel) outstanding() int { return len(p.lanes) - len(p.free) + len(p.queue) }

// evict drops finished media jobs nobody took once more than 4·N are kept (the
// player switched rendition, or the asset ended). Callers hold p.mu.
func (p *Parallel) evict() {
	for len(p.order) > 4*p.n {
		j := p.order[0]
		select {
		case <-j.done:
		default:
			return // oldest still running: keep everything for now
		}
		p.order = p.order[1:]
		if p.jobs[j.req.URL] == j {
			delete(p.jobs, j.req.URL)
			p.wasted.Add(1)
		}
	}
}

// enqueue starts j on a free connection or queues it (at the front when the player
// is waiting for it). Callers hold p.mu.
func (p *Parallel) enqueue(j *job, front bool) {
	if len(p.free) > 0 {
		l := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		j.started = true
		go p.run(j, l)
		return
	}
	if front {
		p.queue = append([]*job{j}, p.queue...)
	} else {
		p.queue = append(p.queue, j)
	}
}

// promote moves a queued job to the front. Callers hold p.mu.
func (p *Parallel) promote(j *job) {
	for i, q := range p.queue {
		if q == j {
			copy(p.queue[1:i+1], p.queue[:i])
			p.queue[0] = j
			return
		}
	}
}

// run fetches j on lane l, then serves the queue with l.
func (p *Parallel) run(j *job, l *lane) {
	for j != nil {
		p.fetch(j, l)
		close(j.done)
		p.mu.Lock()
		j = nil
		if len(p.queue) > 0 && p.ctx.Err() == nil {
			j = p.queue[0]
			p.queue = p.queue[1:]
			j.started = true
		} else {
			p.free = append(p.free, l)
		}
		p.mu.Unlock()
	}
}

func (p *Parallel) fetch(j *job, l *lane) {
	if j.req.Kind != player.RequestMedia {
		j.resp, j.err = l.c.Fetch(p.ctx, j.req) // manifests, init, clock: one plain GET
		return
	}
	start := time.Now()
	r0, w0 := l.c.WireBytes()
	m := newMeter(1)
	body, err := fetchWhole(p.ctx, l, j.req.URL, &p.opts, m, 0, nil, func(attempt int, err error) {
		p.retries.Add(1)
		p.opts.Logger.Debug("retrying segment", "url", j.req.URL, "attempt", attempt, "err", err)
	})
	if err != nil {
		j.err = err
		return
	}
	end := time.Now()
	r1, w1 := l.c.WireBytes()
	fb := m.firstByte()
	if fb.IsZero() {
		fb = end
	}
	payload := int64(len(body))
	j.resp = &player.Response{Body: body, PayloadBytes: payload, Start: start, FirstByte: fb, End: end,
		Protocol: "HTTP/1.1", OverheadBytes: max(r1-r0+w1-w0-payload, 0), OverheadExact: true}
}

// nextURL replaces the segment number from in the last path element of u by to;
// ok is false when from is not there as a whole number.
func nextURL(u string, from, to uint64) (string, bool) {
	pu, err := url.Parse(u)
	if err != nil {
		return "", false
	}
	dir, file := path.Split(pu.Path)
	num := strconv.FormatUint(from, 10)
	// Look in the name before its extension: "4.m4s" has one segment number.
	stem := strings.TrimSuffix(file, path.Ext(file))
	i := strings.Index(stem, num)
	if i < 0 || strings.Count(stem, num) != 1 {
		return "", false
	}
	if i > 0 && isDigit(file[i-1]) || i+len(num) < len(file) && isDigit(file[i+len(num)]) {
		return "", false
	}
	pu.Path = dir + file[:i] + strconv.FormatUint(to, 10) + file[i+len(num):]
	pu.RawPath = ""
	return pu.String(), true
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }
