package wspush

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"unicode/utf8"
)

func FuzzParseStatus(f *testing.F) {
	// What the Go client (SendStatus) and the browser player (JSON.stringify) send.
	for _, s := range []Status{{Buffer: 1.5, Latency: 0.8}, {Buffer: 0}, {Buffer: 29.96, Latency: 1e-3}} {
		s.Type = "status"
		b, err := json.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{`{"type":"status","buffer":3.2417,"latency":0}`, `{"type":"status","buffer":0,"latency":-0.25}`,
		`{"type":"status","buffer":-1}`, `{"type":"status","buffer":1e309}`, `{"type":"start"}`, `{"type":"status","x":1}`,
		`{"type":"status","buffer":1} {}`, "{\"type\":\"\xff\xfe\"}", `null`, `nope`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStatus(b)
		if err != nil {
			if !errors.Is(err, ErrStart) {
				t.Fatalf("error %v does not wrap ErrStart", err)
			}
			// The session closes with the message as the reason: it must be UTF-8.
			if !utf8.ValidString(err.Error()) {
				t.Fatalf("reason %q is not UTF-8", err.Error())
			}
			return
		}
		if s.Type != "status" || !(s.Buffer >= 0) || math.IsInf(s.Buffer, 0) || math.IsNaN(s.Latency) || math.IsInf(s.Latency, 0) {
			t.Fatalf("accepted %+v", s)
		}
		// What parses re-encodes and parses to the same status.
		enc, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := ParseStatus(enc)
		if err != nil || s2 != s {
			t.Fatalf("round trip of %s: %+v, %v", enc, s2, err)
		}
	})
}
