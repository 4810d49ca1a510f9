package hub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
)

// fakeOD is a fixed schedule of 2-chunk segments of 1 s at timescale 1000 from
// anchor, with a 5 s window; it counts the segments it makes.
type fakeOD struct {
	anchor time.Time
	builds atomic.Int64
}

func (g *fakeOD) Window(now time.Time) (uint64, uint64, bool) {
	el := now.Sub(g.anchor)
	if el < time.Second {
		return 0, 0, false
	}
	last := uint64(el/time.Second) - 1
	first := uint64(0)
	if last >= 5 {
		first = last - 4
	}
	return first, last, true
}
func (g *fakeOD) AvailableAt(n uint64) time.Time {
	return g.anchor.Add(time.Duration(n+1) * time.Second)
}
func (g *fakeOD) Number(_ string, start uint64) (uint64, bool) {
	return start / 1000, start%1000 == 0
}
func (g *fakeOD) Segment(_ string, n uint64) (*media.Segment, error) {
	g.builds.Add(1)
	return segment(n, 1000), nil
}

// segment n of length d ms starting at n·d, in two chunks.
func segment(n, d uint64) *media.Segment {
	start := n * d
	return &media.Segment{
		SegmentRef: media.SegmentRef{Number: n, Start: start, Duration: d},
		Chunks: []*media.Chunk{
			{Data: []byte{byte(n), 0}, Start: start, Duration: d / 2, Keyframe: true},
			{Data: []byte{byte(n), 1}, Start: start + d/2, Duration: d - d/2},
		},
	}
}

