package hub

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
)

// fakeGen builds 2-chunk segments of 1 s at timescale 1000 and counts builds.
type fakeGen struct{ builds atomic.Int64 }

func (g *fakeGen) Segment(track string, n uint64) (*media.Segment, error) {
	g.builds.Add(1)
	start := n * 1000
	return &media.Segment{
		SegmentRef: media.SegmentRef{Number: n, Start: start, Duration: 1000},
		Chunks: []*media.Chunk{
			{Data: []byte{byte(n), 0}, Start: start, Duration: 500, Keyframe: true},
			{Data: []byte{byte(n), 1}, Start: start + 500, Duration: 500},
		},
	}, nil
}

func testChannel(t *testing.T, now *time.Time, gen Generator) *Channel {
	t.Helper()
	info := &media.Stream{Name: "ch", SegmentDuration: time.Second,
		Tracks: []*media.Track{{ID: "v", Kind: media.Video, Timescale: 1000}}}
	c, err := NewChannel(ChannelConfig{
		Info: info, Inits: map[string][]byte{"v": {1}}, Generator: gen,
		Timeline: media.Timeline{AvailabilityStart: time.Unix(1000, 0), SegmentDuration: time.Second, TimeShiftBufferDepth: 5 * time.Second},
		Clock:    func() time.Time { return *now },
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestChannelSegmentAvailability(t *testing.T) {
	now := time.Unix(1010, 500e6) // 10.5 s after start: segments 0..9 complete
	gen := &fakeGen{}
	c := testChannel(t, &now, gen)
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
	// A second read shares the stored copy instead of building again.
	before := gen.builds.Load()
	a, _ := c.Segment("v", 9, now)
	b, _ := c.Segment("v", 9, now)
	if gen.builds.Load() != before || a != b {
		t.Errorf("segment 9 built again or not shared")
	}
}

func TestChannelWindowBoundsMemory(t *testing.T) {
	now := time.Unix(1010, 0)
	c := testChannel(t, &now, &fakeGen{})
	for i := 0; i < 100; i++ {
		now = now.Add(time.Second)
		if _, err := c.Window(now); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	n := len(c.window["v"])
	c.mu.Unlock()
	if n > 7 { // 5 s window + one before + the newest
		t.Errorf("window holds %d segments after 100 s, want ≤ 7", n)
	}
	w, _ := c.Window(now)
	if got := len(w["v"]); got != 5 {
		t.Errorf("manifest window lists %d segments, want 5", got)
	}
}

func TestSubscriptionSlowReaderSkipsToKeyframe(t *testing.T) {
	now := time.Unix(1010, 0)
	c := testChannel(t, &now, &fakeGen{})
	fast := c.Subscribe(100)
	slow := c.Subscribe(1)
	for n := uint64(0); n < 3; n++ {
		s, _ := (&fakeGen{}).Segment("v", n)
		if err := c.Publish("v", s); err != nil {
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
	s, _ := (&fakeGen{}).Segment("v", 3)
	_ = c.Publish("v", s)
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

func TestRunReleasesChunksOnTime(t *testing.T) {
	c, err := NewChannel(ChannelConfig{
		Info:      &media.Stream{Name: "ch", Tracks: []*media.Track{{ID: "v", Kind: media.Video, Timescale: 1000}}},
		Inits:     map[string][]byte{"v": {1}},
		Generator: &fakeGen{},
		Timeline:  media.Timeline{AvailabilityStart: time.Now().Add(-1900 * time.Millisecond), SegmentDuration: time.Second, TimeShiftBufferDepth: 4 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	sub := c.Subscribe(10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	// Segment 1 is in progress: its second chunk is due within ~100 ms, then segment 2.
	var got []Event
	for len(got) < 3 {
		select {
		case ev := <-sub.C:
			got = append(got, ev)
		case <-time.After(5 * time.Second):
			t.Fatal("no chunk released within 5 s")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := [][2]uint64{{1, 0}, {1, 1}, {2, 0}}
	for i, ev := range got {
		if ev.Number != want[i][0] || uint64(ev.Index) != want[i][1] {
			t.Errorf("event %d = %d/%d, want %v", i, ev.Number, ev.Index, want[i])
		}
	}
	if !got[1].Last || got[0].Last {
		t.Errorf("Last flags wrong: %+v", got)
	}
}

func TestArchiveWritesSegmentsAndSurvivesFailures(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1010, 0)
	info := &media.Stream{Name: "ch", SegmentDuration: time.Second,
		Tracks: []*media.Track{{ID: "v", Kind: media.Video, Timescale: 1000}}}
	c, err := NewChannel(ChannelConfig{
		Info: info, Inits: map[string][]byte{"v": {9}}, Generator: &fakeGen{}, ArchiveDir: dir,
		Timeline: media.Timeline{AvailabilityStart: time.Unix(1000, 0), SegmentDuration: time.Second, TimeShiftBufferDepth: 5 * time.Second},
		Clock:    func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := c.Segment("v", 9, now); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "v", "9.m4s"))
	if err != nil || !bytes.Equal(b, []byte{9, 0, 9, 1}) {
		t.Fatalf("archived segment 9 = %v, %v", b, err)
	}
	if init, _ := os.ReadFile(filepath.Join(dir, "v", "init.mp4")); !bytes.Equal(init, []byte{9}) {
		t.Errorf("archived init = %v", init)
	}
	st, _ := c.Archive()
	if st.Written != 1 || st.Failed != 0 {
		t.Errorf("stats after one segment read thrice: %+v", st)
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
	if st, _ := c.Archive(); st.Failed != 1 || st.LastErr == nil {
		t.Errorf("failure not recorded: %+v", st)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}
