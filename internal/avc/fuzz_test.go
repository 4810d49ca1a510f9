package avc

import (
	"encoding/hex"
	"testing"
)

// Parameter sets and slice starts of the CAVLC fixture (x264, 320x240, 4 slices).
const (
	seedSPS = "6742c014da0507ec0440000003004000000c83c50aa8"
	seedPPS = "68ce3c80"
	seedIDR = "65888411f1088ac181087e02ea4001d57f80072ccd1146835377fb02a0a4cb37c5bfc05113914e0f"
	seedP   = "419a2047f3c2000475a420b3200126918f28ab10c05087868a8d000cce8b41318187f051894301c7"
)

func seedSets(t testing.TB) *ParameterSets {
	ps := NewParameterSets()
	for _, h := range []string{seedSPS, seedPPS} {
		b, _ := hex.DecodeString(h)
		if err := ps.Add(b); err != nil {
			t.Fatal(err)
		}
	}
	return ps
}

// FuzzSample feeds outside bytes through the path a CMAF sample takes: AVCC
// lengths, parameter sets, slice headers, the split. No input may panic, and a
// split is always inside its NAL unit.
func FuzzSample(f *testing.F) {
	for _, h := range []string{seedIDR, seedP, seedSPS, seedPPS} {
		b, _ := hex.DecodeString(h)
		f.Add(toAVCC([][]byte{b}), uint8(50))
	}
	f.Add([]byte{0, 0, 0, 1, 0x65}, uint8(0))
	f.Add([]byte{0, 0, 0, 2, 0x41, 0xff}, uint8(100))
	f.Fuzz(func(t *testing.T, sample []byte, bp uint8) {
		ps := seedSets(t)
		nals, err := SampleNALs(sample, 4)
		if err != nil {
			return
		}
		for _, n := range nals {
			_ = ps.Add(n)
			k, err := ps.Split(n, int(bp)%101)
			if err == nil && (k < 1 || k > len(n)) {
				t.Fatalf("split at %d of %d", k, len(n))
			}
			_ = ps.HeaderComplete(n[:len(n)/2])
		}
	})
}
