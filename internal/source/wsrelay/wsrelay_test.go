package wsrelay

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/source/looplive"
	"github.com/streambed/streambed/internal/testmedia"
	"github.com/streambed/streambed/internal/transport/wspush"
)

// tier is one Streambed (origin or edge) serving WebSocket push over httptest.
type tier struct {
	hub     *hub.Hub
	channel *hub.Channel
	handler *wspush.Handler
	srv     *httptest.Server
}

func (tr *tier) wsURL() string { return "ws" + strings.TrimPrefix(tr.srv.URL, "http") + "/ws/live" }

func serve(t testing.TB, ctx context.Context, h *hub.Hub, c *hub.Channel) *tier {
	t.Helper()
	wh, err := wspush.NewHandler(ctx, h, wspush.Options{Policy: "fixed"})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /ws/{channel}", wh)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return &tier{hub: h, channel: c, handler: wh, srv: srv}
}

// newOrigin loops the test asset (2 s segments, 40 ms chunks) as channel "live".
func newOrigin(t testing.TB, ctx context.Context) *tier {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "test")
	if err := os.Symlink(testmedia.Asset(t), dir); err != nil {
		t.Fatal(err)
	}
	a, err := hub.OpenAsset(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New()
	t.Cleanup(h.Close)
	h.AddAsset(a)
	c, err := looplive.AddChannel(ctx, h, a, looplive.ChannelOptions{Name: "live", ChunkDuration: 40 * time.Millisecond, DVRWindow: 20 * time.Second, AvailabilityStart: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, ctx, h, c)
}

// conns records the upstream connections a relay dials, so a test can cut them.
type conns struct {
	mu    sync.Mutex
	cs    []net.Conn
	until time.Time // dials fail before this: the origin is unreachable
}

func (cc *conns) client() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		cc.mu.Lock()
		down := time.Now().Before(cc.until)
		cc.mu.Unlock()
		if down {
			return nil, errors.New("test: the origin is unreachable")
		}
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			cc.mu.Lock()
			cc.cs = append(cc.cs, c)
			cc.mu.Unlock()
		}
		return c, err
	}
	return &http.Client{Transport: tr}
}

// cut closes the upstream connections and refuses new ones for d.
func (cc *conns) cut(d time.Duration) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.until = time.Now().Add(d)
	for _, c := range cc.cs {
		c.Close()
	}
	cc.cs = nil
}

type edge struct {
	*tier
	src      *Source
	mu       sync.Mutex
	sessions []Stats
	upstream conns
}

func (e *edge) ended() []Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Stats(nil), e.sessions...)
}

// newEdge relays the origin's channel "live" into a channel of its own.
func newEdge(t testing.TB, ctx context.Context, upstream string) *edge {
	t.Helper()
	c, err := hub.NewChannel(hub.ChannelConfig{
		Info:     &media.Stream{Name: "live", SegmentDuration: 2 * time.Second},
		Timeline: media.Timeline{SegmentDuration: 2 * time.Second, TimeShiftBufferDepth: 20 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New()
	t.Cleanup(h.Close)
	e := &edge{}
	e.src = &Source{URL: upstream, HTTPClient: e.upstream.client(), Retry: 20 * time.Millisecond, Log: slog.New(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelDebug})), OnSession: func(s Stats) {
		e.mu.Lock()
		e.sessions = append(e.sessions, s)
		e.mu.Unlock()
	}}
	if err := h.AddChannel(ctx, c, e.src); err != nil {
		t.Fatal(err)
	}
	e.tier = serve(t, ctx, h, c)
	return e
}

type tlog struct{ t testing.TB }

func (l tlog) Write(b []byte) (int, error) { l.t.Log(strings.TrimSpace(string(b))); return len(b), nil }

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// viewer reads a push session and keeps the segments it completes per track.
type viewer struct {
	c    *wspush.Client
	asm  *wspush.Assembler
	mu   sync.Mutex
	segs map[string][]*wspush.Segment
	msgs []string // text message types
	err  error
	done chan struct{}
}

func watch(t *testing.T, ctx context.Context, url string, start wspush.Start) *viewer {
	t.Helper()
	c, err := wspush.Dial(ctx, url, wspush.DialOptions{Start: start})
	if err != nil {
		t.Fatal(err)
	}
	v := &viewer{c: c, asm: wspush.NewAssembler(&c.Ready), segs: map[string][]*wspush.Segment{}, done: make(chan struct{})}
	go func() {
		defer close(v.done)
		for {
			m, err := c.Next(ctx)
			if err != nil {
				v.mu.Lock()
				v.err = err
				v.mu.Unlock()
				return
			}
			v.mu.Lock()
			if m.Frame != nil {
				done, err := v.asm.AddAll(m.Frame, m.At)
				if err != nil {
					v.err = err
				}
				for _, s := range done {
					if s.Chunks > 0 {
						v.segs[s.Track.ID] = append(v.segs[s.Track.ID], s)
					}
				}
			} else {
				v.msgs = append(v.msgs, m.Type)
				if m.Type == "skip" {
					t.Logf("skip at the viewer: %s", m.Text)
				}
			}
			v.mu.Unlock()
		}
	}()
	t.Cleanup(func() { c.CloseNow(); <-v.done })
	return v
}

func (v *viewer) segments(track string) []*wspush.Segment {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]*wspush.Segment(nil), v.segs[track]...)
}

