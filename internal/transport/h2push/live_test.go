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
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/player/abr"
	"github.com/streambed/streambed/internal/player/dash"
	"github.com/streambed/streambed/internal/source/looplive"
	"github.com/streambed/streambed/internal/transport/h2push"
	"github.com/streambed/streambed/internal/transport/h2push/pushclient"
)

// inProgressSegment waits, if need be, for a segment of the looped channels to have
// begun less than 1 s ago (so most of it is still to come) and returns its number:
// the segment in progress, which K-push promises on a request for the one before.
func inProgressSegment(t *testing.T) uint64 {
	t.Helper()
	const seg = 2 * time.Second
	since := time.Since(looplive.DefaultAvailabilityStart)
	if since%seg > time.Second {
		time.Sleep(seg - since%seg + 50*time.Millisecond)
		since = time.Since(looplive.DefaultAvailabilityStart)
	}
	return uint64(since / seg)
}

// firstData notes, for each pushed stream, whether its segment was complete in the hub
// when its first DATA frame arrived.
type firstData struct {
	ch    *hub.Channel
	track string
	mu    sync.Mutex
	seen  map[string]bool // URL → complete at its first DATA
	first chan string     // URL of every pushed stream's first DATA
}

func (f *firstData) onData(s *pushclient.Stream, data []byte, end bool) {
	if !s.Pushed || len(data) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.seen[s.URL]; ok {
		return
	}
	var n uint64
	fmt.Sscanf(pathOf(s.URL), "/live/ll/"+f.track+"/%d.m4s", &n)
	_, complete, err := f.ch.Partial(f.track, n)
	f.seen[s.URL] = err == nil && complete
	select {
	case f.first <- s.URL:
	default:
	}
}

func segmentBytes(t *testing.T, ch *hub.Channel, track string, n uint64) []byte {
	t.Helper()
	seg, err := ch.Segment(track, n, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, c := range seg.Chunks {
		b.Write(c.Data)
	}
	return b.Bytes()
}

// TestLivePushStreamsTheSegmentInProgress: K-push on a one-frame-chunk channel
// promises the segment in progress, and its pushed response leaves chunk by chunk:
// the first DATA frame arrives while the hub still makes the segment, the bytes pushed
// are the segment's, and the push, never claimed by a request, is counted as a
// completed push on both ends.
func TestLivePushStreamsTheSegmentInProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a live segment")
	}
	o := startOrigin(t, h2push.Config{}, "")
	ch, err := o.hub.Channel("ll")
	if err != nil {
		t.Fatal(err)
	}
	fd := &firstData{ch: ch, track: "v180", seen: map[string]bool{}, first: make(chan string, 4)}
	c := pushclient.New(pushclient.Options{OnData: fd.onData})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n := inProgressSegment(t)
	before := o.pusher.Stats()
	path := fmt.Sprintf("/live/ll/v180/%d.m4s", n-1)
	if s, err := c.Get(ctx, o.h2c+path+"?push=k2"); err != nil || s.Status != 200 {
		t.Fatalf("GET %s: %v", path, err)
	}
	p := c.Pending()
	want := fmt.Sprintf("/live/ll/v180/%d.m4s", n)
	if len(p) != 1 || pathOf(p[0].URL) != want {
		t.Fatalf("promised %v, want %s", p, want)
	}
	<-p[0].Done()
	if p[0].Err() != nil || p[0].Status != 200 {
		t.Fatalf("push: %v, status %d", p[0].Err(), p[0].Status)
	}
	fd.mu.Lock()
	complete, ok := fd.seen[p[0].URL]
	fd.mu.Unlock()
	if !ok || complete {
		t.Errorf("the push of %s: first DATA seen %v, segment complete then %v; want its first chunk before the segment completed", want, ok, complete)
	}
	if got, want := p[0].Body, segmentBytes(t, ch, "v180", n); !bytes.Equal(got, want) {
		t.Errorf("pushed %d bytes, the segment has %d (equal: false)", len(got), len(want))
	}
	// Never claimed: the server counts it completed, the client unclaimed.
	deadline := time.Now().Add(10 * time.Second) // a bound on waiting, not a speed check
	for o.pusher.Stats().Completed == before.Completed && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	st, cs := o.pusher.Stats(), c.Stats()
	if st.Completed-before.Completed != 1 || st.Bytes-before.Bytes != int64(len(p[0].Body)) || st.Cancelled != before.Cancelled {
		t.Errorf("server: %d completed, %d bytes, %d cancelled; want 1, %d, 0", st.Completed-before.Completed, st.Bytes-before.Bytes, st.Cancelled-before.Cancelled, len(p[0].Body))
	}
	if cs.Claimed != 0 || cs.UnclaimedBytes != int64(len(p[0].Body)) {
		t.Errorf("client: %d claimed, %d unclaimed bytes; want 0 and %d", cs.Claimed, cs.UnclaimedBytes, len(p[0].Body))
	}
}

// TestResetFreesALivePush: a client that resets the push of a segment in progress
// (RST_STREAM after its first chunk) frees it at once: the server counts it cancelled
// and stops following the segment before the segment completes.
func TestResetFreesALivePush(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a live segment")
	}
	o := startOrigin(t, h2push.Config{}, "")
	ch, err := o.hub.Channel("ll")
	if err != nil {
		t.Fatal(err)
	}
	fd := &firstData{ch: ch, track: "v180", seen: map[string]bool{}, first: make(chan string, 4)}
	c := pushclient.New(pushclient.Options{OnData: fd.onData})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n := inProgressSegment(t)
	before := o.pusher.Stats()
	if _, err := c.Get(ctx, o.h2c+fmt.Sprintf("/live/ll/v180/%d.m4s?push=k2", n-1)); err != nil {
		t.Fatal(err)
	}
	var u string
	select {
	case u = <-fd.first:
	case <-ctx.Done():
		t.Fatal("no pushed DATA")
	}
	if !c.Cancel(u) {
		t.Fatalf("could not cancel %s", u)
	}
	for o.pusher.Stats().Cancelled == before.Cancelled && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	for ch.Followers() > 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	_, complete, _ := ch.Partial("v180", n)
	st := o.pusher.Stats()
	if st.Cancelled-before.Cancelled != 1 || st.Completed != before.Completed {
		t.Errorf("server: %d cancelled, %d completed; want 1 and 0", st.Cancelled-before.Cancelled, st.Completed-before.Completed)
	}
	if ch.Followers() != 0 {
		t.Errorf("%d followers of the channel left after the reset", ch.Followers())
	}
	if complete {
		t.Errorf("segment %d completed before the server let go of its push: the reset did not free it", n)
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
