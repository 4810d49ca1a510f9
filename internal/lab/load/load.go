// Package load is Streambed's workload generator: N concurrent lightweight clients
// of one live channel over one transport — WebSocket push (ws), HTTP/1.1 pull
// (http1) or HTTP/2 pull (http2: h2c on http URLs, h2 on https) — each measuring
// what it received, and the origin's CPU and memory from its /metrics.
//
// A client is not a player: it receives one video track and one audio track at a
// fixed rendition (push sessions ask for the fixed policy), so every transport moves
// the same bytes. Pull clients start at the newest complete segment and request each
// segment of each track the moment it is available (no manifest reloads: they read
// the timeline once, which favours pull); push clients start at the latest keyframe.
//
// Measures, per client: media bytes, wire bytes (counted on its socket) and the
// received bitrate = media bits ÷ session time. The encoded bitrate is measured once
// on the newest complete segments of the received tracks; a client keeps up when its
// received bitrate is at least 95% of it (live: a client that falls behind, or is
// skipped ahead, receives less). The inflexion point of a transport is the largest
// client count at which most clients keep up.
package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/netutil"
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/player/dash"
)

// Transports.
const (
	WS    = "ws"
	HTTP1 = "http1"
	HTTP2 = "http2"
)

// KeepUp is the share of the encoded bitrate a client must receive to count as
// keeping up (start and end effects and timer jitter cost a few percent).
const KeepUp = 0.95

// Options describe one load step.
type Options struct {
	Transport string
	Clients   int
	Duration  time.Duration // each client's session
	Ramp      time.Duration // client starts are spread over this (0: min(Duration/4, 2 s))
	Target    *Target
	Insecure  bool
	// Idle opens WebSocket sockets that never send start (memory per idle socket).
	Idle bool
	// Progress receives a line every few seconds (nil: none).
	Progress io.Writer
	// ServerPIDs, when set, are the server's processes: CPU and RSS come from /proc
	// instead of the origin's /metrics (for peers such as nginx).
	ServerPIDs []int
	// PullDelay makes pull clients ask for each segment this long after it becomes
	// available, as a player behind the live edge does (0: at once). A peer serving
	// the channel's archive (nginx) has a segment only once it is complete, which
	// can be later than its nominal availability.
	PullDelay time.Duration
}

// Result is what one step measured.
type Result struct {
	Transport   string   `json:"transport"`
	Clients     int      `json:"clients"`
	Idle        bool     `json:"idle,omitempty"`
	DurationS   float64  `json:"duration_s"`
	Tracks      []string `json:"tracks"`
	EncodedKbps float64  `json:"encoded_kbps"` // the stream's media bitrate (Target.EncodedKbps)
	// KeepingUp counts the clients whose received bitrate is at least KeepUp × the
	// encoded bitrate; Share is their share of all clients.
	KeepingUp    int       `json:"keeping_up"`
	Share        float64   `json:"share_at_encoded"`
	Failed       int       `json:"failed"` // clients that could not start or ended in an error
	Errors       []string  `json:"errors,omitempty"`
	ReceivedKbps Summary   `json:"received_kbps"`
	PerClient    []float64 `json:"received_kbps_per_client"`
	MediaBytes   int64     `json:"media_bytes"` // payload of media chunks / segments (init excluded)
	Chunks       int64     `json:"chunks"`      // media messages (push) or segment responses (pull)
	WireIn       int64     `json:"wire_bytes_in"`
	WireOut      int64     `json:"wire_bytes_out"`
	// OverheadPerChunk is (wire in + wire out − media bytes) ÷ chunks: everything but
	// the media, connection set-up, inits and start messages included.
	OverheadPerChunk float64      `json:"overhead_bytes_per_chunk"`
	Server           *ServerStats `json:"server,omitempty"`
	LoadCPUSeconds   float64      `json:"load_cpu_s"` // this process (the clients), for context
}

// Summary of a distribution.
type Summary struct {
	Min, P5, P50, Mean, Max float64
}

