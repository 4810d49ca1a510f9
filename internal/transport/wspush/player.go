package wspush

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/netutil"
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/player/dash"
	"github.com/streambed/streambed/internal/player/qoe"
	"github.com/streambed/streambed/internal/transport/httppull"
)

// DefaultPushWait is the player's Config.PushWait for this transport: the server
// pushes every segment in the rendition it chose, so a request sent before the push
// arrives names the player's own choice and is refused as switched. A few seconds
// lets the pushed segment arrive first; what never comes is then requested (pull).
const DefaultPushWait = 4 * time.Second

// PlayerOptions configure a PlayerTransport.
type PlayerOptions struct {
	Insecure   bool     // accept any TLS certificate (wss:// to a self-signed origin)
	Policy     string   // the adaptation policy to ask for ("": the channel's)
	MaxBitrate int64    // start message maxBitrate
	Codecs     []string // start message codecs
	// DialContext dials TCP for the socket and the HTTP requests (nil: net.Dialer).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// PlayerTransport plays ws://HOST/ws/{channel} (or /ws/vod/{asset}) in the headless
// player: a player.Fetcher, Receiver, WireCounter and Protocoler.
//
// The manifest, the clock and anything the push session did not bring come by HTTP
// pull from the same origin (the DASH MPD of the channel or asset). The push session
// opens at the player's first media request, at that segment's position and
// rendition; from then on the server sends every segment and chooses the rendition
// (server-side adaptation). Segments arrive as deliveries; a request for a segment not
// here yet waits for it (and the segment then goes to the request, not to the
// deliveries: the player fetches audio and video concurrently). A request for a
// segment the session went past (a skip, or a player that stalled behind the
// session) falls back to pull.
type PlayerTransport struct {
	opts     PlayerOptions
	wsURL    *url.URL
	wsDir    string // "/ws/" or "/ws/vod/": what relative URLs resolve under
	httpDir  string // "/live/{channel}/" or "/vod/{asset}/"
	manifest string // the http(s) URL of the MPD
	pull     *httppull.Client
	hc       *http.Client    // the WebSocket handshake
	wire     netutil.Counter // socket bytes of push sessions
	pushed   atomic.Int64    // payload bytes that arrived by push
	consumed atomic.Int64    // of which the player took

	mu       sync.Mutex
	reps     map[string]repInfo    // from the MPD: kind and timescale by representation ID
	firstOf  map[media.Kind]string // from the MPD: the lowest rendition of each kind
	client   *Client               // the push session; nil before the first media request
	ended    error                 // why the session ended (nil while it runs)
	normal   bool                  // it ended with 1000 (VOD end)
	lastDial time.Time
	list     []delivery        // arrived, not yet taken by the player
	passed   map[string]uint64 // per kind: the newest segment number that arrived
	inits    map[string][]byte // pushed init segments by track ID
	wanted   map[wantKey]int   // segments a Fetch waits for: not forwarded as deliveries
	opening  bool              // a Fetch is opening the session
	changed  chan struct{}     // closed (and replaced) whenever the state above changes
	nextID   uint64
	out      chan player.Delivery // unbuffered: the list is the buffer, so Fetch can claim from it
	quit     chan struct{}
	done     sync.WaitGroup
	closed   bool
	events   []Message // switch, skip and adapt messages
	// chunkSink receives a report per pushed chunk (chunks.go); nil: none.
	chunkSink func(player.Chunk)
}

type repInfo struct {
	kind      media.Kind
	timescale uint64
}

type wantKey struct {
	kind   media.Kind
	number uint64
}

type delivery struct {
	id   uint64
	kind media.Kind
	d    player.Delivery
}

// maxPending bounds what waits for the player; the oldest media goes first.
const maxPending = 64

// NewPlayerTransport returns a transport for the push URL u: ws(s)://HOST/ws/CHANNEL
// or ws(s)://HOST/ws/vod/ASSET, or the pull URL of the same stream's MPD
// (http(s)://HOST/live/CHANNEL/manifest.mpd, .../vod/ASSET/manifest.mpd), as the lab
// runner passes. A push URL's query may ask for a policy and a bitrate cap
// (?policy=buffer&maxBitrate=800000); options set in o win.
func NewPlayerTransport(u *url.URL, o PlayerOptions) (*PlayerTransport, error) {
	if u.Scheme == "http" || u.Scheme == "https" {
		pu, err := pushURLOf(u)
		if err != nil {
			return nil, err
		}
		u = pu
	}
	if u.Scheme != "ws" && u.Scheme != "wss" {
		return nil, fmt.Errorf("transport ws needs a ws:// or wss:// URL, not %q", u.String())
	}
	q := u.Query()
	if o.Policy == "" {
		o.Policy = q.Get("policy")
	}
	if v := q.Get("maxBitrate"); v != "" && o.MaxBitrate == 0 {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: maxBitrate=%q is not bit/s", u.String(), v)
		}
		o.MaxBitrate = n
	}
	stream, live, err := layout.ParseWebSocket(u.Path)
	if err != nil {
		return nil, fmt.Errorf("%q is not a push URL: want ws://HOST/ws/CHANNEL or ws://HOST/ws/vod/ASSET", u.String())
	}
	t := &PlayerTransport{opts: o, wsURL: u, changed: make(chan struct{}), out: make(chan player.Delivery),
		quit: make(chan struct{}), passed: map[string]uint64{}, inits: map[string][]byte{}, reps: map[string]repInfo{}, firstOf: map[media.Kind]string{},
		wanted: map[wantKey]int{}}
	t.wsDir = strings.TrimSuffix(layout.WebSocket(live, stream), stream) // "/ws/" or "/ws/vod/"
	t.httpDir = layout.Base(live, stream)
	hu := *u
	hu.Scheme = strings.Replace(u.Scheme, "ws", "http", 1)
	hu.Path, hu.RawPath, hu.RawQuery = layout.Manifest(live, stream, layout.MPD), "", ""
	t.manifest = hu.String()
	t.pull, err = httppull.NewClient(httppull.ClientOptions{Protocol: httppull.HTTP1, Insecure: o.Insecure, DialContext: o.DialContext})
	if err != nil {
		return nil, err
	}
	dial := o.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	tr := &http.Transport{
		DialContext:       netutil.CountingDialer(dial, &t.wire),
		ForceAttemptHTTP2: false,
	}
	if o.Insecure {
		tr.TLSClientConfig = insecureTLS()
	}
	t.hc = &http.Client{Transport: tr}
	t.done.Add(1)
	go t.forward()
	return t, nil
}

