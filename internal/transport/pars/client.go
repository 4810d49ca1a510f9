package pars

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/transport/httppull"
)

// ParS's defaults for the connections' requests (docs/results/pars.md, 2026-11-24:
// 85% of a lossy 10 Mbit/s link at N = 4 against 79–80% with one request and one
// range per connection at a time). Streams = 1 and RangesPerConnection = 1 turn
// them off.
const (
	// DefaultStreams: each HTTP/1.1 connection pipelines its next range's request
	// behind the current body (h1pipe.go), hiding the request's round trip.
	DefaultStreams = 2
	// DefaultRangesPerConnection: each segment after a rendition's first is cut into
	// two ranges per connection, taken from the queue as connections free up.
	DefaultRangesPerConnection = 2
)

// Options configure a ParS Client.
type Options struct {
	ConnOptions
	// Connections is N, fixed (1..MaxConnections). 0 means Auto.
	Connections int
	// Auto chooses N with the model (Estimator).
	Auto bool
	// MaxConnections bounds N and is the number of connections the client may open (8).
	MaxConnections int
	// Estimator tunes Auto (its Max is MaxConnections).
	Estimator EstimatorConfig
	// MinRange is the smallest range worth its own request (16 KiB): a segment is cut
	// into at most size/MinRange ranges.
	MinRange int64
	// NoIndex skips the sidecar index and learns every size by HEAD.
	NoIndex bool
	// SkipRTTs and MinRTTs shape the throughput sample "after slow start" of each
	// segment: skip this many round trips after each connection's first byte, and
	// keep the sample only if at least MinRTTs round trips remain (4 and 4).
	SkipRTTs, MinRTTs float64
	// WholeSegmentSamples makes each segment's throughput sample its size over its
	// whole download time (slow start, the requests and the wait for the slowest range
	// included) instead of the throughput after slow start. The lab found the model
	// fits these better under random loss (docs/results/pars.md).
	WholeSegmentSamples bool
	// NoPipeline fetches each segment alone, as the player asks for it, instead of
	// starting the next segment's ranges on connections that finished their range of
	// the current one (pipeline.go). For comparisons.
	NoPipeline bool
	// Ahead is how many segments beyond the one asked for the pipeline may fetch (2):
	// with one, a connection that finished its range of the next segment while the
	// current one's slowest range was still running had nothing to do.
	Ahead int
	// RangesPerConnection cuts each pipelined segment into this many ranges per
	// connection (0: DefaultRangesPerConnection, 2): the connections take them from the queue as they become free,
	// so a slow connection holds a smaller share of the segment. Pays off where the
	// next range's request does not cost a round trip (Streams > 1). With a fixed N
	// only: the estimator's samples need one range per connection.
	RangesPerConnection int
	// Trace, if set, is told what each unit of a pipelined segment did on its
	// connection (trace.go), from the connection's goroutine.
	Trace func(UnitTrace)
}

// Client is ParS from the player's side: each media segment is fetched as N byte
// ranges over N persistent HTTP/1.1 connections at once and reassembled in order.
// It is a player.Fetcher, player.WireCounter and player.Protocoler, safe for
// concurrent use: concurrent fetches (the player's video and audio) each take their
// own connections from a pool of persistent ones.
type Client struct {
	opts Options
	pool *lanePool
	est  *Estimator // Auto only

	mu      sync.Mutex
	indexes map[string]map[string]int64 // index URL → file → size; nil: no index there
	sizes   map[string]int64            // segment URL → size learnt by HEAD
	noRange map[string]bool             // host → answered a range with 200

	chains map[string]*chain // by URL with the segment number taken out; guarded by mu
	life   context.Context   // ends at Close: fetches ahead of the player run under it
	stop   context.CancelFunc

	lastN                                       atomic.Int64
	segments, ranges, retries, heads, fallbacks atomic.Int64
	prefetched, wasted                          atomic.Int64
	body                                        atomic.Int64 // BodyBytes
	samples                                     sampleLog
}