// Run runs one step and reports it.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Clients < 1 {
		return nil, errors.New("load: --clients must be at least 1")
	}
	switch o.Transport {
	case WS, HTTP1, HTTP2:
	default:
		return nil, fmt.Errorf("load: transport %q: want ws, http1 or http2", o.Transport)
	}
	if o.Idle && o.Transport != WS {
		return nil, errors.New("load: --idle is for --transport ws")
	}
	if o.Ramp <= 0 {
		o.Ramp = min(o.Duration/4, 2*time.Second)
	}
	t := o.Target
	res := &Result{Transport: o.Transport, Clients: o.Clients, Idle: o.Idle, DurationS: o.Duration.Seconds(), Tracks: t.TrackIDs()}
	mon := startMonitor(ctx, t.Metrics, o.ServerPIDs)
	cpu0 := selfCPU()
	clients := make([]*clientResult, o.Clients)
	var wg sync.WaitGroup
	var running, done atomic.Int64
	stopProgress := progress(o.Progress, o, &running, &done)
	begin := time.Now()
	for i := range clients {
		cr := &clientResult{}
		clients[i] = cr
		at := begin.Add(time.Duration(int64(o.Ramp) * int64(i) / int64(o.Clients)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer done.Add(1)
			if d := time.Until(at); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					cr.err = ctx.Err()
					return
				}
			}
			running.Add(1)
			defer running.Add(-1)
			cctx, cancel := context.WithTimeout(ctx, o.Duration)
			defer cancel()
			start := time.Now()
			switch {
			case o.Idle:
				idleClient(cctx, t, cr, o.Insecure)
			case o.Transport == WS:
				wsClient(cctx, t, cr, o.Insecure)
			default:
				pullClient(cctx, t, cr, o.Transport, o.Insecure, o.PullDelay)
			}
			cr.session = time.Since(start)
		}()
	}
	wg.Wait()
	stopProgress()
	res.Server = mon.stop(o.Clients)
	res.LoadCPUSeconds = selfCPU() - cpu0
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	res.EncodedKbps = t.EncodedKbps
	res.summarise(clients)
	return res, nil
}

type clientResult struct {
	mediaBytes, initBytes int64
	chunks                int64
	segments              int // complete segments of the first (video) track
	wire                  netutil.Counter
	session               time.Duration
	err                   error
}

func (r *Result) summarise(clients []*clientResult) {
	errs := map[string]int{}
	for _, c := range clients {
		r.MediaBytes += c.mediaBytes
		r.Chunks += c.chunks
		// A connection's read loop may still count its last bytes (the close).
		in, out := c.wire.Bytes()
		r.WireIn += in
		r.WireOut += out
		if c.err != nil {
			r.Failed++
			errs[short(c.err)]++
		}
	}
	for e, n := range errs {
		r.Errors = append(r.Errors, fmt.Sprintf("%d× %s", n, e))
	}
	sort.Strings(r.Errors)
	r.PerClient = make([]float64, len(clients))
	for i, c := range clients {
		kbps := 0.0
		if c.session > 0 {
			kbps = float64(c.mediaBytes*8) / c.session.Seconds() / 1000
		}
		r.PerClient[i] = round(kbps)
		if r.EncodedKbps > 0 && kbps >= KeepUp*r.EncodedKbps && c.err == nil {
			r.KeepingUp++
		}
	}
	r.Share = round(float64(r.KeepingUp) / float64(len(clients)))
	r.ReceivedKbps = summarize(r.PerClient)
	if r.Chunks > 0 {
		r.OverheadPerChunk = round(float64(r.WireIn+r.WireOut-r.MediaBytes) / float64(r.Chunks))
	}
}