// Messages returns the text messages of the push sessions so far (switch, skip,
// adapt): which rendition the server chose, when, and why.
func (t *PlayerTransport) Messages() []Message {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Message(nil), t.events...)
}

// Deliveries implements player.Receiver.
func (t *PlayerTransport) Deliveries() <-chan player.Delivery { return t.out }

// Protocol implements player.Protocoler.
func (t *PlayerTransport) Protocol() string { return "WebSocket" }

// WireBytes implements player.WireCounter: the push sockets and the pull connections.
func (t *PlayerTransport) WireBytes() (read, written int64) {
	r, w := t.pull.WireBytes()
	pr, pw := t.wire.Bytes()
	return r + pr, w + pw
}

// AddToReport corrects the QoE report's overhead: media that arrived by push after
// the player's last segment (the segment in progress when the session ended, and what
// waited in the list) crossed the socket but is not overhead.
func (t *PlayerTransport) AddToReport(rep *qoe.Report) {
	rep.Protocol = "WebSocket" // media; the manifest and clock came over HTTP/1.1
	unplayed := t.pushed.Load() - t.consumed.Load()
	if unplayed <= 0 || rep.WireBytes == 0 {
		return
	}
	rep.OverheadBytes = max(rep.WireBytes-rep.PayloadBytes-unplayed, 0)
	rep.OverheadSource = fmt.Sprintf("socket, less %d B of media pushed but not played", unplayed)
}

