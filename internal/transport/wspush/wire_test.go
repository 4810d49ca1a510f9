package wspush

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, seq := range []uint64{0, 1, 127, 128, 16383, 16384, 1 << 32, math.MaxUint64} {
		for _, k := range []Kind{KindInit, KindChunk} {
			start, end := k == KindChunk, k == KindChunk && seq%2 == 0
			b := AppendHeader(nil, k, start, end, 7, seq)
			if len(b) != HeaderLen(seq) {
				t.Errorf("seq %d: header %d bytes, HeaderLen %d", seq, len(b), HeaderLen(seq))
			}
			f, err := ParseFrame(append(b, "payload"...))
			if err != nil {
				t.Fatalf("seq %d: %v", seq, err)
			}
			if f.Kind != k || f.Start != start || f.End != end || f.Track != 7 || f.Sequence != seq || string(f.Payload) != "payload" {
				t.Errorf("seq %d: parsed %+v", seq, f)
			}
		}
	}
	// The common case is three bytes: kind, track, a one-byte sequence.
	if n := HeaderLen(5); n != 3 {
		t.Errorf("HeaderLen(5) = %d, want 3", n)
	}
}

func TestParseFrameRejects(t *testing.T) {
	tests := map[string][]byte{
		"short":          {2, 0},
		"unknown kind":   {3, 0, 0},
		"zero kind":      {0, 0, 0},
		"unknown flag":   {0x42, 0, 0},
		"flags on init":  {0x11, 0, 0},
		"varint overrun": {2, 0, 0x80, 0x80},
	}
	for name, b := range tests {
		if _, err := ParseFrame(b); !errors.Is(err, ErrFrame) {
			t.Errorf("%s: %v, want ErrFrame", name, err)
		}
	}
}

