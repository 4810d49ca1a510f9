package h2push_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
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
