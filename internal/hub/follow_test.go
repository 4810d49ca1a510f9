package hub

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
)

// Which segments a follower gets, waits for or is refused. A cancelled context tells
// "would wait" (context.Canceled) from a refusal without any timing.
func TestFollowWhatMayBeWaitedFor(t *testing.T) {
	store := func(t *testing.T, skip bool) *Channel {
		now := time.Unix(1010, 0)
		c := newTestChannel(t, &now, nil, "")
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		must(c.Publish("v", segment(3, 1000)))
		n := uint64(4)
		if skip {
			n = 5
		}
		must(c.AppendChunk("v", n, segment(n, 1000).Chunks[0], false)) // in progress
		return c
	}
	od := func(t *testing.T) *Channel {
		now := time.Unix(1010, 500e6) // segments 0..9 complete by the schedule, 10 in progress
		return newTestChannel(t, &now, &fakeOD{anchor: time.Unix(1000, 0)}, "")
	}
	ended := func(t *testing.T) *Channel {
		c := store(t, false)
		c.EndStream()
		return c
	}
	for _, tc := range []struct {
		name    string
		channel func(*testing.T) *Channel
		n       uint64
		chunks  int
		want    error
	}{
		{"complete", func(t *testing.T) *Channel { return store(t, false) }, 3, 2, nil},
		{"in progress", func(t *testing.T) *Channel { return store(t, false) }, 4, 1, context.Canceled},
		{"next", func(t *testing.T) *Channel { return store(t, false) }, 5, 0, context.Canceled},
		{"farther ahead", func(t *testing.T) *Channel { return store(t, false) }, 6, 0, media.ErrNotYet},
		{"before the window", func(t *testing.T) *Channel { return store(t, false) }, 2, 0, media.ErrGone},
		{"skipped", func(t *testing.T) *Channel { return store(t, true) }, 4, 0, media.ErrNotFound},
		{"ended: its open segment is complete", ended, 4, 1, nil},
		{"ended: no next", ended, 5, 0, media.ErrNotFound},
		{"looped: in progress by the schedule, source behind", od, 10, 0, context.Canceled},
		{"looped: next", od, 11, 0, context.Canceled},
		{"looped: farther ahead", od, 12, 0, media.ErrNotYet},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.channel(t)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			got := 0
			err := c.Follow(ctx, "v", tc.n, time.Hour, func(chunks []*media.Chunk) error {
				got += len(chunks)
				return nil
			})
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("Follow(%d) = %v, want %v", tc.n, err, tc.want)
			}
			if got != tc.chunks {
				t.Errorf("Follow(%d) handed out %d chunks, want %d", tc.n, got, tc.chunks)
			}
			if c.Followers() != 0 {
				t.Errorf("%d followers after Follow returned", c.Followers())
			}
		})
	}
}

// A follower gets each chunk once and in order, as it is appended, and ends with the
// segment; a segment that does not begin within the wait is ErrNotYet, and one whose
// source stops in the middle is ErrCutShort.
func TestFollowChunkByChunk(t *testing.T) {
	now := time.Unix(1010, 0)
	c := newTestChannel(t, &now, nil, "")
	if err := c.Publish("v", segment(0, 1000)); err != nil {
		t.Fatal(err)
	}
	seg := segment(1, 1000)
	handed := make(chan []*media.Chunk, 4)
	done := make(chan error, 1)
	go func() {
		done <- c.Follow(context.Background(), "v", 1, time.Minute, func(chunks []*media.Chunk) error {
			handed <- chunks
			return nil
		})
	}()
	waitFor(t, func() bool { return c.Followers() == 1 })
	for i, ch := range seg.Chunks {
		if err := c.AppendChunk("v", 1, ch, i == len(seg.Chunks)-1); err != nil {
			t.Fatal(err)
		}
		if got := <-handed; len(got) != 1 || got[0] != ch {
			t.Fatalf("after chunk %d was appended the follower got %v", i, got)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("Follow = %v at the end of the segment", err)
	}

	if err := c.Follow(context.Background(), "v", 2, 20*time.Millisecond, func([]*media.Chunk) error { return nil }); !errors.Is(err, media.ErrNotYet) {
		t.Errorf("a next segment that does not begin: %v, want ErrNotYet", err)
	}
	if err := c.AppendChunk("v", 2, segment(2, 1000).Chunks[0], false); err != nil {
		t.Fatal(err)
	}
	if err := c.Follow(context.Background(), "v", 2, 20*time.Millisecond, func([]*media.Chunk) error { return nil }); !errors.Is(err, ErrCutShort) {
		t.Errorf("a segment whose source stopped: %v, want ErrCutShort", err)
	}
}

// The chunk duration is the configured one, else the longest chunk of the newest
// segment a source completed; a segment that came whole makes it the segment's.
func TestChunkDuration(t *testing.T) {
	now := time.Unix(1010, 0)
	c := newTestChannel(t, &now, nil, "")
	if d := c.ChunkDuration(); d != 0 {
		t.Errorf("before any segment: %v", d)
	}
	if err := c.Publish("v", segment(0, 1000)); err != nil {
		t.Fatal(err)
	}
	if d := c.ChunkDuration(); d != 500*time.Millisecond {
		t.Errorf("after two chunks of 500 ms: %v", d)
	}
	whole := &media.Segment{SegmentRef: media.SegmentRef{Number: 1, Start: 1000, Duration: 1000},
		Chunks: []*media.Chunk{{Data: []byte{1}, Start: 1000, Duration: 1000, Keyframe: true}}}
	if err := c.Publish("v", whole); err != nil {
		t.Fatal(err)
	}
	if d := c.ChunkDuration(); d != time.Second {
		t.Errorf("after a whole segment: %v", d)
	}
	configured, err := NewChannel(ChannelConfig{Info: &media.Stream{Name: "cfg", Tracks: []*media.Track{{ID: "v", Kind: media.Video, Timescale: 1000}}},
		ChunkDuration: 40 * time.Millisecond, Timeline: media.Timeline{AvailabilityStart: time.Unix(1000, 0), SegmentDuration: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if d := configured.ChunkDuration(); d != 40*time.Millisecond {
		t.Errorf("configured: %v", d)
	}
}