// checkSegments says whether the viewer's segments of a track are consecutive and
// byte for byte the origin's.
func checkSegments(t *testing.T, origin *hub.Channel, v *viewer, track string) {
	t.Helper()
	segs := v.segments(track)
	for i, s := range segs {
		if i > 0 && s.Number != segs[i-1].Number+1 {
			t.Errorf("track %s: segment %d follows %d: a gap at the viewer", track, s.Number, segs[i-1].Number)
		}
		want, err := origin.Segment(track, s.Number, origin.Now())
		if err != nil {
			t.Fatalf("origin segment %s/%d: %v", track, s.Number, err)
		}
		var b bytes.Buffer
		for _, ch := range want.Chunks {
			b.Write(ch.Data)
		}
		if !bytes.Equal(b.Bytes(), s.Data) {
			t.Errorf("track %s segment %d: %d bytes at the edge's viewer, the origin has %d (or other bytes)", track, s.Number, len(s.Data), b.Len())
		}
	}
}

func TestRelayOneUpstreamForManyViewers(t *testing.T) {
	if testing.Short() {
		t.Skip("plays live for several seconds")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := newOrigin(t, ctx)
	e := newEdge(t, ctx, o.wsURL())
	waitFor(t, 10*time.Second, "the edge's first tracks", func() bool { return len(e.channel.Info().Tracks) == len(o.channel.Info().Tracks) })

	var vs []*viewer
	for i := range 20 {
		st := wspush.Start{Policy: "fixed"}
		if i%2 == 1 { // half on another rung: each viewer's own rendition, chosen at the edge
			st.Tracks = []string{o.channel.Info().Tracks[0].ID}
		}
		vs = append(vs, watch(t, ctx, e.wsURL(), st))
	}
	if n := o.handler.Active(); n != 1 {
		t.Fatalf("the origin has %d push sessions with 20 viewers at the edge, want 1 (the relay's)", n)
	}
	video := func(v *viewer) string { return v.c.Ready.Video }
	waitFor(t, 15*time.Second, "two complete segments at every viewer", func() bool {
		for _, v := range vs {
			if len(v.segments(video(v))) < 2 {
				return false
			}
		}
		return true
	})
	if n := o.handler.Active(); n != 1 {
		t.Errorf("the origin has %d push sessions, want 1", n)
	}
	rungs := map[string]bool{}
	for _, v := range vs {
		rungs[video(v)] = true
		checkSegments(t, o.channel, v, video(v))
		checkSegments(t, o.channel, v, v.c.Ready.Audio)
	}
	if len(rungs) < 2 {
		t.Errorf("every viewer got rung %v: the edge did not serve each its own", rungs)
	}
	// The edge's own tracks are the origin's, init for init.
	for _, tr := range o.channel.Info().Tracks {
		a, _ := o.channel.Init(tr.ID)
		b, err := e.channel.Init(tr.ID)
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("track %s: the edge's init differs from the origin's (%v)", tr.ID, err)
		}
	}
}