var (
	_ player.Fetcher     = (*Client)(nil)
	_ player.WireCounter = (*Client)(nil)
	_ player.Protocoler  = (*Client)(nil)
)

// New builds a ParS client.
func New(o Options) (*Client, error) {
	if o.Streams == 0 && (o.LaneProtocol == "" || o.LaneProtocol == httppull.HTTP1) {
		o.Streams = DefaultStreams
	}
	if o.RangesPerConnection == 0 {
		o.RangesPerConnection = DefaultRangesPerConnection
	}
	o.ConnOptions = o.ConnOptions.withDefaults()
	if o.MaxConnections <= 0 {
		o.MaxConnections = 8
	}
	if o.Connections == 0 {
		o.Auto = true
	}
	if !o.Auto && (o.Connections < 1 || o.Connections > o.MaxConnections) {
		return nil, fmt.Errorf("pars: %d connections: want 1..%d or auto", o.Connections, o.MaxConnections)
	}
	if o.MinRange <= 0 {
		o.MinRange = 16 << 10
	}
	if o.Ahead <= 0 {
		o.Ahead = 2
	}
	if o.SkipRTTs <= 0 {
		o.SkipRTTs = 4
	}
	if o.MinRTTs <= 0 {
		o.MinRTTs = 4
	}
	c := &Client{opts: o, indexes: map[string]map[string]int64{}, sizes: map[string]int64{}, noRange: map[string]bool{},
		pool: newLanePool(o.ConnOptions, 2*o.MaxConnections+1), chains: map[string]*chain{}}
	c.life, c.stop = context.WithCancel(context.Background())
	if o.Auto {
		o.Estimator.Max = o.MaxConnections
		c.est = NewEstimator(o.Estimator)
	}
	if _, err := newLanes(1, o.ConnOptions); err != nil { // check the options now
		return nil, err
	}
	return c, nil
}

// Protocol is HTTP/1.1 (ParS needs separate TCP connections), or HTTP/2.0 when each
// of them carries more than one request at once (ConnOptions.Streams).
func (c *Client) Protocol() string {
	if c.opts.LaneProtocol == httppull.HTTP1 {
		return "HTTP/1.1"
	}
	return "HTTP/2.0"
}

// BodyBytes returns the response body bytes received on all connections so far, as
// they arrive: segments fetched ahead and not yet asked for, ranges later thrown
// away and retried ranges' partial bodies included; HTTP headers and the answers of
// cancelled pipelined requests drained by the connection (Stats.Drained) not. It is
// what the client received of the media at any moment, where Response.PayloadBytes
// counts only segments handed to the player.
func (c *Client) BodyBytes() int64 { return c.body.Load() }

// newMeter is a meter of one segment fetch whose arrivals also count in BodyBytes.
func (c *Client) newMeter(lanes int) *meter {
	m := newMeter(lanes)
	m.body = &c.body
	return m
}

// WireBytes returns the bytes read and written on all connections so far.
func (c *Client) WireBytes() (read, written int64) { return c.pool.wireBytes() }

// Close closes the connections.
func (c *Client) Close() error {
	c.stop()
	c.closeChains()
	c.pool.close()
	return nil
}

// Estimate returns the estimator's view (Auto), and false with fixed N.
func (c *Client) Estimate() (Estimate, bool) {
	if c.est == nil {
		return Estimate{}, false
	}
	return c.est.Current(), true
}

// Decisions returns the estimator's estimates so far, oldest first (Auto), or nil.
func (c *Client) Decisions() []Estimate {
	if c.est == nil {
		return nil
	}
	return c.est.Decisions()
}

// Connections is the N used for the last segment (the fixed N before any).
func (c *Client) Connections() int {
	if n := c.lastN.Load(); n > 0 {
		return int(n)
	}
	if c.est != nil {
		return c.est.Next()
	}
	return c.opts.Connections
}

