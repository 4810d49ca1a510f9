package looplive

import (
	"fmt"
	"time"

	"github.com/streambed/streambed/internal/media"
)

// Schedule is a looped channel's fixed clock, livesim2's model: segment n covers media
// [n·D, (n+1)·D) after the anchor and completes at anchor + (n+1)·D. It is this
// source's own business (the hub knows only what was stored); tests of clients use it
// to play a fixed-duration origin.
type Schedule struct {
	Start           time.Time     // media time 0 (the channel's availability start)
	SegmentDuration time.Duration // D: exact, an asset segment has a keyframe every D
	DVRWindow       time.Duration // 0 keeps only the newest segment
}

// Availability is when segment n is complete.
func (s Schedule) Availability(n uint64) time.Time {
	return s.Start.Add(time.Duration(n+1) * s.SegmentDuration)
}

// Latest returns the newest complete segment at now; ok is false before the first.
func (s Schedule) Latest(now time.Time) (n uint64, ok bool) {
	el := now.Sub(s.Start)
	if el < s.SegmentDuration {
		return 0, false
	}
	return uint64(el/s.SegmentDuration) - 1, true
}

// Window returns the first and last segments available at now: every segment whose
// end lies within the DVR window of now.
func (s Schedule) Window(now time.Time) (first, last uint64, ok bool) {
	last, ok = s.Latest(now)
	if !ok {
		return 0, 0, false
	}
	keep := max(uint64(s.DVRWindow/s.SegmentDuration), 1)
	if last+1 > keep {
		first = last + 1 - keep
	}
	return first, last, true
}

// Check says whether segment n may be served at now: nil, ErrNotYet or ErrGone.
func (s Schedule) Check(n uint64, now time.Time) error {
	first, last, ok := s.Window(now)
	switch {
	case !ok || n > last:
		return fmt.Errorf("segment %d is available at %s: %w", n, s.Availability(n).UTC().Format(time.RFC3339Nano), media.ErrNotYet)
	case n < first:
		return fmt.Errorf("segment %d left the %s DVR window: %w", n, s.DVRWindow, media.ErrGone)
	}
	return nil
}

// NumberAt returns the segment that contains wall time w (which may be incomplete).
func (s Schedule) NumberAt(w time.Time) uint64 {
	el := w.Sub(s.Start)
	if el < 0 {
		return 0
	}
	return uint64(el / s.SegmentDuration)
}
