package hub

import (
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
)

// Edge names the newest complete segment and the one after it as stored, and hands
// out a broadcast that the next append closes — taken with the edge, so no append
// between reading the edge and waiting is missed.
func TestEdge(t *testing.T) {
	now := time.Unix(1010, 0)
	c := newTestChannel(t, &now, nil, "")
	if _, ok, _, err := c.Edge("v", now); ok || err != nil {
		t.Fatalf("an empty channel has an edge: ok=%v err=%v", ok, err)
	}
	if _, _, _, err := c.Edge("nope", now); err == nil {
		t.Fatal("an unknown track has an edge")
	}
	if err := c.Publish("v", segment(3, 1000)); err != nil {
		t.Fatal(err)
	}
	e, ok, grew, err := c.Edge("v", now)
	if !ok || err != nil || e.Last != 3 || e.Next.Number != 4 || len(e.Next.Chunks) != 0 || e.Ended {
		t.Fatalf("edge %+v ok=%v err=%v", e, ok, err)
	}
	select {
	case <-grew:
		t.Fatal("the broadcast is closed before anything grew")
	default:
	}
	if err := c.AppendChunk("v", 4, segment(4, 1000).Chunks[0], false); err != nil {
		t.Fatal(err)
	}
	select {
	case <-grew:
	default:
		t.Fatal("an append did not close the broadcast taken with the edge")
	}
	e, _, grew, _ = c.Edge("v", now)
	if e.Last != 3 || e.Next.Number != 4 || len(e.Next.Chunks) != 1 {
		t.Fatalf("edge with segment 4 begun: %+v", e)
	}
	// The edge's chunks are a copy: a later append does not show in it.
	if err := c.AppendChunk("v", 4, segment(4, 1000).Chunks[1], true); err != nil {
		t.Fatal(err)
	}
	if len(e.Next.Chunks) != 1 {
		t.Errorf("an edge taken before saw a later chunk")
	}
	<-grew
	e, _, grew, _ = c.Edge("v", now)
	if e.Last != 4 || e.Next.Number != 5 {
		t.Fatalf("edge after segment 4 completed: %+v", e)
	}
	// Another track's chunk does not wake the readers of this one.
	if err := c.AddTrack(&media.Track{ID: "a", Kind: media.Audio, Timescale: 1000}); err != nil {
		t.Fatal(err)
	}
	if err := c.AppendChunk("a", 5, segment(5, 1000).Chunks[0], false); err != nil {
		t.Fatal(err)
	}
	select {
	case <-grew:
		t.Fatal("a chunk of track a closed the broadcast of track v")
	default:
	}
	c.EndStream()
	<-grew
	if e, _, _, _ = c.Edge("v", now); !e.Ended {
		t.Error("the edge of an ended channel does not say so")
	}
}

// A looped channel's edge is its schedule's: segment 9 is the newest complete at
// 10.5 s, 10 is in progress whether or not its source has stored any of it.
func TestEdgeLooped(t *testing.T) {
	now := time.Unix(1010, 500e6)
	c := newTestChannel(t, &now, &fakeOD{anchor: time.Unix(1000, 0)}, "")
	e, ok, _, err := c.Edge("v", now)
	if !ok || err != nil || e.Last != 9 || e.Next.Number != 10 || len(e.Next.Chunks) != 0 {
		t.Fatalf("edge %+v ok=%v err=%v", e, ok, err)
	}
}
