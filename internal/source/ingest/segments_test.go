package ingest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/media"
)

// fakeChunk is a chunk of n samples of dur ticks at start, for the cutter.
func fakeChunk(start uint64, n int, dur uint32, key, withStyp bool) *Chunk {
	ss := make([]cmaf.Sample, n)
	for i := range ss {
		ss[i] = cmaf.Sample{Duration: dur, Flags: cmaf.NonSyncSampleFlags}
	}
	if key {
		ss[0].Flags = cmaf.SyncSampleFlags
	}
	return &Chunk{Fragment: cmaf.Fragment{BaseMediaDecodeTime: start, Samples: ss}, Styp: withStyp}
}

// cut runs chunks through a cutter and writes "n+" for a chunk starting segment n,
// "n" for one joining it and "-" for one dropped.
func cut(cu *cutter, chunks ...*Chunk) string {
	var out []string
	for _, c := range chunks {
		n, how := cu.place(c)
		switch how {
		case startSegment:
			out = append(out, fmt.Sprintf("%d+", n))
		case appendChunk:
			out = append(out, fmt.Sprint(n))
		case dropChunk:
			out = append(out, "-")
			continue
		}
		cu.stored(c)
	}
	return strings.Join(out, " ")
}

func TestSegmentRules(t *testing.T) {
	video := &media.Track{ID: "v", Kind: media.Video, Timescale: videoTimescale}
	audio := &media.Track{ID: "a", Kind: media.Audio, Timescale: audioTimescale}
	const sec = videoTimescale // video ticks per second
	// v is a video chunk of d seconds at s seconds; k: starts with a keyframe.
	v := func(s, d float64, k bool) *Chunk {
		return fakeChunk(uint64(s*sec), int(d*25), frameTicks, k, false)
	}
	// a is an audio chunk of n AAC frames from frame f.
	a := func(f, n int) *Chunk { return fakeChunk(uint64(f*aacFrame), n, aacFrame, true, false) }

	t.Run("a keyframe-led chunk per segment", func(t *testing.T) {
		cu := &cutter{tl: newTimeline(2 * time.Second), track: video}
		if got := cut(cu, v(0, 2, true), v(2, 2, true), v(4, 2, true)); got != "0+ 1+ 2+" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("GOPs of 1 s with 2 s segments", func(t *testing.T) {
		cu := &cutter{tl: newTimeline(2 * time.Second), track: video}
		// keyframes at 0..5 s: 1 s rounds to 1 (a new segment), 2 s also to 1: joins it.
		if got := cut(cu, v(0, 1, true), v(1, 1, true), v(2, 1, true), v(3, 1, true), v(4, 1, true)); got != "0+ 1+ 1 2+ 2" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("small chunks, keyframes every 2 s", func(t *testing.T) {
		cu := &cutter{tl: newTimeline(2 * time.Second), track: video}
		if got := cut(cu, v(0, 1, true), v(1, 1, false), v(2, 1, true), v(3, 1, false)); got != "0+ 0 1+ 1" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("video joining after its first keyframe", func(t *testing.T) {
		cu := &cutter{tl: newTimeline(2 * time.Second), track: video}
		if got := cut(cu, v(10, 1, false), v(11, 1, false), v(12, 1, true), v(13, 1, false)); got != "- - 6+ 6" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("styp marks the segments, keyframes do not", func(t *testing.T) {
		cu := &cutter{tl: newTimeline(2 * time.Second), track: video}
		c0, c2 := v(0, 1, true), v(2, 1, true)
		c0.Styp, c2.Styp = true, true
		if got := cut(cu, c0, v(1, 1, true), c2, v(3, 1, true)); got != "0+ 0 1+ 1" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("duplicates are dropped", func(t *testing.T) {
		cu := &cutter{tl: newTimeline(2 * time.Second), track: video}
		if got := cut(cu, v(0, 2, true), v(2, 2, true), v(2, 2, true), v(0, 2, true), v(4, 2, true)); got != "0+ 1+ - - 2+" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("after a reconnect, at the next boundary", func(t *testing.T) {
		cu := &cutter{tl: newTimeline(2 * time.Second), track: video}
		got := cut(cu, v(0, 1, true), v(1, 1, false))
		cu.open = false // the request ended: endOpen
		got += " | " + cut(cu, v(2, 1, false), v(3, 1, false), v(4, 1, true))
		if got != "0+ 0 | - - 2+" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("audio alone: every nominal duration", func(t *testing.T) {
		cu := &cutter{tl: newTimeline(2 * time.Second), track: audio}
		// 2 s is 93.75 AAC frames: chunks of 10 frames; a boundary at the first chunk at or after it.
		var chunks []*Chunk
		for f := 0; f < 200; f += 10 {
			chunks = append(chunks, a(f, 10))
		}
		want := "0+ 0 0 0 0 0 0 0 0 0 1+ 1 1 1 1 1 1 1 1 2+" // frames 0, 100 (2.133 s), 190 (4.05 s)
		if got := cut(cu, chunks...); got != want {
			t.Errorf("got  %q\nwant %q", got, want)
		}
	})
	t.Run("audio follows the video's boundaries", func(t *testing.T) {
		tl := newTimeline(2 * time.Second)
		cv := &cutter{tl: tl, track: video}
		ca := &cutter{tl: tl, track: audio}
		// The video's segments begin at 0, 2.4 and 4.4 s (keyframes off the grid).
		if got := cut(cv, v(0, 2.4, true), v(2.4, 2, true)); got != "0+ 1+" {
			t.Fatalf("video %q", got)
		}
		// Audio chunks of 6 frames (128 ms): 2.304 s is before 2.4, 2.432 after it;
		// segment 2 is predicted at 2.4 + 2 = 4.4 s: 4.352 before, 4.48 after.
		got := cut(ca, a(0, 6), a(102, 6), a(108, 6), a(114, 6), a(204, 6), a(210, 6))
		if got != "0+ 0 0 1+ 1 2+" {
			t.Errorf("audio %q", got)
		}
	})
}

// Hours of an encoder's audio beside its video: 2 s video segments (epoch-aligned
// keyframes) and audio in chunks of ten AAC frames (FFmpegArgs), which cannot end
// where the video does (2 s is 93.75 frames). Audio segment numbers stay those of
// the video, with none skipped, and each audio segment starts within a chunk of its
// video segment. (With FFmpeg's former 2 s audio fragments, 94 frames each, the audio
// drifted 5 ms a segment and skipped a number within seconds when it started just
// before a boundary.)
func TestAudioNumbersFollowVideoForHours(t *testing.T) {
	video := &media.Track{ID: "v", Kind: media.Video, Timescale: videoTimescale}
	audio := &media.Track{ID: "a", Kind: media.Audio, Timescale: audioTimescale}
	tl := newTimeline(2 * time.Second)
	vc := &cutter{tl: tl, track: video}
	ac := &cutter{tl: tl, track: audio}
	const epoch = 1_795_496_412 // seconds: media time is time since the Unix epoch
	const segments = 3 * 3600 / 2
	// The audio starts one AAC frame early (the encoder's priming), as FFmpeg's does.
	af := int64(epoch)*audioTimescale/aacFrame - 1
	var lastA uint64
	started := false
	for k := 0; k < segments; k++ {
		vs := uint64(epoch+2*k) * videoTimescale
		n, how := vc.place(fakeChunk(vs, 50, frameTicks, true, false))
		if how != startSegment || n != uint64(epoch/2+k) {
			t.Fatalf("video segment %d: %d %v", k, n, how)
		}
		vc.stored(fakeChunk(vs, 50, frameTicks, true, false))
		// The audio chunks that start before the next video boundary.
		for next := int64(epoch+2*k+2) * audioTimescale; af*aacFrame < next; af += 10 {
			c := fakeChunk(uint64(af*aacFrame), 10, aacFrame, true, false)
			an, how := ac.place(c)
			ac.stored(c)
			if how != startSegment {
				continue
			}
			if started && an != lastA+1 {
				t.Fatalf("after %v of media: audio segment %d follows %d", time.Duration(k)*2*time.Second, an, lastA)
			}
			gap := time.Duration(af*aacFrame-int64(tl.boundaryLocked(an)/time.Second)*audioTimescale) * time.Second / audioTimescale
			if started && (gap < 0 || gap >= 220*time.Millisecond) {
				t.Fatalf("audio segment %d starts %v after its video boundary", an, gap)
			}
			started, lastA = true, an
		}
	}
	if lastA != uint64(epoch/2+segments-1) {
		t.Errorf("the last audio segment is %d, the last video one %d", lastA, epoch/2+segments-1)
	}
}

func TestParseIngestName(t *testing.T) {
	for _, tc := range []struct {
		in       string
		id       string
		kind     media.Kind
		manifest bool
		ok       bool
	}{
		{"Streams(v1.cmfv)", "v1", media.Video, false, true},
		{"Streams(a.cmfa)", "a", media.Audio, false, true},
		{"init-stream0.m4s", "stream0", "", false, true},
		{"chunk-stream1-00042.m4s", "stream1", "", false, true},
		{"init-stream3.mp4", "stream3", "", false, true},
		{"manifest.mpd", "", "", true, true},
		{"master.m3u8", "", "", true, true},
		{"Streams(v1.mp4)", "", "", false, false},
		{"chunk-stream.m4s", "", "", false, false},
		{"segment.m4s", "", "", false, false},
		{"init-stream../x.m4s", "", "", false, false},
	} {
		id, kind, manifest, err := parseIngestName(tc.in)
		if (err == nil) != tc.ok || id != tc.id || kind != tc.kind || manifest != tc.manifest {
			t.Errorf("%q = %q %q %v %v", tc.in, id, kind, manifest, err)
		}
	}
}

// Ingest URLs come from outside: any name gives a track, a manifest or an error, and
// a track name is always URL-safe.
func FuzzIngestName(f *testing.F) {
	for _, s := range []string{"Streams(v.cmfv)", "init-stream0.m4s", "chunk-stream12-00001.m4s", "manifest.mpd", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, _, manifest, err := parseIngestName(s)
		if err == nil && !manifest && !media.ValidName(id) {
			t.Fatalf("%q gave track %q", s, id)
		}
	})
}