// Close ends the session and releases the connections.
func (t *PlayerTransport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	c := t.client
	close(t.quit)
	t.mu.Unlock()
	if c != nil {
		_ = c.CloseNow()
	}
	t.done.Wait()
	return t.pull.Close()
}

// pushURLOf maps a stream's MPD URL to its push URL.
func pushURLOf(u *url.URL) (*url.URL, error) {
	r := layout.Parse(u.Path)
	if r.Kind != layout.KindManifest || r.File != layout.MPD {
		return nil, fmt.Errorf("transport ws: %q is not a stream's MPD (/live/CHANNEL/manifest.mpd, /vod/ASSET/manifest.mpd); give ws://HOST/ws/CHANNEL", u.String())
	}
	pu := *u
	pu.Scheme = strings.Replace(u.Scheme, "http", "ws", 1)
	pu.Path, pu.RawPath = layout.WebSocket(r.Live, r.Stream), ""
	return &pu, nil
}

// httpURL maps a URL resolved against the push URL to the origin's pull URL.
func (t *PlayerTransport) httpURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") {
		return raw
	}
	u.Scheme = strings.Replace(u.Scheme, "ws", "http", 1)
	switch {
	case u.Path == t.wsURL.Path:
		return t.manifest
	case strings.HasPrefix(u.Path, t.wsDir):
		u.Path = t.httpDir + strings.TrimPrefix(u.Path, t.wsDir)
		u.RawPath = ""
	}
	return u.String()
}

// Fetch implements player.Fetcher.
func (t *PlayerTransport) Fetch(ctx context.Context, req player.SegmentRequest) (*player.Response, error) {
	switch req.Kind {
	case player.RequestManifest:
		pr := req
		pr.URL, pr.KeepBody = t.httpURL(req.URL), true
		resp, err := t.pull.Fetch(ctx, pr)
		if err != nil {
			return nil, err
		}
		t.learn(resp.Body, req.URL)
		return resp, nil
	case player.RequestInit:
		t.mu.Lock()
		b, ok := t.inits[req.TrackID]
		t.mu.Unlock()
		if ok {
			t.consumed.Add(int64(len(b)))
			now := time.Now()
			return &player.Response{PayloadBytes: int64(len(b)), OverheadExact: true, Start: now, FirstByte: now, End: now, Protocol: "WebSocket", Pushed: true}, nil
		}
	case player.RequestMedia:
		return t.fetchMedia(ctx, req)
	}
	pr := req
	pr.URL = t.httpURL(req.URL)
	return t.pull.Fetch(ctx, pr)
}

// learn notes each representation's kind and timescale from the MPD.
func (t *PlayerTransport) learn(mpd []byte, base string) {
	m, err := dash.Parse(mpd, base, time.Now())
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, set := range m.Sets {
		for i, r := range set.Representations {
			t.reps[r.ID] = repInfo{kind: set.Kind, timescale: r.Index.Timescale}
			if _, ok := t.firstOf[set.Kind]; !ok || i == 0 {
				t.firstOf[set.Kind] = r.ID
			}
		}
	}
}

// errSwitched: the server sent another rendition than the one requested.
var errSwitched = errors.New("the server chose another rendition (server-side adaptation)")

