// Package abr holds the player's adaptive-bitrate rules and its throughput estimator.
//
// A Rule is a pure function of State: the player calls Choose before each media
// request of an adaptation set and requests the rendition it returns. Rules keep no
// state of their own (hysteresis uses State.Current), so one instance serves every
// adaptation set and tests are tables.
package abr

import (
	"fmt"
	"strings"
	"time"
)

// Rendition is one choice, as the rule sees it.
type Rendition struct {
	ID        string
	Bandwidth int // declared bit/s
}

// State is what a rule decides from.
type State struct {
	Renditions      []Rendition   // ascending bandwidth; never empty
	Current         int           // index of the last requested rendition, -1 before the first
	Buffer          time.Duration // media buffered ahead of the playhead in this adaptation set
	BufferTarget    time.Duration // the level the player fills to (on demand) or can reach (live)
	SegmentDuration time.Duration
	Throughput      float64 // estimated bit/s; 0 when nothing has been measured yet
	Live            bool
}

// Rule picks a rendition.
type Rule interface {
	Name() string
	// Choose returns an index into s.Renditions.
	Choose(s State) int
}

// Parse builds a rule from its command-line name: throughput, bba, bola or fixed:TRACKID.
func Parse(spec string) (Rule, error) {
	name, arg, _ := strings.Cut(spec, ":")
	switch name {
	case "throughput", "":
		return Throughput{}, nil
	case "bba":
		return BBA{}, nil
	case "bola":
		return BOLA{}, nil
	case "fixed":
		if arg == "" {
			return nil, fmt.Errorf("abr %q: fixed needs a track ID, e.g. fixed:v720", spec)
		}
		return Fixed{TrackID: arg, Fallback: Throughput{}}, nil
	}
	return nil, fmt.Errorf("abr %q: want throughput, bba, bola or fixed:TRACKID", spec)
}

// highestBelow returns the highest index whose bandwidth is at most rate (0 if none).
func highestBelow(rs []Rendition, rate float64) int {
	best := 0
	for i, r := range rs {
		if float64(r.Bandwidth) <= rate {
			best = i
		}
	}
	return best
}
