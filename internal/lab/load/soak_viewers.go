package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streambed/streambed/internal/lab/load/workload"
	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/player/hls"
	"github.com/streambed/streambed/internal/transport/wspush"
)

// connSet keeps a session's TCP connections so that it can vanish: abort resets
// them (SO_LINGER 0), so the origin sees neither a WebSocket close nor the end of a
// response. With slowBps every connection reads at that rate.
type connSet struct {
	slowBps int64
	dials   *atomic.Int64 // the run's count of connections opened, if kept
	mu      sync.Mutex
	conns   []*net.TCPConn
}

func (s *connSet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if s.dials != nil {
		s.dials.Add(1)
	}
	c, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		s.mu.Lock()
		s.conns = append(s.conns, tc)
		s.mu.Unlock()
	}
	if s.slowBps > 0 {
		return &slowConn{Conn: c, bps: s.slowBps}, nil
	}
	return c, nil
}

// abort resets every connection: the viewer vanishes.
func (s *connSet) abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		_ = c.SetLinger(0)
		_ = c.Close()
	}
	s.conns = nil
}

// close closes what the session left open (after a clean leave, nothing).
func (s *connSet) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.conns = nil
}

// slowConn reads at most bps bytes a second, in small reads, so the origin's socket
// buffer fills and it has to hold or drop media for this viewer.
type slowConn struct {
	net.Conn
	bps int64
}

func (c *slowConn) Read(b []byte) (int, error) {
	if len(b) > 4096 {
		b = b[:4096]
	}
	n, err := c.Conn.Read(b)
	if n > 0 {
		time.Sleep(time.Duration(int64(n) * int64(time.Second) / c.bps))
	}
	return n, err
}

// stallWatch counts stalls: gaps longer than after between new video segments. A
// healthy viewer's stall goes into the event log with its time and cause.
type stallWatch struct {
	after   time.Duration
	last    time.Time
	n       int
	starved int // of n, stalls the load generator's own lateness accounts for
	v       *viewerEnv
}

// stallWatch starts the session's stall watch; runSlot takes the session's stalls
// from it, however the session ended (a session that fails or is cut in the middle
// of a request keeps the stalls it had).
func (v *viewerEnv) stallWatch() *stallWatch {
	v.sw = &stallWatch{after: v.o.StallAfter, last: time.Now(), v: v}
	return v.sw
}

func (w *stallWatch) segment(now time.Time) {
	if now.Sub(w.last) > w.after {
		w.stalled(now)
	}
	w.last = now
}

// finish counts the wait at the end of the session if it already is a stall.
func (w *stallWatch) finish(now time.Time) {
	if now.Sub(w.last) > w.after {
		w.stalled(now)
	}
}

func (w *stallWatch) stalled(now time.Time) {
	w.n++
	if w.v != nil && w.v.ev != nil && !w.v.slow && w.v.ev.stall(w.v.kindName, w.last, now) == CauseViewerStarved {
		w.starved++
	}
}

// wsViewer receives a push session at the fixed policy. A clean leave sends a
// WebSocket close; a vanishing one resets the connection.
func wsViewer(ctx context.Context, v *viewerEnv) session {
	var s session
	hc := &http.Client{Transport: &http.Transport{DialContext: v.conns.dial, TLSClientConfig: tlsConfig(v.o.Insecure)}}
	defer hc.CloseIdleConnections()
	t0 := time.Now()
	c, err := wspush.Dial(ctx, v.t.WSURL, wspush.DialOptions{HTTPClient: hc, Start: wspush.Start{Policy: wspush.PolicyFixed, Tracks: v.t.TrackIDs()}})
	if err != nil {
		return v.fail(ctx, s, "upgrade", t0, err)
	}
	video := -1
	for i, tr := range c.Ready.Tracks {
		if tr.ID == v.t.Reps[0].ID {
			video = i
		}
	}
	// Read without the session's deadline: the leave below ends the reads.
	left := make(chan struct{})
	go func() {
		defer close(left)
		<-ctx.Done()
		if v.vanish {
			v.conns.abort()
		} else {
			_ = c.Close()
		}
	}()
	defer func() { <-left }()
	sw := v.stallWatch()
	var prev uint64
	havePrev := false
	for {
		m, err := c.Next(context.WithoutCancel(ctx))
		if err != nil {
			if ctx.Err() == nil {
				s = v.fail(ctx, s, "read", sw.last, err)
			} else {
				sw.finish(time.Now())
			}
			break
		}
		f := m.Frame
		if f == nil || f.Kind != wspush.KindChunk || int(f.Track) != video {
			continue
		}
		if f.Start {
			if havePrev && f.Sequence != prev+1 {
				s.skips++
				v.skip("sequence gap")
			}
			prev, havePrev = f.Sequence, true
		}
		if f.End {
			s.segments++
			sw.segment(m.At)
		}
	}
	for range c.Stats.Skips {
		v.skip("origin dropped media")
	}
	s.skips += c.Stats.Skips
	return s
}

