package looplive

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/testmedia"
)

// Run paces chunks into the channel. The clock is pinned 0.1 s before segment 1
// completes, so which segment Run starts with does not depend on how busy the
// machine is: the chunks of segment 1 due by then are appended at once, the rest one
// timer each, in order, whatever the timers' lateness.
func TestRunAppendsChunksInOrder(t *testing.T) {
	a, err := hub.OpenAsset(testmedia.Asset(t))
	if err != nil {
		t.Fatal(err)
	}
	d := a.Info().SegmentDuration
	anchor := time.Unix(1_700_000_000, 0)
	pinned := anchor.Add(2*d - 100*time.Millisecond)
	c, src, err := NewChannel(a, ChannelOptions{Name: "ch", AvailabilityStart: anchor, Clock: func() time.Time { return pinned }})
	if err != nil {
		t.Fatal(err)
	}
	video := a.Info().Tracks[0].ID
	sub := c.Subscribe(1000, video)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, c) }()
	var got []hub.Event
	for len(got) < 2 {
		select {
		case ev := <-sub.C:
			if ev.Number == 2 || len(got) > 0 {
				got = append(got, ev)
			}
			if len(got) == 0 && ev.Number != 1 {
				t.Fatalf("first event of segment %d, want 1", ev.Number)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("no chunk of segment 2 within 60 s")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got[0].Number != 2 || got[0].Index != 0 || !got[0].Chunk.Keyframe {
		t.Errorf("segment 2 began with %d/%d", got[0].Number, got[0].Index)
	}
	// What Run appended is what any origin makes on demand: the same bytes.
	p, complete, err := c.Partial(video, 1)
	if err != nil || !complete {
		t.Fatalf("segment 1 after Run: %v complete=%v", err, complete)
	}
	made, _ := src.Segment(video, 1)
	if !bytes.Equal(p.Bytes(), made.Bytes()) {
		t.Errorf("segment 1 appended by Run differs from the one made on demand")
	}
	if at := c.AvailableAt(video, 1); !at.Equal(anchor.Add(2 * d)) {
		t.Errorf("segment 1 available at %v, want %v", at, anchor.Add(2*d))
	}
}