// Stats counts what the client did.
type Stats struct {
	Segments  int64 // media segments fetched
	Ranges    int64 // range requests sent (retries included)
	Retries   int64 // ranges retried after a failure or stall
	Heads     int64 // HEAD requests for sizes
	Fallbacks int64 // segments fetched whole because the server ignored Range
	// Prefetched counts segments the player got from a fetch started before it asked
	// (pipelining); Wasted those fetched ahead and dropped unasked.
	Prefetched, Wasted int64
	// Drained counts answers to cancelled pipelined requests (a seek) that were read
	// and thrown away to keep their connection open (ConnOptions.DrainLimit).
	Drained int64
	Samples []Sample
}

// Sample is the throughput of one segment download after slow start.
type Sample struct {
	N     int
	Mixed bool // shared the link with a segment fetched with another N: not given to the estimator
	Bytes int64
	D     time.Duration
	Bps   float64
}

// Stats returns the counters so far.
func (c *Client) Stats() Stats {
	return Stats{Segments: c.segments.Load(), Ranges: c.ranges.Load(), Retries: c.retries.Load(),
		Heads: c.heads.Load(), Fallbacks: c.fallbacks.Load(), Prefetched: c.prefetched.Load(), Wasted: c.wasted.Load(),
		Drained: c.pool.drained(), Samples: c.samples.all()}
}

// Fetch gets req: media segments in N ranges, everything else with one GET.
func (c *Client) Fetch(ctx context.Context, req player.SegmentRequest) (*player.Response, error) {
	if req.Kind != player.RequestMedia {
		ls, err := c.pool.get(1)
		if err != nil {
			return nil, err
		}
		defer c.pool.put(ls)
		return ls[0].c.Fetch(ctx, req)
	}
	n := c.opts.Connections
	if c.est != nil {
		n = c.est.Next()
	}
	var resp *player.Response
	var sample Sample
	var err error
	pipelined := false
	if !c.opts.NoPipeline {
		resp, sample, pipelined, err = c.fetchPipelined(ctx, req, n)
	}
	if !pipelined {
		resp, sample, err = c.fetchSegment(ctx, req.URL, n)
		sample.N = n
	}
	if err != nil {
		return nil, err
	}
	c.segments.Add(1)
	// A segment fetched ahead used the N of its time (sample.N): the estimator takes
	// it only if that is the N it asks for now.
	c.lastN.Store(int64(sample.N))
	if c.est != nil && !sample.Mixed && resp.PayloadBytes >= int64(sample.N)<<16 {
		c.est.ObserveWhole(sample.N, resp.PayloadBytes, resp.End.Sub(resp.Start))
	}
	if sample.Bytes > 0 {
		c.samples.add(sample)
		if c.est != nil && !sample.Mixed {
			c.est.Observe(sample.N, sample.Bytes, sample.D)
		}
	}
	if c.est != nil {
		c.est.Fetched(sample.N)
	}
	if !req.KeepBody {
		resp.Body = nil
	}
	return resp, nil
}

// FetchURL fetches one resource as ParS does a media segment, with n connections,
// keeping the body (for tools and tests).
func (c *Client) FetchURL(ctx context.Context, u string, n int) (*player.Response, error) {
	if n < 1 || n > c.opts.MaxConnections {
		return nil, fmt.Errorf("pars: %d connections: want 1..%d", n, c.opts.MaxConnections)
	}
	resp, sample, err := c.fetchSegment(ctx, u, n)
	if err == nil && sample.Bytes > 0 {
		sample.N = n
		c.samples.add(sample)
	}
	return resp, err
}