// pullViewer requests each segment of each track the moment it is available, over
// HTTP/1.1 or HTTP/2 (one connection), as the capacity clients do, timing each
// response. A vanishing viewer leaves in the middle of a response.
func pullViewer(ctx context.Context, v *viewerEnv) session {
	var s session
	t := v.t
	hc := httpClient(v.kindName, isHTTPS(t.HTTPBase), v.o.Insecure, v.conns.dial)
	defer hc.CloseIdleConnections()
	for _, r := range t.Reps {
		if r.InitURL != "" {
			t0 := time.Now()
			if err := fetchDrain(ctx, hc, r.InitURL); err != nil {
				return v.fail(ctx, s, "init", t0, err)
			}
		}
	}
	ix := t.Reps[0].Index
	seg, ok := ix.Last(time.Now())
	if !ok {
		return v.fail(ctx, s, "index", time.Now(), errors.New("no segment available yet"))
	}
	latest := seg.URL
	pos := seg.Start
	sw := v.stallWatch()
	for ctx.Err() == nil {
		next, ok := ix.Next(pos)
		if !ok {
			return v.fail(ctx, s, "index", time.Now(), errors.New("the timeline ended"))
		}
		if !workload.SleepUntil(ctx, next.AvailableAt) {
			break
		}
		for i, r := range t.Reps {
			u := next.URL
			if i > 0 {
				rs, ok := r.Index.Next(pos)
				if !ok {
					continue
				}
				u = rs.URL
			}
			t0 := time.Now()
			err := fetchDrain(ctx, hc, u)
			var se *statusErr
			switch {
			case errors.As(err, &se) && (se.code == http.StatusNotFound || se.code == http.StatusGone):
				s.skips++ // not there (yet or any more): this viewer missed a segment
				v.skip(fmt.Sprintf("segment %d", se.code))
			case err != nil:
				return v.fail(ctx, s, "segment", t0, err)
			case !v.slow:
				v.rec.add(v.kindName, time.Since(t0))
			}
		}
		if ctx.Err() == nil {
			s.segments++
			sw.segment(time.Now())
			latest = next.URL
		}
		pos = next.End()
	}
	sw.finish(time.Now())
	if v.vanish {
		vanishMidResponse(hc, v.conns, latest)
	}
	return s
}

// vanishMidResponse starts a GET of u, takes its first byte and resets the
// connection.
func vanishMidResponse(hc *http.Client, conns *connSet, u string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = fetchBody(ctx, hc, u, func(io.Reader) { conns.abort() })
	conns.abort()
}