func TestWSFrameHeaderLen(t *testing.T) {
	for n, want := range map[int]int{0: 2, 125: 2, 126: 4, 65535: 4, 65536: 10, 1 << 30: 10} {
		if got := WSFrameHeaderLen(n); got != want {
			t.Errorf("WSFrameHeaderLen(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestParseStart(t *testing.T) {
	tests := []struct {
		msg  string
		want Start
		err  string
	}{
		{msg: `{"type":"start"}`, want: Start{Type: "start"}},
		{msg: `{"type":"start","at":"live"}`, want: Start{Type: "start"}},
		{msg: `{"type":"start","at":null}`, want: Start{Type: "start"}},
		{msg: `{"type":"start","at":12.5,"maxBitrate":800000,"codecs":["avc1","mp4a.40.2"],"policy":"tcp","tracks":["v360"],"stats":true}`,
			want: Start{Type: "start", At: AtSeconds(12.5), MaxBitrate: 800000, Codecs: []string{"avc1", "mp4a.40.2"}, Policy: "tcp", Tracks: []string{"v360"}, Stats: true}},
		{msg: `{"type":"start","at":-6}`, want: Start{Type: "start", At: AtSeconds(-6)}},
		{msg: ` {"type":"start"} `, want: Start{Type: "start"}},
		{msg: ``, err: "EOF"},
		{msg: `[]`, err: "cannot unmarshal"},
		{msg: `{"type":"start"}{}`, err: "trailing"},
		{msg: `{"type":"stop"}`, err: `type "stop"`},
		{msg: `{"type":"start","at":"now"}`, err: `"at"`},
		{msg: `{"type":"start","at":1e999}`, err: `"at"`},
		{msg: `{"type":"start","codecs":[""]}`, err: "not a codec"},
		{msg: `{"type":"start","codecs":["avc1, mp4a"]}`, err: "not a codec"},
		{msg: `{"type":"start","tracks":["../x"]}`, err: "not a track"},
		{msg: `{"type":"start","maxBitrate":1.5}`, err: "cannot unmarshal"},
		{msg: `{"type":"start","extra":1}`, err: "unknown field"},
		{msg: "{\"type\":\"start\",\"policy\":\"\xff\"}", err: "UTF-8"},
		{msg: `{"type":"start","codecs":[` + strings.Repeat(`"a",`, 16) + `"a"]}`, err: "17 codecs"},
		{msg: `{"type":"start","policy":"` + strings.Repeat("p", 33) + `"}`, err: "too long"},
		{msg: `{"type":"start","codecs":["` + strings.Repeat("a", MaxStartLen) + `"]}`, err: "limit 4096"},
	}
	for _, tt := range tests {
		got, err := ParseStart([]byte(tt.msg))
		if tt.err != "" {
			if err == nil || !errors.Is(err, ErrStart) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseStart(%.60q) = %v, want an ErrStart with %q", tt.msg, err, tt.err)
			}
			if err != nil && len(err.Error()) > CloseReasonMaxLen {
				t.Errorf("ParseStart(%.60q): reason %d bytes, too long for a close frame", tt.msg, len(err.Error()))
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseStart(%q): %v", tt.msg, err)
			continue
		}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(tt.want)
		if !bytes.Equal(a, b) {
			t.Errorf("ParseStart(%q) = %s, want %s", tt.msg, a, b)
		}
	}
}

func TestParseStatus(t *testing.T) {
	if s, err := ParseStatus([]byte(`{"type":"status","buffer":1.5,"latency":0.8}`)); err != nil || s.Buffer != 1.5 {
		t.Errorf("status: %+v %v", s, err)
	}
	for _, m := range []string{`{"type":"start"}`, `{"type":"status","buffer":-1}`, `{"type":"status","x":1}`, `nope`} {
		if _, err := ParseStatus([]byte(m)); !errors.Is(err, ErrStart) {
			t.Errorf("ParseStatus(%s) = %v, want ErrStart", m, err)
		}
	}
}

func TestAssemblerDropsTornSegments(t *testing.T) {
	r := &Ready{Base: 100, Tracks: []TrackInfo{{Index: 0, ID: "v"}}}
	a := NewAssembler(r)
	add := func(start, end bool, seq uint64, p string) *Segment {
		t.Helper()
		b := AppendHeader(nil, KindChunk, start, end, 0, seq)
		f, err := ParseFrame(append(b, p...))
		if err != nil {
			t.Fatal(err)
		}
		s, err := a.Add(&f, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	add(true, false, 0, "a")
	add(false, false, 1, "b")
	if s := add(false, true, 2, "c"); s == nil || string(s.Data) != "abc" || s.Number != 100 || s.Chunks != 3 {
		t.Fatalf("segment %+v", s)
	}
	add(true, false, 1, "d")
	if s := add(false, true, 2, "e"); s != nil { // chunk 1 missing
		t.Fatalf("a torn segment was assembled: %+v", s)
	}
	if s := add(false, true, 3, "f"); s != nil {
		t.Fatal("a chunk without its segment start was assembled")
	}
	if s := add(true, true, 2, "g"); s == nil || s.Number != 102 || string(s.Data) != "g" {
		t.Fatalf("one-chunk segment %+v", s)
	}
	if _, err := a.Add(&Frame{Kind: KindChunk, Track: 1}, time.Now()); err == nil {
		t.Error("a frame of an unknown track was accepted")
	}
}

// A source that learns a segment's end only when the next begins (an encoder's
// ingest) sends no end flag: the next segment's start completes it.
func TestAssemblerStartCompletesThePreviousSegment(t *testing.T) {
	r := &Ready{Base: 10, Tracks: []TrackInfo{{Index: 0, ID: "v"}, {Index: 1, ID: "a"}}}
	a := NewAssembler(r)
	add := func(track uint8, start, end bool, seq uint64, p string) []*Segment {
		t.Helper()
		f, err := ParseFrame(append(AppendHeader(nil, KindChunk, start, end, track, seq), p...))
		if err != nil {
			t.Fatal(err)
		}
		done, err := a.AddAll(&f, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return done
	}
	if d := add(0, true, false, 0, "a"); len(d) != 0 {
		t.Fatalf("an open segment was delivered: %+v", d)
	}
	add(0, false, false, 1, "b")
	if d := add(1, true, false, 0, "x"); len(d) != 0 {
		t.Fatal("another track's start completed a video segment")
	}
	d := add(0, true, false, 1, "c")
	if len(d) != 1 || string(d[0].Data) != "ab" || d[0].Number != 10 || d[0].Chunks != 2 {
		t.Fatalf("the next start did not complete segment 10: %+v", d)
	}
	d = add(0, true, true, 2, "e") // completes 11, and is a whole segment itself
	if len(d) != 2 || string(d[0].Data) != "c" || d[0].Number != 11 || string(d[1].Data) != "e" || d[1].Number != 12 {
		t.Fatalf("start+end after an open segment: %+v", d)
	}
}

func FuzzParseStart(f *testing.F) {
	for _, s := range []string{`{"type":"start"}`, `{"type":"start","at":3.5,"codecs":["avc1"],"tracks":["v1"],"policy":"tcp","maxBitrate":1}`,
		`{"type":"start","at":"live"}`, `{"type":"start","at":-1e308}`, `{"type":"start","stats":true}`, `{}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStart(b)
		if err != nil {
			if !errors.Is(err, ErrStart) {
				t.Fatalf("error %v does not wrap ErrStart", err)
			}
			return
		}
		// What parses re-encodes and parses to the same start.
		enc, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := ParseStart(enc)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", enc, err)
		}
		enc2, _ := json.Marshal(s2)
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip: %s then %s", enc, enc2)
		}
	})
}

func FuzzParseFrame(f *testing.F) {
	f.Add(AppendHeader(nil, KindChunk, true, false, 1, 300))
	f.Add(AppendHeader(nil, KindInit, false, false, 0, 0))
	f.Add([]byte{0x32, 0, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := ParseFrame(b)
		if err != nil {
			return
		}
		// A valid frame re-encodes to a header no longer than the one parsed.
		h := AppendHeader(nil, fr.Kind, fr.Start, fr.End, fr.Track, fr.Sequence)
		if len(h)+len(fr.Payload) > len(b) {
			t.Fatalf("re-encoded header %d + payload %d > message %d", len(h), len(fr.Payload), len(b))
		}
		r := &Ready{Tracks: make([]TrackInfo, 256)}
		a := NewAssembler(r)
		for i := 0; i < 3; i++ {
			if _, err := a.Add(&fr, time.Time{}); err != nil {
				t.Fatal(err)
			}
		}
	})
}
