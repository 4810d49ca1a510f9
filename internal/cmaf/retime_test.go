package cmaf

import (
	"bytes"
	"errors"
	"testing"

	"github.com/streambed/streambed/internal/media"
)

func TestRetime(t *testing.T) {
	video := synthSamples(50, 25, 512, 1)
	audio := synthSamples(94, 0, 1024, 2)
	const epoch90k = uint64(1_763_000_000) * 90000 // "now" in a 90 kHz timescale: > 2^32
	tests := []struct {
		name   string
		seg    []byte
		base   uint64
		seq    uint32
		frags  int
		starts []uint64 // expected tfdt of each fragment
	}{
		{"mp4ff v0 tfdt, one fragment, to epoch time", mp4ffSegment(t, true, 1, 0, video), epoch90k, 7, 1, []uint64{epoch90k}},
		{"mp4ff v0 tfdt, three fragments keep offsets", mp4ffSegment(t, true, 3, 25600, video[:10], video[10:30], video[30:]),
			1 << 40, 100, 3, []uint64{1 << 40, 1<<40 + 10*512, 1<<40 + 30*512}},
		{"no styp", mp4ffSegment(t, false, 1, 5000, audio), 0, 1, 1, []uint64{0}},
		{"own v1 tfdt, backwards in time", ownSegment(t, 9, epoch90k, video[:25], video[25:]), 1024, 1, 2, []uint64{1024, 1024 + 25*512}},
		{"audio, same time", ownSegment(t, 1, 96256, audio), 96256, 2, 1, []uint64{96256}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]byte(nil), tc.seg...)
			out, err := Retime(tc.seg, tc.base, tc.seq)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(in, tc.seg) {
				t.Fatal("Retime modified its input")
			}
			before := decodeWithMp4ff(t, tc.seg)
			after := decodeWithMp4ff(t, out)
			if len(after.seqs) != tc.frags {
				t.Fatalf("%d fragments, want %d", len(after.seqs), tc.frags)
			}
			for i := range after.seqs {
				if after.seqs[i] != tc.seq+uint32(i) {
					t.Errorf("fragment %d: sequence %d, want %d", i, after.seqs[i], tc.seq+uint32(i))
				}
				if after.tfdts[i] != tc.starts[i] {
					t.Errorf("fragment %d: tfdt %d, want %d", i, after.tfdts[i], tc.starts[i])
				}
				if after.tfdtVer[i] != 1 {
					t.Errorf("fragment %d: tfdt version %d, want 1", i, after.tfdtVer[i])
				}
			}
			if len(after.samples) != len(before.samples) {
				t.Fatalf("%d samples, want %d", len(after.samples), len(before.samples))
			}
			for i := range after.samples {
				a, b := after.samples[i], before.samples[i]
				if !bytes.Equal(a.Data, b.Data) || a.Sample != b.Sample {
					t.Fatalf("sample %d changed: %+v vs %+v", i, a.Sample, b.Sample)
				}
				if a.DecodeTime-tc.base != b.DecodeTime-before.tfdts[0] {
					t.Fatalf("sample %d: decode time %d, want offset %d", i, a.DecodeTime, b.DecodeTime-before.tfdts[0])
				}
			}
			// Our own parser agrees, and retiming again is stable.
			p, err := ParseSegment(out, TrackDefaults{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Fragments[0].BaseMediaDecodeTime != tc.base {
				t.Errorf("ParseSegment tfdt %d", p.Fragments[0].BaseMediaDecodeTime)
			}
			again, err := Retime(out, tc.base, tc.seq)
			if err != nil || !bytes.Equal(again, out) {
				t.Errorf("retiming the output to the same time is not the identity (err %v)", err)
			}
		})
	}
}

func TestRetimeGrowsMoofByTfdtUpgrade(t *testing.T) {
	seg := mp4ffSegment(t, true, 1, 0, synthSamples(10, 10, 512, 3), synthSamples(10, 10, 512, 4))
	out, err := Retime(seg, 1<<33, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(out)-len(seg), 2*4; got != want {
		t.Errorf("output is %d bytes longer, want %d (two tfdt v0→v1)", got, want)
	}
}

func TestRetimeErrors(t *testing.T) {
	good := mp4ffSegment(t, true, 1, 0, synthSamples(5, 5, 512, 1))
	moofOnly := good[:bytes.Index(good, []byte("mdat"))-4]
	tests := []struct {
		name string
		seg  []byte
	}{
		{"empty", nil},
		{"garbage", []byte("this is not an mp4 file at all, just text")},
		{"truncated", good[:len(good)-3]},
		{"moof without mdat", moofOnly},
		{"styp only", StypBox()},
		{"init segment", append(append([]byte{0, 0, 0, 8}, "ftyp"...), good...)},
		{"backwards fragments", append(mp4ffSegment(t, false, 1, 5000, synthSamples(2, 1, 10, 1)),
			mp4ffSegment(t, false, 2, 100, synthSamples(2, 1, 10, 1))...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Retime(tc.seg, 0, 1)
			if !errors.Is(err, media.ErrInvalidMedia) {
				t.Fatalf("err = %v, want ErrInvalidMedia", err)
			}
		})
	}
}
