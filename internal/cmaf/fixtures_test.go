package cmaf

import (
	"bytes"
	"testing"

	"github.com/Eyevinn/mp4ff/mp4"
)

// synthSamples returns n samples of duration dur with a keyframe every gop samples
// (every sample when gop is 0, like audio) and deterministic, distinct payloads.
func synthSamples(n, gop int, dur uint32, seed byte) []Sample {
	ss := make([]Sample, n)
	for i := range ss {
		size := 20 + (i*37+int(seed))%90
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(i*7 + j + int(seed))
		}
		flags := NonSyncSampleFlags
		if gop == 0 || i%gop == 0 {
			flags = SyncSampleFlags
		}
		ss[i] = Sample{Duration: dur, Size: uint32(size), Flags: flags, Data: data}
	}
	return ss
}

// mp4ffSegment encodes a media segment with mp4ff (whose tfdt is version 0 for times
// below 2^32): optional styp, then one fragment per group of samples.
func mp4ffSegment(t testing.TB, withStyp bool, seq uint32, start uint64, groups ...[]Sample) []byte {
	t.Helper()
	seg := mp4.NewMediaSegmentWithoutStyp()
	if withStyp {
		seg = mp4.NewMediaSegment()
	}
	tm := start
	for g, ss := range groups {
		frag, err := mp4.CreateFragment(seq+uint32(g), 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			frag.AddFullSample(mp4.FullSample{
				Sample:     mp4.Sample{Flags: s.Flags, Dur: s.Duration, Size: s.Size, CompositionTimeOffset: s.CompositionTimeOffset},
				DecodeTime: tm,
				Data:       s.Data,
			})
			tm += uint64(s.Duration)
		}
		seg.AddFragment(frag)
	}
	var buf bytes.Buffer
	if err := seg.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ownSegment encodes a segment with AppendFragment (tfdt version 1).
func ownSegment(t testing.TB, seq uint32, start uint64, groups ...[]Sample) []byte {
	t.Helper()
	b := StypBox()
	tm := start
	for g, ss := range groups {
		var err error
		if b, err = AppendFragment(b, seq+uint32(g), 1, tm, ss); err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			tm += uint64(s.Duration)
		}
	}
	return b
}

// decoded is what mp4ff reads back from a media segment.
type decoded struct {
	seqs    []uint32
	tfdts   []uint64
	tfdtVer []byte
	samples []mp4.FullSample
}

func decodeWithMp4ff(t testing.TB, b []byte) decoded {
	t.Helper()
	f, err := mp4.DecodeFile(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("mp4ff cannot decode: %v", err)
	}
	var d decoded
	for _, seg := range f.Segments {
		for _, frag := range seg.Fragments {
			d.seqs = append(d.seqs, frag.Moof.Mfhd.SequenceNumber)
			d.tfdts = append(d.tfdts, frag.Moof.Traf.Tfdt.BaseMediaDecodeTime())
			d.tfdtVer = append(d.tfdtVer, frag.Moof.Traf.Tfdt.Version)
			fs, err := frag.GetFullSamples(nil)
			if err != nil {
				t.Fatalf("mp4ff samples: %v", err)
			}
			d.samples = append(d.samples, fs...)
		}
	}
	var enc bytes.Buffer
	if err := f.Encode(&enc); err != nil {
		t.Fatalf("mp4ff re-encode: %v", err)
	}
	// Box sizes must add up: mp4ff computes sizes from content when it re-encodes.
	if !bytes.Equal(enc.Bytes(), b) {
		t.Errorf("mp4ff re-encodes %d bytes differently from the %d given: box sizes inconsistent", enc.Len(), len(b))
	}
	return d
}
