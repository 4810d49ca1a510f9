package pkg

import (
	"fmt"
	"math/big"
	"time"
)

// AAC-LC frames hold 1024 samples; Streambed encodes audio at 48 kHz.
const (
	AACFrameSamples = 1024
	AudioSampleRate = 48000
)

// AlignmentPeriod is the shortest duration that is a whole number of segments, of
// video frames at fps and (with audio) of AAC frames at 48 kHz: LCM(segment duration,
// 1/fps, 1024/48000 s). An asset whose length is a multiple of it loops seamlessly on
// every track: all tracks end together on a segment boundary.
// For 25 fps with audio: 2 s → 8 s, 10 s → 40 s, 1 s → 8 s.
func AlignmentPeriod(segment time.Duration, fps int, audio bool) (time.Duration, error) {
	if segment <= 0 || fps <= 0 {
		return 0, fmt.Errorf("segment duration %s and fps %d must be positive", segment, fps)
	}
	p := big.NewRat(int64(segment), int64(time.Second))
	p = lcmRat(p, big.NewRat(1, int64(fps)))
	if audio {
		p = lcmRat(p, big.NewRat(AACFrameSamples, AudioSampleRate))
	}
	ns := new(big.Rat).Mul(p, big.NewRat(int64(time.Second), 1))
	if !ns.IsInt() || !ns.Num().IsInt64() || ns.Num().Int64() > int64(24*time.Hour) {
		return 0, fmt.Errorf("segment duration %s, %d fps and AAC frames have no common period under 24 h in whole nanoseconds", segment, fps)
	}
	return time.Duration(ns.Num().Int64()), nil
}

// lcmRat is the least common multiple of two positive rationals in lowest terms:
// lcm(a/b, c/d) = lcm(a, c) / gcd(b, d).
func lcmRat(x, y *big.Rat) *big.Rat {
	a, b, c, d := x.Num(), x.Denom(), y.Num(), y.Denom()
	g := new(big.Int).GCD(nil, nil, a, c)
	l := new(big.Int).Mul(a, c)
	l.Quo(l, g)
	return new(big.Rat).SetFrac(l, new(big.Int).GCD(nil, nil, b, d))
}

// LoopDuration trims an input of the given length down to a whole number of alignment
// periods. It fails when the input is shorter than one period.
func LoopDuration(input, period time.Duration) (time.Duration, error) {
	if period <= 0 {
		return 0, fmt.Errorf("alignment period %s", period)
	}
	n := input / period
	if n < 1 {
		return 0, fmt.Errorf("the input lasts %s, shorter than one loop period of %s "+
			"(the least common multiple of the segment duration, the frame duration and the AAC frame duration): "+
			"use a longer input or a shorter --segment-duration", input.Round(time.Millisecond), period)
	}
	return n * period, nil
}
