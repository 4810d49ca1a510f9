package abr

import (
	"math"
	"time"
)

// Throughput picks the highest rendition whose bandwidth fits under a safety share of
// the estimated throughput (dash.js ThroughputRule, without its latency terms). Before
// any measurement it picks the lowest.
type Throughput struct {
	Safety float64 // share of the estimate to use; 0 means 0.9
}

// Name is "throughput".
func (Throughput) Name() string { return "throughput" }

// Choose implements Rule.
func (t Throughput) Choose(s State) int {
	if s.Throughput <= 0 {
		return 0
	}
	safety := t.Safety
	if safety <= 0 {
		safety = 0.9
	}
	return highestBelow(s.Renditions, safety*s.Throughput)
}

// BBA is the buffer-based algorithm BBA-0 (Huang et al., SIGCOMM 2014). The buffer
// level maps to a rate: the lowest below the reservoir, the highest above reservoir +
// cushion, linear in between. The rendition changes only when the mapped rate crosses
// the next rendition up or the next one down, which damps oscillation.
type BBA struct {
	// Reservoir and Cushion as shares of State.BufferTarget; 0 means 0.2 and 0.6.
	// The reservoir is never less than one segment.
	Reservoir, Cushion float64
}

// Name is "bba".
func (BBA) Name() string { return "bba" }

// Choose implements Rule.
func (b BBA) Choose(s State) int {
	rs := s.Renditions
	n := len(rs)
	resShare, cushShare := b.Reservoir, b.Cushion
	if resShare <= 0 {
		resShare = 0.2
	}
	if cushShare <= 0 {
		cushShare = 0.6
	}
	target := s.BufferTarget
	if target <= 0 {
		target = 30 * time.Second
	}
	reservoir := max(time.Duration(resShare*float64(target)), s.SegmentDuration)
	cushion := time.Duration(cushShare * float64(target))
	if reservoir+cushion > target {
		cushion = max(target-reservoir, time.Millisecond)
	}
	switch {
	case s.Buffer <= reservoir:
		return 0
	case s.Buffer >= reservoir+cushion:
		return n - 1
	}
	rmin, rmax := float64(rs[0].Bandwidth), float64(rs[n-1].Bandwidth)
	f := rmin + (rmax-rmin)*float64(s.Buffer-reservoir)/float64(cushion)
	cur := s.Current
	if cur < 0 || cur >= n {
		return highestBelow(rs, f)
	}
	up, down := cur, cur
	if cur+1 < n {
		up = cur + 1
	}
	if cur > 0 {
		down = cur - 1
	}
	switch {
	case f >= float64(rs[up].Bandwidth) && up != cur:
		// Highest rendition strictly below f.
		i := 0
		for j, r := range rs {
			if float64(r.Bandwidth) < f {
				i = j
			}
		}
		return max(i, cur)
	case f <= float64(rs[down].Bandwidth) && down != cur:
		// Lowest rendition strictly above f.
		for j, r := range rs {
			if float64(r.Bandwidth) > f {
				return min(j, cur)
			}
		}
		return cur
	}
	return cur
}

// BOLA is BOLA-BASIC (Spiteri et al., INFOCOM 2016) as dash.js parameterises it: with
// utilities v_m = ln(S_m/S_1) + 1, it picks the rendition maximising
// (V·(v_m + γp) − Q)/S_m, where Q is the buffer level in seconds, and V and γp are
// chosen so that the lowest rendition wins at the minimum buffer and the highest at
// the buffer target. dash.js fixes the minimum buffer at 10 s and adds 2 s per
// rendition; here those scale down for short live buffers (at most half the target,
// a fifth of that per rendition), so a 6 s live buffer still spans the ladder.
type BOLA struct{}

// Name is "bola".
func (BOLA) Name() string { return "bola" }

// Choose implements Rule.
func (BOLA) Choose(s State) int {
	rs := s.Renditions
	n := len(rs)
	if n == 1 {
		return 0
	}
	target := s.BufferTarget.Seconds()
	if target <= 0 {
		target = 30
	}
	minBuf := math.Min(10, target/2)
	perLevel := minBuf / 5
	bufferTime := math.Max(target, minBuf+perLevel*float64(n))
	u := make([]float64, n)
	for i, r := range rs {
		u[i] = math.Log(float64(max(r.Bandwidth, 1))/float64(max(rs[0].Bandwidth, 1))) + 1
	}
	if u[n-1] <= u[0] {
		return 0 // all renditions declare the same bandwidth
	}
	gp := (u[n-1] - 1) / (bufferTime/minBuf - 1)
	vp := minBuf / gp
	q := s.Buffer.Seconds()
	best, bestScore := 0, math.Inf(-1)
	for i, r := range rs {
		score := (vp*(u[i]+gp) - q) / float64(max(r.Bandwidth, 1))
		if score >= bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

// Fixed always picks the rendition TrackID. In adaptation sets that do not contain
// it (audio, when the fixed track is video) it defers to Fallback, or the lowest.
type Fixed struct {
	TrackID  string
	Fallback Rule
}

// Name is "fixed:TRACKID".
func (f Fixed) Name() string { return "fixed:" + f.TrackID }

// Choose implements Rule.
func (f Fixed) Choose(s State) int {
	for i, r := range s.Renditions {
		if r.ID == f.TrackID {
			return i
		}
	}
	if f.Fallback != nil {
		return f.Fallback.Choose(s)
	}
	return 0
}