// fetchSegment downloads u over n connections.
func (c *Client) fetchSegment(ctx context.Context, u string, n int) (*player.Response, Sample, error) {
	start := time.Now()
	pu, err := url.Parse(u)
	if err != nil {
		return nil, Sample{}, fmt.Errorf("%s: %w: %w", u, err, media.ErrBadRequest)
	}
	if pu.Scheme != "http" && pu.Scheme != "https" {
		return nil, Sample{}, fmt.Errorf("%s: ParS needs an http(s) URL: %w", u, media.ErrBadRequest)
	}
	c.mu.Lock()
	whole := c.noRange[pu.Host]
	c.mu.Unlock()
	lanes, err := c.pool.get(1)
	if err != nil {
		return nil, Sample{}, err
	}
	w0 := wireTotal(lanes)
	defer func() { c.pool.put(lanes) }()
	var ranges []Range
	size := int64(-1)
	if n > 1 && !whole {
		if size, err = c.size(ctx, lanes[0], u); err != nil {
			return nil, Sample{}, err
		}
		if size > c.opts.MaxSegmentBytes {
			return nil, Sample{}, tooLarge(u, size, c.opts.MaxSegmentBytes)
		}
		if size >= 0 {
			ranges = Split(size, n, c.opts.MinRange)
		}
	}
	if len(ranges) > 1 {
		more, err := c.pool.get(len(ranges) - 1)
		if err != nil {
			return nil, Sample{}, err
		}
		lanes = append(lanes, more...)
		w0 += wireTotal(more)
	}
	m := c.newMeter(max(len(ranges), 1))
	var body []byte
	if len(ranges) <= 1 {
		body, err = c.getWhole(ctx, lanes[0], u, m, 0)
	} else {
		body, err = c.getRanges(ctx, lanes, u, size, ranges, m)
		if errors.Is(err, errWholeBody) {
			c.mu.Lock()
			c.noRange[pu.Host] = true
			c.mu.Unlock()
			c.fallbacks.Add(1)
			c.opts.Logger.Info("server ignores Range; fetching whole segments from now on", "host", pu.Host)
			err = nil
		}
	}
	if err != nil {
		return nil, Sample{}, err
	}
	end := time.Now()
	resp := &player.Response{Body: body, PayloadBytes: int64(len(body)), Start: start, FirstByte: m.firstByte(), End: end, Protocol: "HTTP/1.1"}
	if resp.FirstByte.IsZero() {
		resp.FirstByte = end
	}
	resp.OverheadBytes, resp.OverheadExact = max(wireTotal(lanes)-w0-resp.PayloadBytes, 0), true
	return resp, c.sample(m, n, len(ranges), start, end, resp.PayloadBytes), nil
}

// sample is the throughput sample of one segment fetched with n connections in
// ranges ranges (0: whole), or none.
func (c *Client) sample(m *meter, n, ranges int, start, end time.Time, payload int64) Sample {
	switch {
	case ranges != n && (n != 1 || ranges > 1):
		// fewer ranges than connections (a small segment): not a sample of X_n
	case c.opts.WholeSegmentSamples:
		// Small segments (audio) measure round trips, not throughput: 64 KiB per connection at least.
		if d := end.Sub(start); d > 0 && payload >= int64(n)<<16 {
			return Sample{Bytes: payload, D: d, Bps: float64(payload) * 8 / d.Seconds()}
		}
	default:
		if b, d, ok := m.steady(c.opts.SkipRTTs, c.opts.MinRTTs); ok {
			return Sample{Bytes: b, D: d, Bps: float64(b) * 8 / d.Seconds()}
		}
	}
	return Sample{}
}

// getWhole GETs u without a Range header on lane l (meter slot i).
func (c *Client) getWhole(ctx context.Context, l *lane, u string, m *meter, i int) ([]byte, error) {
	return fetchWhole(ctx, l, u, &c.opts.ConnOptions, m, i, nil, func(attempt int, err error) {
		c.retries.Add(1)
		c.opts.Logger.Debug("retrying segment", "url", u, "attempt", attempt, "err", err)
	})
}

