package cmaf

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/Eyevinn/mp4ff/aac"
	"github.com/Eyevinn/mp4ff/mp4"

	"github.com/streambed/streambed/internal/media"
)

// defaultsSegment hand-builds a fragment whose trun has only sizes: durations come
// from tfhd (when tfhdDur > 0) or else from trex, flags from trex.
func defaultsSegment(tfhdDur uint32, sizes ...uint32) []byte {
	var payload []byte
	for i, s := range sizes {
		payload = append(payload, bytes.Repeat([]byte{byte(i + 1)}, int(s))...)
	}
	tfhdFlags, tfhdSize := uint32(tfhdDefaultBaseIsMoof), 16
	if tfhdDur > 0 {
		tfhdFlags |= tfhdDefaultSampleDuration
		tfhdSize += 4
	}
	trunSize := 16 + 4 + 4*len(sizes)
	trafSize := 8 + tfhdSize + 16 + trunSize
	moofSize := 8 + 16 + trafSize
	b := appendBoxHeader(nil, "moof", moofSize)
	b = appendFullBoxHeader(b, "mfhd", 16, 0, 0)
	b = binary.BigEndian.AppendUint32(b, 5)
	b = appendBoxHeader(b, "traf", trafSize)
	b = appendFullBoxHeader(b, "tfhd", tfhdSize, 0, tfhdFlags)
	b = binary.BigEndian.AppendUint32(b, 1)
	if tfhdDur > 0 {
		b = binary.BigEndian.AppendUint32(b, tfhdDur)
	}
	b = appendFullBoxHeader(b, "tfdt", 16, 0, 0)
	b = binary.BigEndian.AppendUint32(b, 4000)
	b = appendFullBoxHeader(b, "trun", trunSize, 0, trunDataOffset|trunSampleSize)
	b = binary.BigEndian.AppendUint32(b, uint32(len(sizes)))
	b = binary.BigEndian.AppendUint32(b, uint32(moofSize+8))
	for _, s := range sizes {
		b = binary.BigEndian.AppendUint32(b, s)
	}
	b = appendBoxHeader(b, "mdat", 8+len(payload))
	return append(b, payload...)
}

func TestParseSegmentDefaults(t *testing.T) {
	trex := TrackDefaults{SampleDuration: 1024, SampleFlags: NonSyncSampleFlags}
	tests := []struct {
		name    string
		seg     []byte
		def     TrackDefaults
		wantDur uint32
		sync    bool
	}{
		{"trex duration and flags", defaultsSegment(0, 3, 5, 7), trex, 1024, false},
		{"tfhd duration overrides trex", defaultsSegment(512, 3, 5, 7), trex, 512, false},
		{"no defaults at all", defaultsSegment(0, 3, 5, 7), TrackDefaults{}, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseSegment(tc.seg, tc.def)
			if err != nil {
				t.Fatal(err)
			}
			f := p.Fragments[0]
			if f.SequenceNumber != 5 || f.TrackID != 1 || f.BaseMediaDecodeTime != 4000 || len(f.Samples) != 3 {
				t.Fatalf("got %+v", f)
			}
			for i, s := range f.Samples {
				if s.Duration != tc.wantDur || s.IsSync() != tc.sync || len(s.Data) != int(s.Size) || s.Data[0] != byte(i+1) {
					t.Errorf("sample %d: %+v", i, s)
				}
			}
			decodeWithMp4ff(t, tc.seg)
		})
	}
}

func TestParseSegmentErrors(t *testing.T) {
	good := ownSegment(t, 1, 0, synthSamples(4, 4, 512, 1))
	overrun := defaultsSegment(512, 3, 5, 7)
	// The last trun size entry, just before the mdat header, now reaches past the mdat.
	binary.BigEndian.PutUint32(overrun[bytes.Index(overrun, []byte("mdat"))-8:], 100)
	tests := []struct {
		name string
		seg  []byte
		want string
	}{
		{"empty", nil, "no moof"},
		{"text", []byte("hello, world: not boxes"), "size"},
		{"truncated", good[:len(good)-1], "size"},
		{"mdat first", append(appendBoxHeader(nil, "mdat", 8), good...), "without moof"},
		{"init", append(appendBoxHeader(nil, "ftyp", 8), good...), "init segment"},
		{"sample outside mdat", overrun, "outside the mdat"},
		{"huge sample count", func() []byte {
			b := append([]byte(nil), good...)
			i := bytes.Index(b, []byte("trun"))
			binary.BigEndian.PutUint32(b[i+8:], 0xffffffff)
			return b
		}(), "declares"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSegment(tc.seg, TrackDefaults{})
			if !errors.Is(err, media.ErrInvalidMedia) || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
				t.Fatalf("err = %v, want ErrInvalidMedia mentioning %q", err, tc.want)
			}
		})
	}
}

// Parameter sets of a 320x180 x264 stream, for init segments built in tests.
var (
	testSPS, _ = hex.DecodeString("6764000cacb40a0cfcf808800000030080000019078a1550")
	testPPS, _ = hex.DecodeString("68ef3cb0")
)

// mp4ffInit builds an init segment with mp4ff.
func mp4ffInit(t testing.TB, kind media.Kind) []byte {
	t.Helper()
	init := mp4.CreateEmptyInit()
	switch kind {
	case media.Video:
		init.AddEmptyTrack(12800, "video", "und")
		if err := init.Moov.Trak.SetAVCDescriptor("avc1", [][]byte{testSPS}, [][]byte{testPPS}, true); err != nil {
			t.Fatal(err)
		}
	case media.Audio:
		init.AddEmptyTrack(48000, "audio", "eng")
		if err := init.Moov.Trak.SetAACDescriptor(aac.AAClc, 48000); err != nil {
			t.Fatal(err)
		}
	}
	init.Moov.Mvex.Trex.DefaultSampleDuration = 1024
	var buf bytes.Buffer
	if err := init.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestParseInit(t *testing.T) {
	tests := []struct {
		kind media.Kind
		want TrackInfo
	}{
		{media.Video, TrackInfo{Kind: media.Video, Codec: "avc1.64000c", Timescale: 12800, Width: 320, Height: 180, Language: "und"}},
		{media.Audio, TrackInfo{Kind: media.Audio, Codec: "mp4a.40.2", Timescale: 48000, SampleRate: 48000, Channels: 2, Language: "eng"}},
	}
	for _, tc := range tests {
		t.Run(string(tc.kind), func(t *testing.T) {
			in, err := ParseInit(mp4ffInit(t, tc.kind))
			if err != nil {
				t.Fatal(err)
			}
			if in.Info != tc.want || in.TrackID != 1 || in.Defaults.SampleDuration != 1024 {
				t.Errorf("got %+v %+v, want %+v", in.Info, in.Defaults, tc.want)
			}
		})
	}
	for _, bad := range [][]byte{nil, []byte("garbage garbage"), mp4ffInit(t, media.Video)[:100], ownSegment(t, 1, 0, synthSamples(2, 1, 1, 1))} {
		if _, err := ParseInit(bad); !errors.Is(err, media.ErrInvalidMedia) {
			t.Errorf("ParseInit(%d bytes) err = %v, want ErrInvalidMedia", len(bad), err)
		}
	}
}