func TestRelayResumesAfterLosingUpstream(t *testing.T) {
	if testing.Short() {
		t.Skip("plays live for several seconds")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := newOrigin(t, ctx)
	e := newEdge(t, ctx, o.wsURL())
	waitFor(t, 10*time.Second, "the edge's tracks", func() bool { return len(e.channel.Info().Tracks) > 0 })
	v := watch(t, ctx, e.wsURL(), wspush.Start{Policy: "fixed"})
	track := v.c.Ready.Video
	waitFor(t, 10*time.Second, "a first segment", func() bool { return len(v.segments(track)) >= 1 })

	// Cut the upstream twice, once for longer than a segment (the origin is
	// unreachable meanwhile: the relay's dials fail until it is back).
	e.upstream.cut(0)
	waitFor(t, 5*time.Second, "the relay to notice", func() bool { return len(e.ended()) >= 1 })
	waitFor(t, 5*time.Second, "the relay back", func() bool { return o.handler.Active() == 1 })
	first := len(v.segments(track))
	waitFor(t, 10*time.Second, "a segment after the cut", func() bool { return len(v.segments(track)) > first })
	e.upstream.cut(2500 * time.Millisecond)
	waitFor(t, 15*time.Second, "two more segments after the second cut", func() bool { return len(v.segments(track)) > first+2 })

	v.mu.Lock()
	err, msgs := v.err, append([]string(nil), v.msgs...)
	v.mu.Unlock()
	if err != nil {
		t.Fatalf("the edge's viewer lost its session: %v", err)
	}
	for _, m := range msgs {
		if m == "skip" {
			t.Errorf("the edge's viewer was told of a skip: the relay lost media while reconnecting")
		}
	}
	checkSegments(t, o.channel, v, track)
	checkSegments(t, o.channel, v, v.c.Ready.Audio)
	if n := len(e.ended()); n < 2 {
		t.Errorf("%d upstream sessions ended, want the two cut", n)
	}
	for _, s := range e.ended() {
		if errors.Is(s.Err, ErrUpstream) {
			t.Errorf("an upstream session ended as misconfigured: %v", s.Err)
		}
	}
}

// A viewer that never reads and one that vanishes do not slow the relay or the
// other viewers.
func TestRelaySlowAndVanishingViewers(t *testing.T) {
	if testing.Short() {
		t.Skip("plays live for several seconds")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := newOrigin(t, ctx)
	e := newEdge(t, ctx, o.wsURL())
	waitFor(t, 10*time.Second, "the edge's tracks", func() bool { return len(e.channel.Info().Tracks) > 0 })

	// The slow one: starts, then never reads (its socket buffers fill).
	slow, _, err := websocket.Dial(ctx, e.wsURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.CloseNow()
	if err := slow.Write(ctx, websocket.MessageText, []byte(`{"type":"start","policy":"fixed","at":-10}`)); err != nil {
		t.Fatal(err)
	}
	// The vanishing ones: start and drop the connection.
	for range 5 {
		c, _, err := websocket.Dial(ctx, e.wsURL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"type":"start"}`))
		c.CloseNow()
	}
	v := watch(t, ctx, e.wsURL(), wspush.Start{Policy: "fixed"})
	track := v.c.Ready.Video
	waitFor(t, 15*time.Second, "three segments at the healthy viewer", func() bool { return len(v.segments(track)) >= 3 })
	checkSegments(t, o.channel, v, track)
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.err != nil {
		t.Errorf("the healthy viewer's session failed: %v", v.err)
	}
	for _, m := range v.msgs {
		if m == "skip" {
			t.Errorf("the healthy viewer was told of a skip")
		}
	}
	if n := o.handler.Active(); n != 1 {
		t.Errorf("the origin has %d push sessions, want 1", n)
	}
	if s := e.ended(); len(s) > 0 {
		t.Errorf("the relay's upstream session ended (%v) while viewers misbehaved at the edge", s[0].Err)
	}
}