// fetchWhole GETs u on lane l, reporting arrivals to meter slot i, and retries a
// failed or stalled request from the start up to o.MaxRetries times.
func fetchWhole(ctx context.Context, l *lane, u string, o *ConnOptions, m *meter, i int, near func(rest time.Duration), onRetry func(attempt int, err error)) ([]byte, error) {
	var lastErr error
	for attempt := 0; attempt <= o.MaxRetries; attempt++ {
		if attempt > 0 {
			onRetry(attempt, lastErr)
		}
		sent := time.Now()
		m.sent(i, sent)
		x, err := l.open(ctx, http.MethodGet, u, nil, o)
		if err == nil {
			var b []byte
			b, err = readWhole(x, m, i, o.MaxSegmentBytes, &bodyWatch{l: l, sent: sent, near: near})
			x.close()
			if err == nil {
				m.done(i, time.Now())
				return b, nil
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if isPermanent(err) {
			return nil, errors.Unwrap(err)
		}
		lastErr = err
	}
	return nil, fmt.Errorf("GET %s: %d attempts: %w", u, o.MaxRetries+1, lastErr)
}

// readWhole reads a 200 response's body, of at most limit bytes.
func readWhole(x *exchange, m *meter, i int, limit int64, w *bodyWatch) ([]byte, error) {
	if x.resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(x.resp.Body, 64<<10))
		return nil, statusError(x.resp)
	}
	if x.resp.ContentLength > limit {
		return nil, tooLarge(x.resp.Request.URL.String(), x.resp.ContentLength, limit)
	}
	if x.resp.ContentLength >= 0 {
		b := make([]byte, x.resp.ContentLength)
		if w != nil {
			w.total = len(b)
		}
		_, err := x.read(b, func(n int, t time.Time) {
			m.add(i, n, t)
			w.saw(n, t)
		})
		return b, err
	}
	// No length (chunked): read to the end, in pieces so the watchdog sees progress.
	var out []byte
	buf := make([]byte, 64<<10)
	for {
		k, err := x.resp.Body.Read(buf)
		if k > 0 {
			if int64(len(out)+k) > limit {
				return nil, tooLarge(x.resp.Request.URL.String(), int64(len(out)+k), limit)
			}
			out = append(out, buf[:k]...)
			x.timer.Reset(x.stall)
			m.add(i, k, time.Now())
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, x.cause(err)
		}
	}
}

// tooLarge refuses a segment over ConnOptions.MaxSegmentBytes before it is allocated.
func tooLarge(u string, size, limit int64) error {
	return fmt.Errorf("%s: segment of %d bytes is over the %d-byte limit (MaxSegmentBytes): %w", u, size, limit, media.ErrInvalidMedia)
}

// segFetch is the shared state of one segment's range fetches.
type segFetch struct {
	size    int64                // the segment's size as the client believes it
	cancels []context.CancelFunc // one per lane
	once    sync.Once
	whole   []byte // set when the server ignored Range and one lane read it all
}

// cancelOthers stops every lane but lane i (-1: all).
func (sf *segFetch) cancelOthers(i int) {
	for j, cancel := range sf.cancels {
		if j != i {
			cancel()
		}
	}
}

