package wspush

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// An encoder posts each track on its own request, so the hub may get video's
// segment n+1 before audio's last chunk of segment n (an AAC chunk that straddles the
// boundary). The session must still send that chunk: dropping it left a hole in the
// audio that stalled the browser at every such boundary.
func TestAudioChunkAfterNextVideoSegment(t *testing.T) {
	// The test appends faster than real time: a subscription that holds it all.
	o := newOrigin(t, 40*time.Millisecond, Options{SubscriptionCapacity: 4096, QueueLimit: time.Minute})
	now := time.Now()
	latest, ok := o.channel.Latest(now)
	if !ok || latest < 10 {
		t.Fatalf("looped channel latest %d %v", latest, ok)
	}
	k0 := latest - 8
	info := o.channel.Info()
	video, audio := info.Tracks[0], info.TracksOf(media.Audio)[0]
	inits := map[string][]byte{}
	for _, tr := range []*media.Track{video, audio} {
		b, err := o.channel.Init(tr.ID)
		if err != nil {
			t.Fatal(err)
		}
		inits[tr.ID] = b
	}
	segs := map[string][]*media.Segment{}
	for _, tr := range []*media.Track{video, audio} {
		for n := k0; n < k0+5; n++ {
			s, err := o.channel.Segment(tr.ID, n, now)
			if err != nil || len(s.Chunks) < 3 {
				t.Fatalf("%s segment %d: %v", tr.ID, n, err)
			}
			segs[tr.ID] = append(segs[tr.ID], s)
		}
	}
	// The same media in a channel fed as an encoder feeds it.
	ing, err := hub.NewChannel(hub.ChannelConfig{
		Info:     &media.Stream{Name: "ing", SegmentDuration: info.SegmentDuration, Tracks: []*media.Track{video, audio}},
		Inits:    inits,
		Timeline: o.channel.Timeline(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.hub.AddChannel(context.Background(), ing, nil); err != nil {
		t.Fatal(err)
	}
	appendErr := make(chan error, 1)
	app := func(tr *media.Track, i, c int) {
		s := segs[tr.ID][i]
		if err := ing.AppendChunk(tr.ID, s.Number, s.Chunks[c], false); err != nil {
			select {
			case appendErr <- fmt.Errorf("%s segment %d chunk %d: %w", tr.ID, s.Number, c, err):
			default:
			}
		}
	}
	all := func(tr *media.Track, i, from, to int) {
		for c := from; c < to; c++ {
			app(tr, i, c)
		}
	}
	// Segment k0 whole, and k0+1 begun, before the viewer comes.
	all(video, 0, 0, len(segs[video.ID][0].Chunks))
	all(audio, 0, 0, len(segs[audio.ID][0].Chunks))
	app(video, 1, 0)
	app(audio, 1, 0)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, o.wsURL("/ws/ing"), DialOptions{Start: Start{Policy: PolicyFixed, Tracks: []string{video.ID, audio.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	// The session has subscribed once it has sent what was stored (its catch-up):
	// from then on every chunk reaches it through the hub's events, the path under
	// test. Count the audio chunks received per segment, by the segment-start flags.
	var got []int
	seen := map[string]bool{}
	next := func() *Frame {
		m, err := c.Next(ctx)
		if err != nil {
			select {
			case err := <-appendErr:
				t.Fatalf("feeding the channel: %v", err)
			default:
			}
			t.Fatalf("after audio segments %v: %v", got, err)
		}
		if m.Frame == nil || m.Frame.Kind != KindChunk {
			return nil
		}
		id := c.Ready.Tracks[m.Frame.Track].ID
		seen[id] = true
		if id != audio.ID {
			return nil
		}
		if m.Frame.Start {
			got = append(got, 0)
		}
		if len(got) > 0 {
			got[len(got)-1]++
		}
		return m.Frame
	}
	for !seen[video.ID] || !seen[audio.ID] {
		next()
	}
	// Then segment by segment: video's rest, audio's rest but its last chunk, video's
	// next segment, and only then audio's last chunk and its next segment.
	go func() {
		for i := 1; i < 4; i++ {
			all(video, i, 1, len(segs[video.ID][i].Chunks))
			last := len(segs[audio.ID][i].Chunks) - 1
			all(audio, i, 1, last)
			app(video, i+1, 0)
			app(audio, i, last)
			app(audio, i+1, 0)
		}
	}()
	for len(got) < 4 {
		next()
	}
	for i := 0; i < 3; i++ { // segments k0+1..k0+3 are complete
		if want := len(segs[audio.ID][i+1].Chunks); got[i] != want {
			t.Errorf("audio segment %d: %d chunks sent, want %d (all: %v)", k0+1+uint64(i), got[i], want, got)
		}
	}
}
