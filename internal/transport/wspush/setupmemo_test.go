package wspush

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// FuzzStartMemo: the memo answers exactly what ParseStart answers, on the first
// sight of a message and on every later one, and keeps no message that failed.
func FuzzStartMemo(f *testing.F) {
	for _, s := range []string{`{"type":"start","policy":"fixed","tracks":["v180"]}`, `{"type":"start","at":3.5,"codecs":["avc1"]}`,
		`{"type":"start","at":"live","stats":true}`, `{"type":"start","maxBitrate":-1}`, `{"type":"status"}`, `{}`, `null`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var sm startMemo
		want, wantErr := ParseStart(b)
		for i := range 2 {
			got, err := sm.parse(b)
			if (err != nil) != (wantErr != nil) || err != nil && err.Error() != wantErr.Error() {
				t.Fatalf("look-up %d: error %v, ParseStart's %v", i, err, wantErr)
			}
			if err != nil && !errors.Is(err, ErrStart) {
				t.Fatalf("error %v does not wrap ErrStart", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("look-up %d: %+v, ParseStart's %+v", i, got, want)
			}
		}
		if kept := len(sm.m); (wantErr == nil) != (kept == 1) {
			t.Fatalf("%d messages kept after one that parsed: %v", kept, wantErr == nil)
		}
	})
}

// TestStartMemoIsBounded: a client sending a new start message each time never
// grows the memo past startMemoSize, and a message kept is answered from the memo
// (the same slices, not a new parse).
func TestStartMemoIsBounded(t *testing.T) {
	var sm startMemo
	for i := range 3 * startMemoSize {
		if _, err := sm.parse(fmt.Appendf(nil, `{"type":"start","tracks":["v%d"]}`, i)); err != nil {
			t.Fatal(err)
		}
		if len(sm.m) > startMemoSize {
			t.Fatalf("%d messages kept, limit %d", len(sm.m), startMemoSize)
		}
	}
	msg := []byte(`{"type":"start","tracks":["v180"]}`)
	a, _ := sm.parse(msg)
	b, _ := sm.parse(msg)
	if &a.Tracks[0] != &b.Tracks[0] {
		t.Error("the second look-up parsed again")
	}
}

// TestReadyMemo: a ready message equal to the last one gets the same bytes; one that
// differs in any field (readyEqual must know every field of Ready) is encoded anew,
// and the memo does not share its Tracks with the caller's.
func TestReadyMemo(t *testing.T) {
	base := Ready{Type: "ready", Stream: "live", Live: true, SegmentDuration: 2, AvailabilityStart: "2024-01-01T00:00:00Z",
		Tracks: []TrackInfo{{Index: 0, ID: "v180", Kind: "video", Codec: "avc1", MimeType: "video/mp4", Bandwidth: 1, Width: 2, Height: 3, Timescale: 4}},
		Base:   7, Start: 14, Policy: "fixed", Video: "v180"}
	var rm readyMemo
	first, err := rm.encode(&base)
	if err != nil {
		t.Fatal(err)
	}
	again := base
	again.Tracks = append([]TrackInfo(nil), base.Tracks...)
	if b, _ := rm.encode(&again); &b[0] != &first[0] {
		t.Error("an equal ready message was encoded again")
	}
	base.Tracks[0].Bandwidth = 99 // the caller's slice changes after encoding
	if b, _ := rm.encode(&again); &b[0] != &first[0] {
		t.Error("the memo shares its tracks with the caller")
	}
	rv := reflect.ValueOf(&again).Elem()
	for i := range rv.NumField() {
		name := rv.Type().Field(i).Name
		t.Run(name, func(t *testing.T) {
			changed := again
			changed.Tracks = append([]TrackInfo(nil), again.Tracks...)
			f := reflect.ValueOf(&changed).Elem().Field(i)
			switch f.Kind() {
			case reflect.String:
				f.SetString(f.String() + "x")
			case reflect.Bool:
				f.SetBool(!f.Bool())
			case reflect.Float64:
				f.SetFloat(f.Float() + 1)
			case reflect.Uint64:
				f.SetUint(f.Uint() + 1)
			case reflect.Slice:
				changed.Tracks[0].Height++
			default:
				t.Fatalf("field %s of kind %v: teach this test (and readyEqual) about it", name, f.Kind())
			}
			if readyEqual(&again, &changed) {
				t.Fatalf("readyEqual misses a change of %s", name)
			}
			var fresh readyMemo
			want, _ := json.Marshal(&changed)
			fresh.encode(&again)
			if got, _ := fresh.encode(&changed); string(got) != string(want) {
				t.Fatalf("after a change of %s: %s, want %s", name, got, want)
			}
		})
	}
}

// TestFanOutReadyPerJoinPoint: viewers that join the fan-out at the same segment
// with the same tracks get the same ready message (from the memo), a viewer that
// joins after the channel moved on gets its own (its base, its start), and every
// viewer's first chunk is the segment its ready names as base.
func TestFanOutReadyPerJoinPoint(t *testing.T) {
	o := newOrigin(t, 0, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := Start{Policy: PolicyFixed, Tracks: []string{"v180"}}
	dial := func() *Client {
		t.Helper()
		c, err := Dial(ctx, o.wsURL("/ws/live"), DialOptions{Start: start})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.CloseNow() })
		return c
	}
	firstChunk := func(c *Client) Frame {
		t.Helper()
		for {
			m, err := c.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if m.Frame != nil && m.Frame.Kind == KindChunk {
				return *m.Frame
			}
		}
	}
	events := o.channel.Notify(64, "v180")
	defer events.Stop()
	a, b := dial(), dial()
	if a.Ready.Base == b.Ready.Base && !reflect.DeepEqual(a.Ready, b.Ready) {
		t.Fatalf("same join point, different ready messages:\n%+v\n%+v", a.Ready, b.Ready)
	}
	// Wait until a segment newer than a's base has completed, then join again.
	for done := false; !done; {
		select {
		case ev, ok := <-events.C:
			if !ok {
				t.Fatal("the channel ended")
			}
			done = ev.Last && ev.Number > a.Ready.Base
		case <-ctx.Done():
			t.Fatal("no new segment completed")
		}
	}
	c := dial()
	if c.Ready.Base <= a.Ready.Base || c.Ready.Start <= a.Ready.Start {
		t.Fatalf("a later viewer's ready (base %d, start %v) is not after the first's (base %d, start %v)",
			c.Ready.Base, c.Ready.Start, a.Ready.Base, a.Ready.Start)
	}
	for i, cl := range []*Client{a, b, c} {
		// The first chunk's sequence is its segment number less the base: 0.
		if f := firstChunk(cl); !f.Start || f.Sequence != 0 {
			t.Errorf("viewer %d: first chunk start=%v sequence %d, want the base segment's first chunk", i, f.Start, f.Sequence)
		}
	}
}