// getRanges fetches ranges of u (size bytes) at once, lane i fetching range i, and
// returns the reassembled segment. A range that fails or stalls is retried from its
// first missing byte, on a new connection of the same lane; the other ranges go on.
func (c *Client) getRanges(ctx context.Context, lanes []*lane, u string, size int64, ranges []Range, m *meter) ([]byte, error) {
	buf := make([]byte, size)
	sf := &segFetch{size: size, cancels: make([]context.CancelFunc, len(ranges))}
	ctxs := make([]context.Context, len(ranges))
	for i := range ranges {
		ctxs[i], sf.cancels[i] = context.WithCancel(ctx)
	}
	defer sf.cancelOthers(-1)
	errs := make([]error, len(ranges))
	var wg sync.WaitGroup
	for i, r := range ranges {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.fetchRange(ctxs[i], lanes[i], i, u, r, buf[r.Off:r.End()], m, sf, nil)
			if errs[i] != nil && ctxs[i].Err() == nil {
				sf.cancelOthers(i) // the segment has failed: stop the other ranges
			}
		}()
	}
	wg.Wait()
	if sf.whole != nil {
		return sf.whole, errWholeBody
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// fetchRange fills dst with range r of u on lane l (meter slot i), retrying the
// missing rest of the range after a failure. near, if not nil, is called as the body
// arrives with the time its rest is expected to take (pipeline.go).
func (c *Client) fetchRange(ctx context.Context, l *lane, i int, u string, r Range, dst []byte, m *meter, sf *segFetch, near func(rest time.Duration)) error {
	var got int64
	var lastErr error
	for attempt := 0; attempt <= c.opts.MaxRetries; attempt++ {
		if attempt > 0 {
			c.retries.Add(1)
			c.opts.Logger.Debug("retrying range", "url", u, "range", r.Header(), "from", r.Off+got, "attempt", attempt, "err", lastErr)
		}
		rest := Range{Off: r.Off + got, Len: r.Len - got}
		k, err := c.readRange(ctx, l, i, u, rest, dst[got:], m, sf, near)
		got += int64(k)
		if err == nil {
			m.done(i, time.Now())
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, errWholeBody) {
			return nil // another lane has (or this one had) the whole resource
		}
		if isPermanent(err) {
			return errors.Unwrap(err)
		}
		lastErr = err
	}
	return fmt.Errorf("GET %s range %s: %d attempts: %w", u, r.Header(), c.opts.MaxRetries+1, lastErr)
}

// readRange sends one range request and reads what it can into dst.
func (c *Client) readRange(ctx context.Context, l *lane, i int, u string, r Range, dst []byte, m *meter, sf *segFetch, near func(rest time.Duration)) (int, error) {
	c.ranges.Add(1)
	sent := time.Now()
	m.sent(i, sent)
	x, err := l.open(ctx, http.MethodGet, u, &r, &c.opts.ConnOptions)
	if err != nil {
		return 0, err
	}
	defer x.close()
	w := &bodyWatch{l: l, sent: sent, total: len(dst), near: near}
	onRead := func(n int, t time.Time) {
		m.add(i, n, t)
		w.saw(n, t)
	}
	switch x.resp.StatusCode {
	case http.StatusPartialContent:
		got, total, ok := contentRange(x.resp.Header.Get("Content-Range"))
		if !ok || got != r || (total >= 0 && total != sf.size) {
			if total >= 0 {
				c.learnSize(u, total) // a stale index or a changed resource: the retry uses the server's size
			}
			return 0, permanentError{fmt.Errorf("GET %s: asked %s of %d bytes, got Content-Range %q", u, r.Header(), sf.size, x.resp.Header.Get("Content-Range"))}
		}
		return x.read(dst, onRead)
	case http.StatusOK:
		// The server ignores Range: the first lane to notice keeps this response (the
		// whole resource) and stops the others.
		first := false
		sf.once.Do(func() { first = true })
		if !first {
			return 0, errWholeBody
		}
		sf.cancelOthers(i)
		b, err := readWhole(x, m, i, c.opts.MaxSegmentBytes, nil)
		if err != nil {
			return 0, permanentError{err}
		}
		sf.whole = b
		return 0, errWholeBody
	case http.StatusRequestedRangeNotSatisfiable:
		c.forgetSize(u)
		return 0, permanentError{fmt.Errorf("GET %s range %s: %s (the size changed?)", u, r.Header(), x.resp.Status)}
	default:
		io.Copy(io.Discard, io.LimitReader(x.resp.Body, 64<<10))
		return 0, statusError(x.resp)
	}
}

// statusError maps a response status to the player's error kinds (httppull's mapping).
func statusError(resp *http.Response) error {
	return permanentError{httppull.StatusError(resp.Request.URL.String(), resp)}
}