// hlsViewer reloads the tracks' media playlists every half target duration and
// fetches each new segment, from the live edge on (HTTP/1.1).
func hlsViewer(ctx context.Context, v *viewerEnv) session {
	var s session
	t := v.t
	hc := httpClient(HTTP1, isHTTPS(t.HTTPBase), v.o.Insecure, v.conns.dial)
	defer hc.CloseIdleConnections()
	urls := make([]string, len(t.Reps))
	for i, r := range t.Reps {
		urls[i] = t.HTTPBase + layout.TrackFile(true, t.Channel, r.ID, layout.Playlist)
	}
	last := make([]uint64, len(urls)) // newest sequence fetched per track; 0: none yet
	inits := make([]bool, len(urls))
	sw := v.stallWatch()
	latest := ""
	reload := max(t.SegmentDuration/2, 500*time.Millisecond)
	for ctx.Err() == nil {
		for i, u := range urls {
			t0 := time.Now()
			body, err := fetchBody(ctx, hc, u, nil)
			if err != nil {
				return v.fail(ctx, s, "playlist", t0, err)
			}
			mp, err := hls.ParseMedia(body, u)
			if err != nil {
				return v.fail(ctx, s, "playlist", t0, err)
			}
			if len(mp.Segments) == 0 {
				continue
			}
			if !inits[i] && mp.Map != "" {
				t0 := time.Now()
				if err := fetchDrain(ctx, hc, mp.Map); err != nil {
					return v.fail(ctx, s, "init", t0, err)
				}
				inits[i] = true
			}
			if last[i] == 0 { // join at the live edge
				last[i] = mp.Segments[len(mp.Segments)-1].Sequence - 1
			}
			if first := mp.Segments[0].Sequence; first > last[i]+1 {
				s.skips++ // the window moved past segments this viewer never fetched
				v.skip("playlist window moved past")
			}
			for _, seg := range mp.Segments {
				if seg.Sequence <= last[i] {
					continue
				}
				t0 := time.Now()
				if err := fetchDrain(ctx, hc, seg.URI); err != nil {
					return v.fail(ctx, s, "segment", t0, err)
				}
				if !v.slow {
					v.rec.add(SoakHLS, time.Since(t0))
				}
				last[i] = seg.Sequence
				if i == 0 && ctx.Err() == nil {
					s.segments++
					sw.segment(time.Now())
					latest = seg.URI
				}
			}
		}
		if !workload.SleepUntil(ctx, time.Now().Add(reload)) {
			break
		}
	}
	sw.finish(time.Now())
	if v.vanish && latest != "" {
		vanishMidResponse(hc, v.conns, latest)
	}
	return s
}

// fail ends a session with err unless the session was over anyway (ctx ended); a
// healthy viewer's error goes into the event log with what failed and since when.
func (v *viewerEnv) fail(ctx context.Context, s session, stage string, from time.Time, err error) session {
	if ctx.Err() != nil {
		return s
	}
	s.err = err
	if v.ev != nil && !v.slow {
		v.ev.fail(v.kindName, stage, from, err)
	}
	return s
}

func (v *viewerEnv) skip(stage string) {
	if v.ev != nil && !v.slow {
		v.ev.skip(v.kindName, stage)
	}
}

// statusErr is a response that was not 200.
type statusErr struct {
	u    string
	code int
}

func (e *statusErr) Error() string {
	return fmt.Sprintf("GET %s: %d %s", e.u, e.code, http.StatusText(e.code))
}

// fetchBody GETs u and reads its body (at most 16 MiB). With midway, it hands the body
// to midway after the first byte instead and returns.
func fetchBody(ctx context.Context, hc *http.Client, u string, midway func(io.Reader)) ([]byte, error) {
	return fetch(ctx, hc, u, midway, true)
}

// fetchDrain GETs u and reads its body to the end without keeping it: thousands of
// viewers reading segments into fresh buffers kept the load generator's garbage
// collector busy enough to make its own viewers late.
func fetchDrain(ctx context.Context, hc *http.Client, u string) error {
	_, err := fetch(ctx, hc, u, nil, false)
	return err
}

func fetch(ctx context.Context, hc *http.Client, u string, midway func(io.Reader), keep bool) ([]byte, error) {
	// On a failure, say on which connection and how far the request got: an EOF on a
	// new connection whose request was written is the origin closing it unanswered.
	// The transport calls these hooks from its own goroutines (WroteRequest from
	// the connection's write loop), so they are atomics.
	var conn struct {
		got, reused, wrote atomic.Bool
	}
	trace := &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) {
			conn.reused.Store(i.Reused)
			conn.got.Store(true)
		},
		WroteRequest: func(i httptrace.WroteRequestInfo) { conn.wrote.Store(i.Err == nil) },
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		where := "no connection"
		if conn.got.Load() {
			where = map[bool]string{true: "reused connection", false: "new connection"}[conn.reused.Load()] +
				map[bool]string{true: ", request written", false: ", request not written"}[conn.wrote.Load()]
		}
		return nil, fmt.Errorf("%w (%s)", err, where)
	}
	defer resp.Body.Close()
	if midway != nil {
		var one [1]byte
		_, _ = io.ReadFull(resp.Body, one[:])
		midway(resp.Body)
		return nil, nil
	}
	var b []byte
	if keep {
		b, err = io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	} else {
		_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 16<<20)) // io.Discard's pooled buffers
	}
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &statusErr{u: u, code: resp.StatusCode}
	}
	return b, nil
}

func isHTTPS(base string) bool { return len(base) > 5 && base[:5] == "https" }
