package wspush

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// feedable is a channel fed by the test, with the media of the looped channel's
// segments from..from+count-1 to feed it.
type feedable struct {
	ch    *hub.Channel
	video *media.Track
	audio *media.Track
	segs  map[string][]*media.Segment
}

func newFeedable(t *testing.T, o *origin, name string, count int) *feedable {
	t.Helper()
	now := time.Now()
	latest, ok := o.channel.Latest(now)
	if !ok || latest < uint64(count)+2 {
		t.Fatalf("looped channel latest %d %v", latest, ok)
	}
	from := latest - uint64(count) - 1
	info := o.channel.Info()
	f := &feedable{video: info.Tracks[0], audio: info.TracksOf(media.Audio)[0], segs: map[string][]*media.Segment{}}
	inits := map[string][]byte{}
	for _, tr := range []*media.Track{f.video, f.audio} {
		b, err := o.channel.Init(tr.ID)
		if err != nil {
			t.Fatal(err)
		}
		inits[tr.ID] = b
		for n := from; n < from+uint64(count); n++ {
			s, err := o.channel.Segment(tr.ID, n, now)
			if err != nil || len(s.Chunks) < 3 {
				t.Fatalf("%s segment %d: %v", tr.ID, n, err)
			}
			f.segs[tr.ID] = append(f.segs[tr.ID], s)
		}
	}
	var err error
	f.ch, err = hub.NewChannel(hub.ChannelConfig{
		Info:     &media.Stream{Name: name, SegmentDuration: info.SegmentDuration, Tracks: []*media.Track{f.video, f.audio}},
		Inits:    inits,
		Timeline: o.channel.Timeline(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.hub.AddChannel(context.Background(), f.ch, nil); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *feedable) add(t *testing.T, tr *media.Track, i, from, to int) {
	t.Helper()
	s := f.segs[tr.ID][i]
	for c := from; c < to; c++ {
		if err := f.ch.AppendChunk(tr.ID, s.Number, s.Chunks[c], false); err != nil {
			t.Fatalf("%s segment %d chunk %d: %v", tr.ID, s.Number, c, err)
		}
	}
}

func (f *feedable) bytes(tr *media.Track, i int) []byte {
	var b bytes.Buffer
	for _, c := range f.segs[tr.ID][i].Chunks {
		b.Write(c.Data)
	}
	return b.Bytes()
}

// A source that appends in bursts (a relay filling a gap, an encoder posting whole
// segments) overflows a session's hub queue; the events only announce chunks that
// the channel stores, so the session sends them from the store instead of skipping.
// A viewer that joins before any segment is complete starts at the one in progress.
func TestBurstBeyondSubscriptionSentFromStore(t *testing.T) {
	o := newOrigin(t, 40*time.Millisecond, Options{SubscriptionCapacity: 4, QueueLimit: time.Minute})
	f := newFeedable(t, o, "burst", 4)
	f.add(t, f.video, 0, 0, 1)
	f.add(t, f.audio, 0, 0, 1)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, o.wsURL("/ws/burst"), DialOptions{Start: Start{Policy: PolicyFixed, Tracks: []string{f.video.ID, f.audio.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if want := f.segs[f.video.ID][0].Number; c.Ready.Base != want {
		t.Fatalf("ready base %d, want the segment in progress %d (no segment is complete yet)", c.Ready.Base, want)
	}
	asm := NewAssembler(&c.Ready)
	got := map[string][][]byte{}
	read := func(until func() bool) {
		for !until() {
			m, err := c.Next(ctx)
			if err != nil {
				t.Fatalf("after %d video and %d audio segments: %v", len(got[f.video.ID]), len(got[f.audio.ID]), err)
			}
			if m.Type == "skip" {
				t.Fatalf("the session skipped: %s", m.Text)
			}
			if m.Frame == nil || m.Frame.Kind != KindChunk {
				continue
			}
			done, err := asm.AddAll(m.Frame, m.At)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range done {
				got[s.Track.ID] = append(got[s.Track.ID], s.Data)
			}
		}
	}
	// Wait for the first chunks (the session has subscribed), then the burst: the
	// rest of segment 0, segments 1 and 2 whole and segment 3's first chunk, far
	// beyond the queue of 4; then segment 3 at the pace of a live source (the
	// events that tell the session what it missed).
	seen := 0
	read(func() bool { seen++; return seen > 2 })
	for i := range 4 {
		for _, tr := range []*media.Track{f.video, f.audio} {
			from, to := 0, len(f.segs[tr.ID][i].Chunks)
			if i == 0 {
				from = 1
			}
			if i == 3 {
				to = 1
			}
			f.add(t, tr, i, from, to)
		}
	}
	go func() {
		for c := 1; c < len(f.segs[f.video.ID][3].Chunks); c++ {
			time.Sleep(40 * time.Millisecond)
			for _, tr := range []*media.Track{f.video, f.audio} {
				if c < len(f.segs[tr.ID][3].Chunks) {
					s := f.segs[tr.ID][3]
					_ = f.ch.AppendChunk(tr.ID, s.Number, s.Chunks[c], false)
				}
			}
		}
	}()
	read(func() bool { return len(got[f.video.ID]) >= 3 && len(got[f.audio.ID]) >= 3 })
	for _, tr := range []*media.Track{f.video, f.audio} {
		for i := range 3 {
			if !bytes.Equal(got[tr.ID][i], f.bytes(tr, i)) {
				t.Errorf("%s segment %d: %d bytes sent, %d stored", tr.ID, i, len(got[tr.ID][i]), len(f.bytes(tr, i)))
			}
		}
	}
}

// A relay session sends every track, each from its init, and the media of each
// byte for byte; an on-demand asset cannot be relayed.
func TestRelaySession(t *testing.T) {
	o := newOrigin(t, 40*time.Millisecond, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, o.wsURL("/ws/live"), DialOptions{Start: Start{Relay: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	info := o.channel.Info()
	if len(c.Ready.Tracks) != len(info.Tracks) {
		t.Fatalf("ready lists %d tracks, the channel has %d", len(c.Ready.Tracks), len(info.Tracks))
	}
	asm := NewAssembler(&c.Ready)
	inits, segs := map[string]bool{}, map[string]int{}
	for len(segs) < len(info.Tracks) {
		m, err := c.Next(ctx)
		if err != nil {
			t.Fatalf("inits %v, segments %v: %v", inits, segs, err)
		}
		if m.Frame == nil {
			continue
		}
		id := c.Ready.Tracks[m.Frame.Track].ID
		if m.Frame.Kind == KindInit {
			inits[id] = true
			want, _ := o.channel.Init(id)
			if !bytes.Equal(m.Frame.Payload, want) {
				t.Errorf("track %s: init differs", id)
			}
			continue
		}
		if !inits[id] {
			t.Fatalf("track %s: a chunk before its init", id)
		}
		done, err := asm.AddAll(m.Frame, m.At)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range done {
			want, err := o.channel.Segment(id, s.Number, o.channel.Now())
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			for _, ch := range want.Chunks {
				b.Write(ch.Data)
			}
			if !bytes.Equal(b.Bytes(), s.Data) {
				t.Errorf("track %s segment %d differs from the channel's", id, s.Number)
			}
			segs[id]++
		}
	}

	_, err = Dial(ctx, o.wsURL("/ws/vod/test"), DialOptions{Start: Start{Relay: true}})
	var ce *CloseError
	if !errors.As(err, &ce) || ce.Code != ClosePolicy {
		t.Fatalf("relay of an asset: %v, want close %d", err, ClosePolicy)
	}
}
