package fdsp

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

// firstSubstream reads the test asset's first 2 s substream.
func firstSubstream(t *testing.T) (*substream, *mediaReader) {
	t.Helper()
	h := testAsset(t)
	st, err := h.Stream("asset", false)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := newMediaReader(st, "", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := rd.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ss, rd
}

// TestRemuxReorderDuplicate sends a substream's datagrams through the parser
// shuffled, with every fifth one twice: each access unit is rebuilt byte for byte.
// With one datagram dropped its NAL unit ends at the gap and the others are whole.
func TestRemuxReorderDuplicate(t *testing.T) {
	ss, rd := firstSubstream(t)
	for _, mode := range []Mode{ModeFDSP, ModeUDP} {
		hdr, aus := plan(ss, rd.ps, mode, 50, 42)
		var all [][]byte
		for _, a := range aus {
			all = append(all, a.datagrams...)
		}
		if int(hdr.UDPPackets) != len(all) || len(all) == 0 {
			t.Fatalf("%v: header says %d packets, planned %d", mode, hdr.UDPPackets, len(all))
		}
		for i := 0; i < len(all); i += 5 {
			all = append(all, all[i])
		}
		rng := rand.New(rand.NewPCG(1, 2))
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		frags := map[uint16]Fragment{}
		dups := 0
		for _, d := range all {
			f, err := ParseRTP(d)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := frags[f.Seq]; ok {
				dups++
				continue
			}
			frags[f.Seq] = f
		}
		if dups == 0 {
			t.Fatal("no duplicates sent")
		}
		for i, a := range aus {
			nals, got, whole := assemble(a.au, frags)
			if !whole || got != len(a.datagrams) {
				t.Fatalf("%v AU %d: whole %v, %d of %d packets", mode, i, whole, got, len(a.datagrams))
			}
			for j := range nals {
				if !bytes.Equal(nals[j], ss.aus[i].nals[j]) {
					t.Fatalf("%v AU %d NAL %d differs", mode, i, j)
				}
			}
		}
		// Drop the middle datagram of the largest access unit.
		big := 0
		for i := range aus {
			if len(aus[i].datagrams) > len(aus[big].datagrams) {
				big = i
			}
		}
		a := aus[big]
		if len(a.datagrams) < 3 {
			t.Fatalf("largest AU has %d datagrams", len(a.datagrams))
		}
		drop := a.au.FirstSeq + uint16(len(a.datagrams)/2)
		lost := frags[drop]
		delete(frags, drop)
		nals, got, whole := assemble(a.au, frags)
		if whole || got != len(a.datagrams)-1 {
			t.Fatalf("with a loss: whole %v, got %d of %d", whole, got, len(a.datagrams))
		}
		orig := ss.aus[big].nals[lost.NAL]
		if cut := nals[lost.NAL]; int(lost.Offset) != len(cut) || !bytes.Equal(cut, orig[:len(cut)]) {
			t.Fatalf("NAL cut at %d, want at the lost fragment's offset %d", len(cut), lost.Offset)
		}
	}
}

// TestPlanEveryByteOnce checks the split at the transport's level: the critical
// parts and the datagrams' bytes add up to the NAL units in every mode and BP.
func TestPlanEveryByteOnce(t *testing.T) {
	ss, rd := firstSubstream(t)
	var total int
	for _, a := range ss.aus {
		for _, n := range a.nals {
			total += len(n)
		}
	}
	for _, tc := range []struct {
		mode Mode
		bp   int
	}{{ModeFDSP, 0}, {ModeFDSP, 50}, {ModeFDSP, 100}, {ModeTCP, 0}, {ModeUDP, 0}} {
		_, aus := plan(ss, rd.ps, tc.mode, tc.bp, 1)
		var tcp, udp int
		for _, a := range aus {
			for _, n := range a.au.NALs {
				tcp += len(n.Critical)
			}
			for _, d := range a.datagrams {
				f, err := ParseRTP(d)
				if err != nil {
					t.Fatal(err)
				}
				udp += len(f.Data) // an FU-A start's rebuilt header byte counts once, here
			}
		}
		if tcp+udp != total {
			t.Fatalf("%v BP %d: TCP %d + UDP %d != %d", tc.mode, tc.bp, tcp, udp, total)
		}
		switch {
		case tc.mode == ModeTCP && udp != 0, tc.mode == ModeUDP && tcp != 0:
			t.Fatalf("%v: TCP %d UDP %d", tc.mode, tcp, udp)
		}
		t.Logf("%v BP %3d: TCP %6d bytes (%4.1f%%), UDP %6d", tc.mode, tc.bp, tcp, 100*float64(tcp)/float64(total), udp)
	}
}