func newTestChannel(t *testing.T, now *time.Time, od OnDemand, archive string) *Channel {
	t.Helper()
	info := &media.Stream{Name: "ch", SegmentDuration: time.Second,
		Tracks: []*media.Track{{ID: "v", Kind: media.Video, Timescale: 1000}}}
	c, err := NewChannel(ChannelConfig{
		Info: info, Inits: map[string][]byte{"v": {9}}, OnDemand: od, ArchiveDir: archive,
		Timeline: media.Timeline{AvailabilityStart: time.Unix(1000, 0), SegmentDuration: time.Second, TimeShiftBufferDepth: 5 * time.Second},
		Clock:    func() time.Time { return *now },
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestOnDemandAvailability(t *testing.T) {
	now := time.Unix(1010, 500e6) // 10.5 s after start: segments 0..9 complete
	od := &fakeOD{anchor: time.Unix(1000, 0)}
	c := newTestChannel(t, &now, od, "")
	tests := []struct {
		n    uint64
		want error
	}{
		{9, nil}, {5, nil}, {10, media.ErrNotYet}, {4, media.ErrGone}, {0, media.ErrGone},
	}
	for _, tt := range tests {
		_, err := c.Segment("v", tt.n, now)
		if !errors.Is(err, tt.want) {
			t.Errorf("segment %d: err %v, want %v", tt.n, err, tt.want)
		}
	}
	if _, err := c.Segment("nope", 9, now); !errors.Is(err, media.ErrNotFound) {
		t.Errorf("unknown track: %v", err)
	}
	// A second read shares the stored copy instead of making it again.
	before := od.builds.Load()
	a, _ := c.Segment("v", 9, now)
	b, _ := c.Segment("v", 9, now)
	if od.builds.Load() != before || a != b {
		t.Errorf("segment 9 made again or not shared")
	}
	// A pinned clock in the past is answered by the schedule, and not kept.
	past := time.Unix(1003, 0)
	if s, err := c.Segment("v", 1, past); err != nil || s.Number != 1 {
		t.Errorf("segment 1 at a pinned past clock: %v", err)
	}
	if _, _, err := c.Partial("v", 1); !errors.Is(err, media.ErrNotYet) {
		t.Errorf("a segment made for a pinned clock outside the real window was stored: %v", err)
	}
	if s, err := c.SegmentAt("v", 7000, now); err != nil || s.Number != 7 {
		t.Errorf("SegmentAt(7000) = %v", err)
	}
	if _, err := c.SegmentAt("v", 7001, now); !errors.Is(err, media.ErrNotFound) {
		t.Errorf("SegmentAt(7001): %v", err)
	}
	if n, ok := c.Latest(now); !ok || n != 9 {
		t.Errorf("Latest = %d %v, want 9", n, ok)
	}
}

func TestOnDemandWindowBoundsMemory(t *testing.T) {
	now := time.Unix(1010, 0)
	c := newTestChannel(t, &now, &fakeOD{anchor: time.Unix(1000, 0)}, "")
	for i := 0; i < 100; i++ {
		now = now.Add(time.Second)
		if _, err := c.Window(now); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	n := len(c.tracks["v"].segs)
	c.mu.Unlock()
	if n > 7 { // 5 s window + one before + the newest
		t.Errorf("store holds %d segments after 100 s, want ≤ 7", n)
	}
	w, _ := c.Window(now)
	if got := len(w["v"]); got != 5 {
		t.Errorf("manifest window lists %d segments, want 5", got)
	}
}

// A channel fed chunk by chunk: segments of varying length, visible in progress to
// Partial, available to Segment once ended, windowed by when they completed.
func TestStoreByPresence(t *testing.T) {
	now := time.Unix(2000, 0)
	c := newTestChannel(t, &now, nil, "")
	if _, err := c.Segment("v", 0, now); !errors.Is(err, media.ErrNotYet) {
		t.Fatalf("empty channel: %v", err)
	}
	start := uint64(0)
	for n, d := range []uint64{1000, 1500, 800, 1200, 2000, 1000, 900} {
		s := segment(0, d)
		for i, ch := range s.Chunks {
			ch.Start += start
			ch.Data = []byte{byte(n), byte(i)}
			if err := c.AppendChunk("v", uint64(n), ch, false); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				p, complete, err := c.Partial("v", uint64(n))
				if err != nil || complete || len(p.Chunks) != 1 {
					t.Fatalf("segment %d in progress: %v %v %v", n, p, complete, err)
				}
				if _, err := c.Segment("v", uint64(n), now); !errors.Is(err, media.ErrNotYet) {
					t.Errorf("segment %d served before it ended: %v", n, err)
				}
			}
		}
		start += d
		now = now.Add(time.Duration(d) * time.Millisecond)
		// The encoder ends a segment by starting the next; the last one explicitly.
		if n == 6 {
			if err := c.EndSegment("v", uint64(n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	w, _ := c.Window(now)
	refs := w["v"]
	// Completed at 2000+{2.5 (seg 0 ends when 1 starts) …}: with a 5 s window the
	// newest few; every listed segment starts where the previous ended.
	if len(refs) == 0 || refs[len(refs)-1].Number != 6 || refs[len(refs)-1].Duration != 900 {
		t.Fatalf("window %+v", refs)
	}
	for i := 1; i < len(refs); i++ {
		if refs[i].Start != refs[i-1].End() {
			t.Errorf("window not contiguous: %+v", refs)
		}
	}
	if got, err := c.SegmentAt("v", refs[1].Start, now); err != nil || got.Number != refs[1].Number {
		t.Errorf("SegmentAt(%d) = %v %v", refs[1].Start, got, err)
	}
	if _, err := c.Segment("v", 0, now); !errors.Is(err, media.ErrGone) {
		t.Errorf("segment 0 after the window: %v", err)
	}
	// Refused: a chunk that leaves a gap, one of an older segment; a duplicate is
	// dropped quietly.
	if err := c.AppendChunk("v", 7, &media.Chunk{Data: []byte{1}, Start: start + 5, Duration: 10}, false); err != nil {
		t.Fatal(err) // a new segment may start anywhere
	}
	if err := c.AppendChunk("v", 7, &media.Chunk{Data: []byte{1}, Start: start + 100, Duration: 10}, false); !errors.Is(err, media.ErrInvalidMedia) {
		t.Errorf("gap: %v", err)
	}
	if err := c.AppendChunk("v", 3, &media.Chunk{Data: []byte{1}, Start: 1, Duration: 10}, false); !errors.Is(err, media.ErrInvalidMedia) {
		t.Errorf("old segment: %v", err)
	}
	if err := c.AppendChunk("v", 7, &media.Chunk{Data: []byte{2}, Start: start + 5, Duration: 10}, false); err != nil {
		t.Errorf("duplicate: %v", err)
	}
	if p, _, _ := c.Partial("v", 7); len(p.Chunks) != 1 || p.Chunks[0].Data[0] != 1 {
		t.Errorf("the duplicate replaced the first arrival: %+v", p.Chunks)
	}
}

func TestSubscriptionSlowReaderSkipsToKeyframe(t *testing.T) {
	now := time.Unix(1010, 0)
	c := newTestChannel(t, &now, nil, "")
	fast := c.Subscribe(100)
	slow := c.Subscribe(1)
	for n := uint64(0); n < 3; n++ {
		if err := c.Publish("v", segment(n, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(fast.C); got != 6 {
		t.Errorf("fast reader got %d chunks, want 6", got)
	}
	// The slow reader holds the first chunk, loses the rest of segment 0, and cannot
	// take the keyframes of segments 1 and 2 either while its queue is full.
	if ev := <-slow.C; ev.Number != 0 || ev.Index != 0 {
		t.Errorf("slow reader's first chunk = %d/%d", ev.Number, ev.Index)
	}
	if slow.Lost() != 5 {
		t.Errorf("slow reader lost %d, want 5", slow.Lost())
	}
	// After draining, it resumes at the next keyframe, never mid-segment.
	_ = c.Publish("v", segment(3, 1000))
	if ev := <-slow.C; ev.Number != 3 || ev.Index != 0 {
		t.Errorf("slow reader resumed at %d/%d, want 3/0", ev.Number, ev.Index)
	}
	fast.Stop()
	slow.Stop()
	slow.Stop() // idempotent
	if c.Subscribers() != 0 {
		t.Errorf("subscribers left: %d", c.Subscribers())
	}
}

// A Notify subscription goes on with the next event after an overflow (its reader
// fills the gap from the store) instead of waiting for a keyframe.
func TestNotifyGoesOnAfterOverflow(t *testing.T) {
	now := time.Unix(1010, 0)
	c := newTestChannel(t, &now, nil, "")
	n := c.Notify(1)
	defer n.Stop()
	if err := c.Publish("v", segment(0, 1000)); err != nil {
		t.Fatal(err)
	}
	if ev := <-n.C; ev.Number != 0 || ev.Index != 0 {
		t.Fatalf("first event %d/%d", ev.Number, ev.Index)
	}
	if n.Lost() != 1 {
		t.Errorf("lost %d, want 1 (chunk 1 of segment 0)", n.Lost())
	}
	if err := c.Publish("v", segment(1, 1000)); err != nil {
		t.Fatal(err)
	}
	if ev := <-n.C; ev.Number != 1 || ev.Index != 0 {
		t.Errorf("after the overflow: %d/%d, want 1/0", ev.Number, ev.Index)
	}
	seg, complete, err := c.Partial("v", 0)
	if err != nil || !complete || len(seg.Chunks) != 2 {
		t.Errorf("the store has segment 0 whole for the reader to fill from: %v %v", complete, err)
	}
}

// A segment ended by the next one's start reaches subscribers as an end-only event.
func TestEndOnlyEvent(t *testing.T) {
	now := time.Unix(1010, 0)
	c := newTestChannel(t, &now, nil, "")
	sub := c.Subscribe(10)
	s0, s1 := segment(0, 1000), segment(1, 1000)
	for _, ch := range s0.Chunks {
		_ = c.AppendChunk("v", 0, ch, false)
	}
	_ = c.AppendChunk("v", 1, s1.Chunks[0], false)
	var got []Event
	for len(sub.C) > 0 {
		got = append(got, <-sub.C)
	}
	if len(got) != 4 || got[2].Chunk != nil || !got[2].Last || got[2].Number != 0 || got[3].Number != 1 {
		t.Errorf("events %+v", got)
	}
	c.EndStream()
	if _, ok := <-sub.C; ok {
		t.Errorf("subscription open after the end of the stream")
	}
	if err := c.AppendChunk("v", 1, s1.Chunks[1], true); !errors.Is(err, media.ErrGone) {
		t.Errorf("append after the end: %v", err)
	}
	if s, err := c.Segment("v", 1, now); err != nil || len(s.Chunks) != 1 {
		t.Errorf("segment in progress at the end of the stream: %v %v", s, err)
	}
}

func TestAwait(t *testing.T) {
	now := time.Unix(1010, 0)
	c := newTestChannel(t, &now, nil, "")
	got := make(chan error, 1)
	go func() {
		s, err := c.Await(context.Background(), "v", 0)
		if err == nil && s.Number != 0 {
			err = errors.New("wrong segment")
		}
		got <- err
	}()
	time.Sleep(10 * time.Millisecond)
	if err := c.Publish("v", segment(0, 1000)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Await did not return after the segment was published")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Await(ctx, "v", 5); !errors.Is(err, context.Canceled) {
		t.Errorf("Await with a cancelled context: %v", err)
	}
}

func TestArchiveWritesSegmentsAndSurvivesFailures(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1010, 0)
	c := newTestChannel(t, &now, &fakeOD{anchor: time.Unix(1000, 0)}, dir)
	h := New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := h.AddChannel(ctx, c, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := c.Segment("v", 9, now); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { st, _ := c.Archive(); return st.Written == 1 })
	b, err := os.ReadFile(filepath.Join(dir, "v", "9.m4s"))
	if err != nil || !bytes.Equal(b, []byte{9, 0, 9, 1}) {
		t.Fatalf("archived segment 9 = %v, %v", b, err)
	}
	if init, _ := os.ReadFile(filepath.Join(dir, "v", "init.mp4")); !bytes.Equal(init, []byte{9}) {
		t.Errorf("archived init = %v", init)
	}
	// A track folder that cannot be written (here: a file in its place) loses the
	// archive copy, not the segment: viewers are still served from memory.
	if err := os.RemoveAll(filepath.Join(dir, "v")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "v"), []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := c.Segment("v", 8, now)
	if err != nil || s.Number != 8 {
		t.Fatalf("segment 8 with a broken archive: %v", err)
	}
	waitFor(t, func() bool { st, _ := c.Archive(); return st.Failed == 1 && st.LastErr != nil })
	if st, _ := c.Archive(); st.Written != 1 {
		t.Errorf("stats: %+v", st)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

// flakySource fails twice, then feeds one segment and waits.
type flakySource struct{ runs atomic.Int64 }

func (f *flakySource) Run(ctx context.Context, c *Channel) error {
	if f.runs.Add(1) <= 2 {
		return errors.New("encoder gone")
	}
	if err := c.Publish("v", segment(0, 1000)); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

func TestRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for two supervised restarts (3 s)")
	}
	now := time.Unix(1010, 0)
	h := New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newTestChannel(t, &now, nil, "")
	src := &flakySource{}
	if err := h.AddChannel(ctx, c, src); err != nil {
		t.Fatal(err)
	}
	if err := h.AddChannel(ctx, newTestChannel(t, &now, nil, ""), nil); !errors.Is(err, media.ErrBadRequest) {
		t.Errorf("a second channel of the same name: %v", err)
	}
	if got, err := h.Channel("ch"); err != nil || got != c {
		t.Fatalf("Channel(ch) = %v %v", got, err)
	}
	if s, err := h.Stream("ch", true); err != nil || !s.Live() {
		t.Errorf("Stream(ch, live) = %v %v", s, err)
	}
	if _, err := h.Stream("ch", false); !errors.Is(err, media.ErrNotFound) {
		t.Errorf("Stream(ch, vod): %v", err)
	}
	// The supervisor restarts the failing source until it feeds the channel.
	waitFor(t, func() bool { _, err := c.Segment("v", 0, now); return err == nil })
	if src.runs.Load() != 3 {
		t.Errorf("source ran %d times, want 3", src.runs.Load())
	}
	sub := c.Subscribe(1)
	if err := h.RemoveChannel("ch"); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-sub.C; ok {
		t.Errorf("subscription still open after the channel was removed")
	}
	if _, err := h.Channel("ch"); !errors.Is(err, media.ErrNotFound) {
		t.Errorf("removed channel still registered: %v", err)
	}
	if err := h.RemoveChannel("ch"); !errors.Is(err, media.ErrNotFound) {
		t.Errorf("removing twice: %v", err)
	}
	h.Close()
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// An encoder brings its tracks as it connects: a channel can start empty.
func TestAddTrack(t *testing.T) {
	now := time.Unix(1010, 0)
	c, err := NewChannel(ChannelConfig{Info: &media.Stream{Name: "in"}, Clock: func() time.Time { return now },
		Timeline: media.Timeline{SegmentDuration: time.Second, TimeShiftBufferDepth: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Latest(now); ok {
		t.Error("an empty channel has a latest segment")
	}
	before := c.Info()
	for _, tr := range []*media.Track{
		{ID: "a", Kind: media.Audio, Timescale: 48000, Bandwidth: 64000},
		{ID: "v2", Kind: media.Video, Timescale: 90000, Bandwidth: 800000},
		{ID: "v1", Kind: media.Video, Timescale: 90000, Bandwidth: 300000},
	} {
		if err := c.AddTrack(tr); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	for _, tr := range c.Info().Tracks {
		ids = append(ids, tr.ID)
	}
	if strings.Join(ids, ",") != "v1,v2,a" || len(before.Tracks) != 0 {
		t.Errorf("tracks %v (the old snapshot has %d)", ids, len(before.Tracks))
	}
	if _, err := c.Init("v1"); !errors.Is(err, media.ErrNotYet) {
		t.Errorf("init before the encoder sent it: %v", err)
	}
	if err := c.SetInit("v1", []byte{1}); err != nil {
		t.Fatal(err)
	}
	if err := c.AddTrack(&media.Track{ID: "v1", Kind: media.Audio, Timescale: 90000}); !errors.Is(err, media.ErrInvalidMedia) {
		t.Errorf("a track changing kind: %v", err)
	}
	if err := c.AddTrack(&media.Track{ID: "v1", Kind: media.Video, Timescale: 90000, Bandwidth: 900000, Codec: "avc1.64001f"}); err != nil {
		t.Fatal(err)
	}
	if tr, _ := c.Info().Track("v1"); tr.Codec != "avc1.64001f" || c.Info().Tracks[1].ID != "v1" {
		t.Errorf("replaced track not in place: %+v", c.Info().Tracks)
	}
	if b, _ := c.Init("v1"); len(b) != 1 {
		t.Errorf("init lost when the track was described again")
	}
}

func TestSetAvailabilityStart(t *testing.T) {
	c, err := NewChannel(ChannelConfig{Info: &media.Stream{Name: "in"},
		Timeline: media.Timeline{SegmentDuration: 2 * time.Second, TimeShiftBufferDepth: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Timeline().AvailabilityStart.IsZero() {
		t.Errorf("an encoder's channel has an anchor before any media: %v", c.Timeline().AvailabilityStart)
	}
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	c.SetAvailabilityStart(at)
	if tl := c.Timeline(); !tl.AvailabilityStart.Equal(at) || tl.SegmentDuration != 2*time.Second || tl.TimeShiftBufferDepth != 10*time.Second {
		t.Errorf("timeline after anchoring: %+v", tl)
	}
}

// Assets are read without the hub's lock (every segment request looks one up) while
// others are added: a reader sees each asset whole, once added always, and an asset
// added again under its name replaces the first.
func TestAssetsAddedWhileRead(t *testing.T) {
	h := New()
	asset := func(name string) *Asset { return &Asset{stream: &media.Stream{Name: name}} }
	first := asset("a0")
	h.AddAsset(first)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i < 200; i++ {
			h.AddAsset(asset(fmt.Sprintf("a%d", i)))
		}
	}()
	for seen := 0; seen < 200; {
		if a, err := h.Asset("a0"); err != nil || a != first {
			t.Fatalf("Asset(a0) = %v, %v while others were added", a, err)
		}
		list := h.Assets()
		if len(list) < seen {
			t.Fatalf("%d assets listed after %d", len(list), seen)
		}
		for _, a := range list {
			if a.Info() == nil {
				t.Fatal("an asset listed before it was whole")
			}
		}
		seen = len(list)
		if seen < 200 {
			<-time.After(time.Millisecond) // let the writer on; no timing is asserted
		}
	}
	<-done
	second := asset("a0")
	h.AddAsset(second)
	if a, _ := h.Asset("a0"); a != second || len(h.Assets()) != 200 {
		t.Errorf("a0 added again: got %p (want %p), %d assets (want 200)", a, second, len(h.Assets()))
	}
	if _, err := h.Asset("nope"); !errors.Is(err, media.ErrNotFound) {
		t.Errorf("Asset(nope): %v, want ErrNotFound", err)
	}
}
