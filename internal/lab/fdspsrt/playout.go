package main

import (
	"slices"
	"time"
)

// playout applies FDSP's client rule (internal/transport/fdsp/playout.go) to
// access units that arrive by themselves, as SRT delivers them: the first one
// being complete starts the clock, access unit i is due at
// anchor + delay + (DTS_i − DTS_0) + rebuffering so far, and one complete after
// it is due is a rebuffering instance lasting until it is (lateness under 1 ms,
// the player's timer slack, is not counted). As in FDSP, the start-up — session
// start to the first access unit complete — is rebuffering instance 1.
// Unlike FDSP, whose unit is a substream's TCP part, SRT's is each access unit.
type playoutResult struct {
	StartupMS     float64 `json:"startup_ms"`     // session start to the first access unit complete
	FirstFrameMS  float64 `json:"first_frame_ms"` // session start to the first frame shown (start-up + delay)
	RebufferMS    float64 `json:"rebuffer_ms"`    // start-up included
	RebufferCount int     `json:"rebuffer_count"`
	// LatencyMS: per access unit, when it is shown minus when a source that
	// began at the session start had it (start + its media time); median and max.
	LatencyMedianMS float64 `json:"latency_median_ms"`
	LatencyMaxMS    float64 `json:"latency_max_ms"`
	// Stalls lists the instances after the start-up: where in the media (s)
	// and how long (ms).
	Stalls []stall `json:"stalls,omitempty"`
}

type stall struct {
	MediaS float64 `json:"media_s"`
	MS     float64 `json:"ms"`
}

func playout(aus []auArrival, start time.Time, delay time.Duration) playoutResult {
	var r playoutResult
	if len(aus) == 0 {
		return r
	}
	order := slices.Clone(aus) // DTS order: the decoder's
	slices.SortStableFunc(order, func(a, b auArrival) int { return int(int64(a.DTS) - int64(b.DTS)) })
	anchor, dts0 := order[0].Ready, order[0].DTS
	r.StartupMS = ms(anchor.Sub(start))
	r.FirstFrameMS = r.StartupMS + ms(delay)
	r.RebufferMS, r.RebufferCount = r.StartupMS, 1
	var shift time.Duration
	lat := make([]float64, 0, len(order))
	for _, a := range order {
		media := ticks90(a.DTS - dts0)
		due := anchor.Add(delay + media + shift)
		if late := a.Ready.Sub(due); late > time.Millisecond {
			shift += late
			due = a.Ready
			r.RebufferMS += ms(late)
			r.RebufferCount++
			r.Stalls = append(r.Stalls, stall{MediaS: media.Seconds(), MS: ms(late)})
		}
		lat = append(lat, ms(due.Sub(start.Add(media))))
	}
	slices.Sort(lat)
	r.LatencyMedianMS, r.LatencyMaxMS = lat[len(lat)/2], lat[len(lat)-1]
	return r
}

func ticks90(t uint64) time.Duration { return time.Duration(t) * time.Second / 90000 }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
