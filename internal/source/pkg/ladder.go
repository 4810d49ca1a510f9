package pkg

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// DefaultLadder is the ladder `streambed package` encodes unless told otherwise.
const DefaultLadder = "180p:100k,360p:400k,540p:800k,720p:1500k"

// Rung is one video rendition of the ladder.
type Rung struct {
	Height  int // pixels; the width follows the input's aspect ratio
	Bitrate int // target bit/s
}

// ID is the track ID of the rung: "v" + height.
func (r Rung) ID() string { return fmt.Sprintf("v%d", r.Height) }

func (r Rung) String() string { return fmt.Sprintf("%dp:%s", r.Height, FormatBitrate(r.Bitrate)) }

// ParseLadder parses "180p:100k,360p:400k" into rungs sorted by height. Heights must
// be even and distinct.
func ParseLadder(s string) ([]Rung, error) {
	var rungs []Rung
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		h, b, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("ladder rung %q: want HEIGHTp:BITRATE, e.g. 360p:400k", part)
		}
		height, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(h), "p"))
		if err != nil || height < 16 || height > 4320 || height%2 != 0 {
			return nil, fmt.Errorf("ladder rung %q: height must be an even number of pixels from 16 to 4320", part)
		}
		bitrate, err := ParseBitrate(b)
		if err != nil {
			return nil, fmt.Errorf("ladder rung %q: %w", part, err)
		}
		if seen[height] {
			return nil, fmt.Errorf("ladder: height %dp appears twice", height)
		}
		seen[height] = true
		rungs = append(rungs, Rung{Height: height, Bitrate: bitrate})
	}
	if len(rungs) == 0 {
		return nil, fmt.Errorf("ladder %q has no rungs", s)
	}
	sort.Slice(rungs, func(i, j int) bool { return rungs[i].Height < rungs[j].Height })
	return rungs, nil
}

// ParseBitrate parses "128k", "1.5M", "1500000" or "800kbps" into bit/s.
func ParseBitrate(s string) (int, error) {
	t := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), "bps")
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "k"):
		mult, t = 1e3, strings.TrimSuffix(t, "k")
	case strings.HasSuffix(t, "m"):
		mult, t = 1e6, strings.TrimSuffix(t, "m")
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) || v*mult < 1000 || v*mult > 1e9 {
		return 0, fmt.Errorf("bitrate %q: want a number of bit/s from 1k to 1000M, e.g. 128k or 1.5M", s)
	}
	return int(math.Round(v * mult)), nil
}

// FormatBitrate writes bit/s the way ffmpeg reads it: "128k", "1500k", "1234567".
func FormatBitrate(b int) string {
	if b%1000 == 0 {
		return fmt.Sprintf("%dk", b/1000)
	}
	return strconv.Itoa(b)
}

// AudioTrackID is the track ID of the audio track: "a" + kbit/s.
func AudioTrackID(bitrate int) string { return fmt.Sprintf("a%d", (bitrate+500)/1000) }
