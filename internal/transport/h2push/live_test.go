package h2push_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/player/abr"
	"github.com/streambed/streambed/internal/player/dash"
	"github.com/streambed/streambed/internal/transport/h2push"
	"github.com/streambed/streambed/internal/transport/h2push/pushclient"
)

// fedChannel adds to the origin a live channel "fed" that the test feeds by hand: one
// video track "v", 1 s segments of four chunks, so a test decides when a segment
// completes and the order of events is the test's, not the clock's.
func fedChannel(t *testing.T, o *origin) *hub.Channel {
	t.Helper()
	c, err := hub.NewChannel(hub.ChannelConfig{
		Info: &media.Stream{Name: "fed", SegmentDuration: time.Second, Tracks: []*media.Track{
			{ID: "v", Kind: media.Video, Codec: "avc1.64001f", Bandwidth: 100000, Width: 320, Height: 180, FrameRate: "25", Timescale: 1000}}},
		Inits:    map[string][]byte{"v": []byte("vinit")},
		Timeline: media.Timeline{AvailabilityStart: time.Now().Add(-time.Minute), SegmentDuration: time.Second, TimeShiftBufferDepth: 10 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.hub.AddChannel(context.Background(), c, nil); err != nil {
		t.Fatal(err)
	}
	return c
}

// feed appends chunk i of segment n (the fourth ends it) and returns its bytes.
func feed(t *testing.T, c *hub.Channel, n, i uint64) []byte {
	t.Helper()
	ch := &media.Chunk{Data: bytes.Repeat([]byte(fmt.Sprintf("s%d-c%d;", n, i)), 50), Start: n*1000 + i*250, Duration: 250, Keyframe: i == 0}
	if err := c.AppendChunk("v", n, ch, i == 3); err != nil {
		t.Fatal(err)
	}
	return ch.Data
}

// pushData is a client's OnData hook that notes the bytes of pushed streams.
type pushData struct {
	mu    sync.Mutex
	got   map[string][]byte
	first chan string // URL of every pushed stream's first DATA
}

func newPushData() *pushData {
	return &pushData{got: map[string][]byte{}, first: make(chan string, 8)}
}

func (d *pushData) onData(s *pushclient.Stream, data []byte, end bool) {
	if !s.Pushed || len(data) == 0 {
		return
	}
	d.mu.Lock()
	_, seen := d.got[s.URL]
	d.got[s.URL] = append(d.got[s.URL], data...)
	d.mu.Unlock()
	if !seen {
		d.first <- s.URL
	}
}

func (d *pushData) bytes(u string) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.got[u]
}

// await returns the next pushed stream's URL, failing after a bound on waiting.
func (d *pushData) await(t *testing.T, ctx context.Context) string {
	t.Helper()
	select {
	case u := <-d.first:
		return u
	case <-ctx.Done():
		t.Fatal("no pushed DATA")
		return ""
	}
}

// TestLivePushStreamsTheSegmentInProgress: K-push promises segment 1 while it is being
// made (two of its four chunks stored); the pushed response carries those at once and
// then each chunk when it is appended, before the segment completes; the bytes pushed
// are the segment's; the push, never claimed by a request, is counted completed on
// both ends.
func TestLivePushStreamsTheSegmentInProgress(t *testing.T) {
	o := startOrigin(t, h2push.Config{}, "")
	ch := fedChannel(t, o)
	for i := uint64(0); i < 4; i++ {
		feed(t, ch, 0, i)
	}
	want := append(feed(t, ch, 1, 0), feed(t, ch, 1, 1)...)
	d := newPushData()
	c := pushclient.New(pushclient.Options{OnData: d.onData})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a bound on waiting, not a speed check
	defer cancel()
	before := o.pusher.Stats()
	if s, err := c.Get(ctx, o.h2c+"/live/fed/v/0.m4s?push=k2"); err != nil || s.Status != 200 {
		t.Fatalf("GET segment 0: %v", err)
	}
	p := c.Pending()
	if len(p) != 1 || pathOf(p[0].URL) != "/live/fed/v/1.m4s" {
		t.Fatalf("promised %v, want segment 1", p)
	}
	u := d.await(t, ctx)
	for len(d.bytes(u)) < len(want) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	if got := d.bytes(u); !bytes.Equal(got, want) {
		t.Fatalf("pushed before the segment's third chunk: %d bytes, want its two chunks (%d)", len(got), len(want))
	}
	// Still in progress: the test has not appended the rest.
	third := feed(t, ch, 1, 2)
	for len(d.bytes(u)) < len(want)+len(third) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	if got := d.bytes(u); !bytes.Equal(got[len(want):], third) {
		t.Fatalf("the third chunk did not follow on the push: %d bytes", len(got))
	}
	feed(t, ch, 1, 3)
	select {
	case <-p[0].Done():
	case <-ctx.Done():
		t.Fatal("the push did not end with its segment")
	}
	seg, err := ch.Segment("v", 1, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if p[0].Err() != nil || p[0].Status != 200 || !bytes.Equal(p[0].Body, seg.Bytes()) {
		t.Fatalf("push: %v, status %d, %d bytes; the segment has %d", p[0].Err(), p[0].Status, len(p[0].Body), seg.Len())
	}
	// Never claimed: the server counts it completed, the client unclaimed.
	for o.pusher.Stats().Completed == before.Completed && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	st, cs := o.pusher.Stats(), c.Stats()
	if st.Completed-before.Completed != 1 || st.Bytes-before.Bytes != int64(seg.Len()) || st.Cancelled != before.Cancelled {
		t.Errorf("server: %d completed, %d bytes, %d cancelled; want 1, %d, 0", st.Completed-before.Completed, st.Bytes-before.Bytes, st.Cancelled-before.Cancelled, seg.Len())
	}
	if cs.Claimed != 0 || cs.UnclaimedBytes != int64(seg.Len()) {
		t.Errorf("client: %d claimed, %d unclaimed bytes; want 0 and %d", cs.Claimed, cs.UnclaimedBytes, seg.Len())
	}
}

// TestResetFreesALivePush: a client that resets the push of a segment in progress
// (RST_STREAM after its first chunks) frees it: the server counts it cancelled and
// stops following the segment, which is still in progress.
func TestResetFreesALivePush(t *testing.T) {
	o := startOrigin(t, h2push.Config{}, "")
	ch := fedChannel(t, o)
	for i := uint64(0); i < 4; i++ {
		feed(t, ch, 0, i)
	}
	feed(t, ch, 1, 0)
	d := newPushData()
	c := pushclient.New(pushclient.Options{OnData: d.onData})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a bound on waiting, not a speed check
	defer cancel()
	before := o.pusher.Stats()
	if _, err := c.Get(ctx, o.h2c+"/live/fed/v/0.m4s?push=k2"); err != nil {
		t.Fatal(err)
	}
	u := d.await(t, ctx)
	if ch.Followers() != 1 {
		t.Fatalf("%d followers of the channel while segment 1 is pushed, want 1 (the push)", ch.Followers())
	}
	if !c.Cancel(u) {
		t.Fatalf("could not cancel %s", u)
	}
	for (o.pusher.Stats().Cancelled == before.Cancelled || ch.Followers() > 0) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	st := o.pusher.Stats()
	if st.Cancelled-before.Cancelled != 1 || st.Completed != before.Completed || ch.Followers() != 0 {
		t.Errorf("server: %d cancelled, %d completed, %d followers; want 1, 0, 0", st.Cancelled-before.Cancelled, st.Completed-before.Completed, ch.Followers())
	}
	if _, complete, err := ch.Partial("v", 1); err != nil || complete {
		t.Errorf("segment 1: complete %v, %v; the test never completed it", complete, err)
	}
	// The segment goes on without the push.
	for i := uint64(1); i < 4; i++ {
		feed(t, ch, 1, i)
	}
}

// earlyChunks is the play fetcher with its chunk reports checked against the hub: a
// report that comes while its segment is still being made is early (chunk-level).
type earlyChunks struct {
	*h2push.Fetcher
	ch     *hub.Channel
	mu     sync.Mutex
	early  map[string]bool // segment URL → a chunk of it reported before it completed
	pushed map[string]bool // segment URLs the player got from a push
}

func (e *earlyChunks) SetChunkSink(sink func(player.Chunk)) {
	e.Fetcher.SetChunkSink(func(c player.Chunk) {
		var track string
		var n uint64
		if _, err := fmt.Sscanf(strings.ReplaceAll(pathOf(c.Request.URL), "/", " "), " live ll %s %d.m4s", &track, &n); err == nil {
			if _, complete, err := e.ch.Partial(track, n); err == nil && !complete {
				e.mu.Lock()
				e.early[pathOf(c.Request.URL)] = true
				e.mu.Unlock()
			}
		}
		sink(c)
	})
}

func (e *earlyChunks) Fetch(ctx context.Context, req player.SegmentRequest) (*player.Response, error) {
	resp, err := e.Fetcher.Fetch(ctx, req)
	if err == nil && resp.Pushed && req.Kind == player.RequestMedia {
		e.mu.Lock()
		e.pushed[pathOf(req.URL)] = true
		e.mu.Unlock()
	}
	return resp, err
}

// TestPlayLiveKPushChunkLevel: the headless player on the one-frame-chunk channel's
// LL-DASH MPD over h2c with K-push gets segments from pushes in progress and appends
// their chunks while the hub is still making them.
func TestPlayLiveKPushChunkLevel(t *testing.T) {
	if testing.Short() {
		t.Skip("plays a live channel for 6 s")
	}
	o := startOrigin(t, h2push.Config{}, "")
	ch, err := o.hub.Channel("ll")
	if err != nil {
		t.Fatal(err)
	}
	manifest := o.h2c + "/live/ll/manifest.mpd"
	u, _ := url.Parse(manifest)
	f, err := h2push.NewPlayFetcher("h2cpush-k2", u, true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e := &earlyChunks{Fetcher: f, ch: ch, early: map[string]bool{}, pushed: map[string]bool{}}
	rule, _ := abr.Parse("fixed:v180")
	p, err := player.New(player.Config{URL: manifest, Fetcher: e, Load: dash.Load, ABR: rule, Duration: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.TargetSource != "service-description" || rep.ChunkAppends == 0 {
		t.Fatalf("target from %q, %d chunk appends: not a low-latency session", rep.TargetSource, rep.ChunkAppends)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var both []string
	for u := range e.pushed {
		if e.early[u] {
			both = append(both, u)
		}
	}
	if len(both) == 0 {
		t.Errorf("no pushed segment's chunk was reported before the segment completed; pushed %v, early %v", e.pushed, e.early)
	}
	t.Logf("pushed and chunk-level: %v; %d chunk appends, %d stalls", both, rep.ChunkAppends, rep.StallCount)
}

// TestLivePushAheadWaitsForItsTurnToBegin: K-push on the newest segment promises two
// that have not begun; each goes out once it begins, chunk by chunk, the one further
// ahead only after the one before it.
func TestLivePushAheadWaitsForItsTurnToBegin(t *testing.T) {
	o := startOrigin(t, h2push.Config{}, "")
	ch := fedChannel(t, o)
	for i := uint64(0); i < 4; i++ {
		feed(t, ch, 0, i)
	}
	d := newPushData()
	c := pushclient.New(pushclient.Options{OnData: d.onData})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a bound on waiting, not a speed check
	defer cancel()
	if _, err := c.Get(ctx, o.h2c+"/live/fed/v/0.m4s?push=k3"); err != nil {
		t.Fatal(err)
	}
	if p := c.Pending(); len(p) != 2 {
		t.Fatalf("promised %v, want segments 1 and 2", p)
	}
	for n := uint64(1); n <= 2; n++ {
		first := feed(t, ch, n, 0)
		u := d.await(t, ctx)
		if want := fmt.Sprintf("/live/fed/v/%d.m4s", n); pathOf(u) != want {
			t.Fatalf("first pushed DATA of %s, want %s", u, want)
		}
		for len(d.bytes(u)) < len(first) && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		if got := d.bytes(u); !bytes.Equal(got, first) {
			t.Fatalf("segment %d: pushed %d bytes before its second chunk, want its first (%d)", n, len(got), len(first))
		}
		for i := uint64(1); i < 4; i++ {
			feed(t, ch, n, i)
		}
	}
	for _, p := range c.Pending() {
		<-p.Done()
		var n uint64
		fmt.Sscanf(pathOf(p.URL), "/live/fed/v/%d.m4s", &n)
		seg, err := ch.Segment("v", n, time.Now())
		if err != nil || p.Err() != nil || !bytes.Equal(p.Body, seg.Bytes()) {
			t.Errorf("segment %d: %v %v, %d bytes pushed", n, err, p.Err(), len(p.Body))
		}
	}
}
