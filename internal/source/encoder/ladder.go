// Package encoder is the encoder side of live ingest (DASH-IF Live Media Ingest,
// Interface 1): it posts one CMAF track per long-running HTTP POST to an origin's
// ingest URL, `{base}/Streams({track}.cmfv|.cmfa)`. Two ways:
//
//   - FFmpeg as the live encoder (FFmpegArgs, RunFFmpeg): one FFmpeg process encodes
//     the ladder in real time, one output per track, as Unified Origin's load tests do.
//   - Replay (Replay): a ladder encoded once (a packaged asset) posted in real time
//     with rewritten timestamps, so many channels can be fed from a machine that could
//     not encode one published ladder in real time.
//
// Both stamp media time as time since the Unix epoch, so segment boundaries of
// redundant encoders agree and a restarted encoder continues the timeline.
package encoder

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/source/pkg"
)

// Ladder is what an encoder sends: video rungs and AAC tracks.
type Ladder struct {
	Name  string
	Video []pkg.Rung
	Audio []int // AAC-LC bit/s, one track each
	FPS   int
	GOP   int // frames between keyframes: one segment
}

// SegmentDuration is the GOP as a duration: every segment starts at a keyframe.
func (l Ladder) SegmentDuration() time.Duration {
	return time.Duration(l.GOP) * time.Second / time.Duration(l.FPS)
}

// Bitrate is the sum of the tracks' bitrates (what the origin takes in per channel).
func (l Ladder) Bitrate() int {
	sum := 0
	for _, r := range l.Video {
		sum += r.Bitrate
	}
	for _, a := range l.Audio {
		sum += a
	}
	return sum
}

// AudioID is the track ID of an AAC track: "a" + kbit/s.
func AudioID(bitrate int) string { return fmt.Sprintf("a%d", bitrate/1000) }

// Tracks lists the track IDs with their ingest file names ("v360.cmfv", "a128.cmfa").
func (l Ladder) Tracks() []string {
	var out []string
	for _, r := range l.Video {
		out = append(out, r.ID()+".cmfv")
	}
	for _, a := range l.Audio {
		out = append(out, AudioID(a)+".cmfa")
	}
	return out
}

func mustLadder(s string) []pkg.Rung {
	r, err := pkg.ParseLadder(s)
	if err != nil {
		panic(err)
	}
	return r
}

// Ladders are the ladders known by name.
var Ladders = map[string]Ladder{
	// small encodes in real time on two cores beside an origin.
	"small": {Name: "small", Video: mustLadder("180p:150k,360p:500k"), Audio: []int{64000}, FPS: 25, GOP: 50},
	// published is the origin-at-scale load tests' ladder: eight H.264 rungs from
	// 144p to 1080p at 100–3500 kbit/s and AAC at 64 and 128 kbit/s, 25 fps, a GOP of
	// 48 frames (1.92 s segments); 10.19 Mbit/s in per channel. It does not encode in
	// real time on two cores: replay it.
	"published": {Name: "published", Video: mustLadder("144p:100k,216p:200k,288p:400k,360p:700k,432p:1000k,540p:1600k,720p:2500k,1080p:3500k"),
		Audio: []int{64000, 128000}, FPS: 25, GOP: 48},
}

// LadderNamed returns a named ladder.
func LadderNamed(name string) (Ladder, error) {
	if l, ok := Ladders[name]; ok {
		return l, nil
	}
	names := make([]string, 0, len(Ladders))
	for n := range Ladders {
		names = append(names, n)
	}
	sort.Strings(names)
	return Ladder{}, fmt.Errorf("no ladder %q; ladders: %s", name, strings.Join(names, ", "))
}

// TrackURL is the ingest URL of one track under base (the channel's ingest URL).
func TrackURL(base, file string) string {
	return strings.TrimSuffix(base, "/") + "/Streams(" + file + ")"
}
