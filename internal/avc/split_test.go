package avc

import (
	"bytes"
	"encoding/binary"
	"testing"

	mp4avc "github.com/Eyevinn/mp4ff/avc"
)

// toAVCC turns NAL units into an AVCC sample with 4-byte lengths (a CMAF sample).
func toAVCC(nals [][]byte) []byte {
	var b []byte
	for _, n := range nals {
		b = binary.BigEndian.AppendUint32(b, uint32(len(n)))
		b = append(b, n...)
	}
	return b
}

func TestSplitRealX264(t *testing.T) {
	for _, v := range x264Variants {
		t.Run(v.name, func(t *testing.T) {
			stream := x264Fixture(t, v)
			nals := mp4avc.ExtractNalusFromByteStream(stream)
			// Through the AVCC path a CMAF sample takes.
			got, err := SampleNALs(toAVCC(nals), 4)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(nals) {
				t.Fatalf("SampleNALs: %d NAL units, want %d", len(got), len(nals))
			}
			ps := NewParameterSets()
			for _, n := range nals {
				if err := ps.Add(n); err != nil {
					t.Fatal(err)
				}
			}
			if ps.CABAC() != v.cabac {
				t.Fatalf("CABAC() = %v, want %v", ps.CABAC(), v.cabac)
			}
			for _, bp := range []int{0, 25, 50, 100} {
				var tcp, udp, total, slices, intra, inter, firstMBs int
				seen := map[uint32]bool{}
				for i, n := range nals {
					k, err := ps.Split(n, bp)
					if err != nil {
						t.Fatalf("NAL %d (%v): %v", i, Type(n), err)
					}
					if k < 1 || k > len(n) {
						t.Fatalf("NAL %d: split at %d of %d", i, k, len(n))
					}
					// Every byte goes exactly one way, and the two ways put together
					// are the NAL unit again.
					if !bytes.Equal(append(bytes.Clone(n[:k]), n[k:]...), n) {
						t.Fatal("parts do not rebuild the NAL unit")
					}
					tcp += k
					udp += len(n) - k
					total += len(n)
					if !Type(n).IsSlice() {
						if k != len(n) {
							t.Fatalf("NAL %d (%v): non-slice split at %d of %d", i, Type(n), k, len(n))
						}
						continue
					}
					slices++
					s, err := ps.Slice(n)
					if err != nil {
						t.Fatal(err)
					}
					full, _ := mp4avc.ParseSliceHeader(n, ps.sps, ps.pps)
					seen[full.FirstMBInSlice] = true
					if full.FirstMBInSlice > 0 {
						firstMBs++
					}
					// The critical part alone holds the whole header.
					head, err := mp4avc.ParseSliceHeader(n[:s.HeaderSize], ps.sps, ps.pps)
					if err != nil {
						t.Fatalf("header from the TCP part alone: %v", err)
					}
					if !ps.HeaderComplete(n[:s.HeaderSize]) || ps.HeaderComplete(n[:s.HeaderSize-1]) {
						t.Fatalf("HeaderComplete wrong at the header's end (%d bytes)", s.HeaderSize)
					}
					if *head != *full {
						t.Fatalf("header from the TCP part differs:\n%+v\n%+v", head, full)
					}
					switch {
					case s.Intra:
						intra++
						data := len(n) - s.HeaderSize
						want := s.HeaderSize + (data*bp+99)/100
						if k != want {
							t.Fatalf("intra slice at BP %d: split %d, want %d", bp, k, want)
						}
						if bp == 100 && k != len(n) {
							t.Fatal("BP 100 left intra data for UDP")
						}
					default:
						inter++
						if k != s.HeaderSize {
							t.Fatalf("inter slice: split %d, want header %d", k, s.HeaderSize)
						}
					}
					if bp == 0 && k != s.HeaderSize {
						t.Fatalf("BP 0: split %d, want header %d", k, s.HeaderSize)
					}
				}
				if tcp+udp != total {
					t.Fatalf("bytes: tcp %d + udp %d vs %d", tcp, udp, total)
				}
				if len(seen) != 4 || intra == 0 || inter == 0 || udp == 0 {
					t.Fatalf("fixture: %d slice positions (want 4), %d intra, %d inter slices, %d UDP bytes", len(seen), intra, inter, udp)
				}
				t.Logf("BP %3d: %d slices (%d intra), TCP %d bytes (%.1f%%), UDP %d", bp, slices, intra, tcp, 100*float64(tcp)/float64(total), udp)
			}
		})
	}
}

func TestSplitRejects(t *testing.T) {
	ps := NewParameterSets()
	if _, err := ps.Split([]byte{0x65, 0x88, 0x84}, 50); err == nil {
		t.Fatal("slice without its PPS: no error")
	}
	if _, err := ps.Split(nil, 50); err == nil {
		t.Fatal("empty NAL: no error")
	}
	if _, err := ps.Split([]byte{0x06, 1}, 101); err == nil {
		t.Fatal("BP 101: no error")
	}
	for _, s := range [][]byte{{0, 0, 0, 9, 1}, {0, 0}, {0, 0, 0, 1, 0x80}, {0, 0, 0, 0}} {
		if _, err := SampleNALs(s, 4); err == nil {
			t.Fatalf("SampleNALs(%x): no error", s)
		}
	}
}
