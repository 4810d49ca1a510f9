package ingest

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"testing"
	"time"

	"github.com/Eyevinn/mp4ff/aac"
	"github.com/Eyevinn/mp4ff/mp4"

	"github.com/streambed/streambed/internal/cmaf"
)

// The SPS and PPS of a 320x180 x264 stream, so tests build a real avc1 header.
var (
	testSPS, _ = hex.DecodeString("6742c00dda05067e7c0440000003004000000c83c50aa8")
	testPPS, _ = hex.DecodeString("68ce3c80")
)

const (
	videoTimescale = 12800 // FFmpeg's for 25 fps
	frameTicks     = 512   // 40 ms
	audioTimescale = 48000
	aacFrame       = 1024
)

// videoHeader is a CMAF header of an H.264 track; with btrt when bitrate > 0.
func videoHeader(t testing.TB, bitrate uint32) []byte {
	t.Helper()
	init := mp4.CreateEmptyInit()
	init.AddEmptyTrack(videoTimescale, "video", "und")
	if err := init.Moov.Trak.SetAVCDescriptor("avc1", [][]byte{testSPS}, [][]byte{testPPS}, true); err != nil {
		t.Fatal(err)
	}
	if bitrate > 0 {
		init.Moov.Trak.Mdia.Minf.Stbl.Stsd.AvcX.AddChild(&mp4.BtrtBox{MaxBitrate: bitrate, AvgBitrate: bitrate})
	}
	return encodeInit(t, init)
}

// audioHeader is a CMAF header of an AAC-LC track at 48 kHz.
func audioHeader(t testing.TB) []byte {
	t.Helper()
	init := mp4.CreateEmptyInit()
	init.AddEmptyTrack(audioTimescale, "audio", "en")
	if err := init.Moov.Trak.SetAACDescriptor(aac.AAClc, audioTimescale); err != nil {
		t.Fatal(err)
	}
	return encodeInit(t, init)
}

func encodeInit(t testing.TB, init *mp4.InitSegment) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := init.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fragment is one moof+mdat of n samples of dur ticks from start; the first is a
// sync sample when key, the others are not (video) or all are (audio: gop 0).
func fragment(t testing.TB, seq uint32, start uint64, n int, dur uint32, key, allSync bool) []byte {
	t.Helper()
	ss := make([]cmaf.Sample, n)
	for i := range ss {
		data := bytes.Repeat([]byte{byte(seq), byte(i)}, 50)
		flags := cmaf.NonSyncSampleFlags
		if allSync || i == 0 && key {
			flags = cmaf.SyncSampleFlags
		}
		ss[i] = cmaf.Sample{Duration: dur, Size: uint32(len(data)), Flags: flags, Data: data}
	}
	b, err := cmaf.AppendFragment(nil, seq, 1, start, ss)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// videoChunk is a fragment of n 25 fps frames starting at frame index first.
func videoChunk(t testing.TB, first, n int, key bool) []byte {
	return fragment(t, uint32(first+1), uint64(first*frameTicks), n, frameTicks, key, false)
}

// audioChunk is a fragment of n AAC frames starting at frame index first.
func audioChunk(t testing.TB, first, n int) []byte {
	return fragment(t, uint32(first+1), uint64(first*aacFrame), n, aacFrame, true, true)
}

// box makes a box of type typ around body.
func box(typ string, body ...[]byte) []byte {
	size := 8
	for _, b := range body {
		size += len(b)
	}
	out := binary.BigEndian.AppendUint32(nil, uint32(size))
	out = append(out, typ...)
	for _, b := range body {
		out = append(out, b...)
	}
	return out
}

// styp is a styp box with brand msdh and, when last, lmsg.
func styp(last bool) []byte {
	body := []byte("msdh\x00\x00\x00\x00msdhcmfs")
	if last {
		body = append(body, "lmsg"...)
	}
	return box("styp", body)
}

// prft is a version 1 prft box saying media time mt was produced at wall.
func prft(wall time.Time, mt uint64) []byte {
	d := wall.Sub(ntpEpoch)
	secs := uint64(d / time.Second)
	frac := uint64(d%time.Second) << 32 / uint64(time.Second)
	body := []byte{1, 0, 0, 0}
	body = binary.BigEndian.AppendUint32(body, 1)
	body = binary.BigEndian.AppendUint64(body, secs<<32|frac)
	body = binary.BigEndian.AppendUint64(body, mt)
	return box("prft", body)
}

// concat joins byte slices.
func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// videoBody is a CMAF header and `segments` 2 s segments of 25 fps video, each one
// keyframe-led chunk of 50 frames (FFmpeg's frag_keyframe with -g 50).
func videoBody(t testing.TB, segments int) []byte {
	b := videoHeader(t, 0)
	for i := range segments {
		b = append(b, videoChunk(t, i*50, 50, true)...)
	}
	return b
}