func (t *PlayerTransport) fetchMedia(ctx context.Context, req player.SegmentRequest) (*player.Response, error) {
	t.mu.Lock()
	rep, known := t.reps[req.TrackID]
	t.mu.Unlock()
	if !known {
		return t.pullMedia(ctx, req)
	}
	// The player fetches audio and video concurrently and reads deliveries meanwhile:
	// a segment this request waits for is held back from the deliveries (wanted), so
	// it comes here and not to a player that already asked for it.
	key := wantKey{rep.kind, req.Number}
	wanting := false
	defer func() {
		if wanting {
			t.mu.Lock()
			if t.wanted[key]--; t.wanted[key] <= 0 {
				delete(t.wanted, key)
			}
			t.mu.Unlock()
		}
	}()
	for {
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return nil, net.ErrClosed
		}
		for i, d := range t.list {
			if d.kind != rep.kind || d.d.Request.Kind != player.RequestMedia || d.d.Request.Number != req.Number {
				continue
			}
			if d.d.Request.TrackID != req.TrackID {
				// Leave it for the player to take as a delivery, where another
				// rendition of the same segment is accepted as such.
				t.list = append([]delivery{d}, append(t.list[:i:i], t.list[i+1:]...)...)
				if wanting {
					wanting = false
					if t.wanted[key]--; t.wanted[key] <= 0 {
						delete(t.wanted, key)
					}
				}
				t.broadcast()
				t.mu.Unlock()
				return nil, fmt.Errorf("segment %d: %w, %s; it arrives as a delivery: %w", req.Number, errSwitched, d.d.Request.TrackID, media.ErrNotYet)
			}
			t.list = append(t.list[:i], t.list[i+1:]...)
			t.broadcast()
			t.mu.Unlock()
			t.consumed.Add(d.d.Response.PayloadBytes)
			return d.d.Response, nil
		}
		if t.opening {
			ch := t.changed
			t.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		behind := t.client != nil && t.ended == nil &&
			(req.Number < t.client.Ready.Base || t.hasPassed(rep.kind) && t.passed[string(rep.kind)] >= req.Number)
		switch {
		case t.client == nil, t.ended != nil && !t.normal && time.Since(t.lastDial) > 2*time.Second:
			// No session yet, or one that failed: push from where the player is.
			t.opening = true
			t.mu.Unlock()
			err := t.open(ctx, req, rep)
			t.mu.Lock()
			t.opening = false
			t.broadcast()
			t.mu.Unlock()
			if err != nil {
				return nil, err
			}
			continue
		case t.ended != nil, behind:
			// The session went past this segment (a skip, a stall of the player):
			// pull it. Re-opening the session behind the live edge was tried: in the
			// lab under a bandwidth step it pushed more the player never played.
			t.mu.Unlock()
			return t.pullMedia(ctx, req)
		}
		if !wanting {
			wanting = true
			t.wanted[key]++
		}
		ch := t.changed
		t.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (t *PlayerTransport) hasPassed(k media.Kind) bool {
	_, ok := t.passed[string(k)]
	return ok
}

func (t *PlayerTransport) pullMedia(ctx context.Context, req player.SegmentRequest) (*player.Response, error) {
	pr := req
	pr.URL = t.httpURL(req.URL)
	return t.pull.Fetch(ctx, pr)
}

// broadcast wakes whoever waits on the state. Callers hold t.mu.
func (t *PlayerTransport) broadcast() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// open starts a push session at the position and rendition of req.
func (t *PlayerTransport) open(ctx context.Context, req player.SegmentRequest, rep repInfo) error {
	// The requested rendition, and the first of the other kind (the player's first
	// choice there too: its sets are sorted by bandwidth and it starts low).
	tracks := []string{req.TrackID}
	t.mu.Lock()
	if id, ok := t.firstOf[otherKind(rep.kind)]; ok {
		tracks = append(tracks, id)
	}
	t.mu.Unlock()
	st := Start{Policy: t.opts.Policy, MaxBitrate: t.opts.MaxBitrate, Codecs: t.opts.Codecs, Tracks: tracks}
	if rep.timescale > 0 {
		st.At = AtSeconds(float64(req.Time) / float64(rep.timescale))
	}
	t.mu.Lock()
	t.lastDial = time.Now()
	old := t.client
	t.mu.Unlock()
	if old != nil {
		_ = old.CloseNow()
	}
	c, err := Dial(ctx, t.wsURL.String(), DialOptions{Start: st, HTTPClient: t.hc})
	if err != nil {
		return err
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		_ = c.CloseNow()
		return net.ErrClosed
	}
	t.client, t.ended, t.normal = c, nil, false
	clear(t.passed)
	// What the old session pushed ahead is pushed again by the new one.
	kept := t.list[:0]
	for _, d := range t.list {
		if d.d.Request.Kind != player.RequestMedia {
			kept = append(kept, d)
		}
	}
	clear(t.list[len(kept):])
	t.list = kept
	t.broadcast()
	t.mu.Unlock()
	t.done.Add(1)
	go t.receive(c)
	return nil
}

// receive reads one session until it ends.
func (t *PlayerTransport) receive(c *Client) {
	defer t.done.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-t.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	asm := NewAssembler(&c.Ready)
	meter := newChunkMeter(&c.Ready)
	for {
		m, err := c.Next(ctx)
		if err != nil {
			var ce *CloseError
			t.mu.Lock()
			if t.client == c {
				t.ended = err
				t.normal = errors.As(err, &ce) && ce.Code == CloseNormal
				t.broadcast()
			}
			t.mu.Unlock()
			return
		}
		if m.Frame == nil {
			t.mu.Lock()
			if len(t.events) < 10_000 {
				t.events = append(t.events, m)
			}
			t.mu.Unlock()
			continue
		}
		t.pushed.Add(int64(len(m.Frame.Payload)))
		if ch, ok := meter.add(m.Frame); ok {
			t.reportChunk(c, ch, m.At)
		}
		segs, err := asm.AddAll(m.Frame, m.At)
		if err != nil {
			continue
		}
		for _, seg := range segs {
			t.arrived(c, seg, m.Frame.Kind == KindInit)
		}
	}
}

// arrived queues a complete segment (or an init) for the player.
func (t *PlayerTransport) arrived(c *Client, seg *Segment, init bool) {
	kind := media.Kind(seg.Track.Kind)
	req := player.SegmentRequest{Kind: player.RequestMedia, TrackID: seg.Track.ID, Number: seg.Number}
	if init {
		req = player.SegmentRequest{Kind: player.RequestInit, TrackID: seg.Track.ID}
	}
	resp := &player.Response{
		PayloadBytes: int64(len(seg.Data)), OverheadBytes: seg.Overhead, OverheadExact: true,
		Start: seg.First, FirstByte: seg.First, End: seg.Last, Protocol: "WebSocket", Pushed: true,
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c != t.client {
		return // a session replaced by a newer one
	}
	if init {
		t.inits[seg.Track.ID] = seg.Data
	} else if n, ok := t.passed[string(kind)]; !ok || seg.Number > n {
		t.passed[string(kind)] = seg.Number
	}
	t.nextID++
	t.list = append(t.list, delivery{id: t.nextID, kind: kind, d: player.Delivery{Request: req, Response: resp}})
	if len(t.list) > maxPending {
		t.list = t.list[1:] // the player is far behind; it can still pull what it missed
	}
	t.broadcast()
}

// forward hands the list to the player one delivery at a time, leaving out what a
// Fetch waits for. The channel is unbuffered, so what the player has not received
// stays in the list where a Fetch can claim it.
func (t *PlayerTransport) forward() {
	defer t.done.Done()
	for {
		t.mu.Lock()
		ch := t.changed
		next := -1
		for i, d := range t.list {
			if d.d.Request.Kind != player.RequestMedia || t.wanted[wantKey{d.kind, d.d.Request.Number}] == 0 {
				next = i
				break
			}
		}
		if next < 0 {
			t.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-t.quit:
				return
			}
		}
		d := t.list[next]
		t.mu.Unlock()
		select {
		case t.out <- d.d:
			t.consumed.Add(d.d.Response.PayloadBytes)
			t.mu.Lock()
			for i := range t.list {
				if t.list[i].id == d.id {
					t.list = append(t.list[:i], t.list[i+1:]...)
					break
				}
			}
			t.mu.Unlock()
		case <-ch:
		case <-t.quit:
			return
		}
	}
}

// insecureTLS accepts any certificate: lab origins are self-signed (--insecure).
func insecureTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true} //nolint:gosec // asked for by --insecure
}

func otherKind(k media.Kind) media.Kind {
	if k == media.Video {
		return media.Audio
	}
	return media.Video
}