func summarize(v []float64) Summary {
	if len(v) == 0 {
		return Summary{}
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	return Summary{Min: s[0], P5: s[len(s)*5/100], P50: s[len(s)/2], Mean: round(sum / float64(len(s))), Max: s[len(s)-1]}
}

func round(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }

func short(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && len(s) > 80 {
		s = s[i+2:]
	}
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

// Target is the live channel under load, read from its MPD once.
type Target struct {
	HTTPBase        string // http(s)://HOST
	Channel         string
	WSURL           string // ws(s)://HOST/ws/{channel}
	Manifest        string
	Metrics         string // HTTPBase + /metrics
	SegmentDuration time.Duration
	Reps            []*player.Representation // the tracks received: video first
	EncodedKbps     float64                  // media bitrate of Reps, measured on recent segments
}

// TrackIDs lists the received tracks.
func (t *Target) TrackIDs() []string {
	var ids []string
	for _, r := range t.Reps {
		ids = append(ids, r.ID)
	}
	return ids
}

// Resolve reads the channel's MPD. raw is ws(s)://HOST/ws/{channel} or
// http(s)://HOST/live/{channel}/manifest.mpd; tracks names the tracks to receive
// (default: the highest video rung and the first audio track).
func Resolve(ctx context.Context, raw string, tracks []string, insecure bool) (*Target, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("load: %q is not a URL", raw)
	}
	var ch string
	switch u.Scheme {
	case "ws", "wss":
		if name, live, err := layout.ParseWebSocket(u.Path); err == nil && live {
			ch = name
		}
	case "http", "https":
		if r := layout.Parse(u.Path); r.Kind == layout.KindManifest && r.Live && r.File == layout.MPD {
			ch = r.Stream
		}
	}
	if ch == "" {
		return nil, fmt.Errorf("load: %q: want ws://HOST/ws/CHANNEL or http://HOST/live/CHANNEL/manifest.mpd (live channels only)", raw)
	}
	secure := u.Scheme == "https" || u.Scheme == "wss"
	hs, ws := "http", "ws"
	if secure {
		hs, ws = "https", "wss"
	}
	t := &Target{HTTPBase: hs + "://" + u.Host, Channel: ch, WSURL: ws + "://" + u.Host + layout.WebSocket(true, ch)}
	t.Manifest = t.HTTPBase + layout.Manifest(true, ch, layout.MPD)
	t.Metrics = t.HTTPBase + "/metrics"
	hc := httpClient(HTTP1, secure, insecure, nil)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	body, err := get(ctx, hc, t.Manifest)
	if err != nil {
		return nil, err
	}
	m, err := dash.Parse(body, t.Manifest, time.Now())
	if err != nil {
		return nil, fmt.Errorf("load: %s: %w", t.Manifest, err)
	}
	if !m.Live {
		return nil, fmt.Errorf("load: %s is not live", t.Manifest)
	}
	if len(tracks) == 0 {
		if v := m.Set(media.Video); v != nil {
			t.Reps = append(t.Reps, v.Representations[len(v.Representations)-1])
		}
		if a := m.Set(media.Audio); a != nil {
			t.Reps = append(t.Reps, a.Representations[0])
		}
	}
	for _, id := range tracks {
		_, r := m.Representation(id)
		if r == nil {
			return nil, fmt.Errorf("load: %s has no track %q", t.Manifest, id)
		}
		t.Reps = append(t.Reps, r)
	}
	if len(t.Reps) == 0 {
		return nil, fmt.Errorf("load: %s has no tracks", t.Manifest)
	}
	t.SegmentDuration = t.Reps[0].Index.NominalDuration()
	if t.SegmentDuration <= 0 {
		return nil, fmt.Errorf("load: %s: no segment duration", t.Manifest)
	}
	if err := t.measureEncoded(ctx, hc); err != nil {
		return nil, err
	}
	return t, nil
}

// measureEncoded reads the newest complete segments (up to 4 per track) and sets
// EncodedKbps, the stream's actual media bitrate for the received tracks.
func (t *Target) measureEncoded(ctx context.Context, hc *http.Client) error {
	now := time.Now()
	last, ok := t.Reps[0].Index.Last(now)
	if !ok {
		return fmt.Errorf("load: %s has no complete segment yet", t.Manifest)
	}
	var bits, secs float64
	for k := 0; k < 4 && last.Start-time.Duration(k)*t.SegmentDuration >= 0; k++ {
		pos := last.Start - time.Duration(k)*t.SegmentDuration
		for _, r := range t.Reps {
			s, ok := r.Index.Next(pos)
			if !ok {
				continue
			}
			b, err := get(ctx, hc, s.URL)
			if err != nil {
				return fmt.Errorf("load: measuring the encoded bitrate: %w", err)
			}
			bits += float64(len(b) * 8)
		}
		secs += t.SegmentDuration.Seconds()
	}
	if secs == 0 {
		return fmt.Errorf("load: %s: no segment to measure", t.Manifest)
	}
	t.EncodedKbps = round(bits / secs / 1000)
	return nil
}

func get(ctx context.Context, hc *http.Client, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return b, nil
}

// countingDialer dials TCP and counts every connection's bytes into wire.
func countingDialer(wire *netutil.Counter) netutil.DialFunc {
	return netutil.CountingDialer((&net.Dialer{Timeout: 10 * time.Second}).DialContext, wire)
}

func progress(w io.Writer, o Options, running, done *atomic.Int64) func() {
	if w == nil {
		return func() {}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		begin := time.Now()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				fmt.Fprintf(w, "  %s ×%d: %4.0fs  running %d  done %d\n", o.Transport, o.Clients, time.Since(begin).Seconds(), running.Load(), done.Load())
			}
		}
	}()
	return func() { close(stop); wg.Wait() }
}
