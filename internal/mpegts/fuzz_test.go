package mpegts

import (
	"bytes"
	"testing"
)

// FuzzAudioConfig: any AudioSpecificConfig bytes (they come from the server) give
// a config ADTS can carry or an error, never a panic, and a writer with an
// accepted config writes whole packets.
func FuzzAudioConfig(f *testing.F) {
	for _, s := range [][]byte{{0x12, 0x10}, {0x11, 0x90}, {0xF8, 0x10}, {}, {0xFF, 0xFF, 0xFF}} {
		f.Add(s, []byte{1, 2, 3})
	}
	f.Fuzz(func(t *testing.T, asc, frame []byte) {
		c, err := ParseAudioSpecificConfig(asc)
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := NewWriter(&b, &c).WriteAudio(90000, frame); err != nil {
			return
		}
		if b.Len()%packetSize != 0 || b.Bytes()[0] != 0x47 {
			t.Fatalf("%d bytes", b.Len())
		}
	})
}
