package media

import (
	"fmt"
	"time"
)

// Timeline maps a live channel's segment numbers to wall-clock time. It is the one
// place where wall clock and media time meet.
//
// Segment n covers media [n·D, (n+1)·D) after AvailabilityStart, and becomes available
// when it is complete, at AvailabilityStart + (n+1)·D. Numbers start at 0.
type Timeline struct {
	AvailabilityStart    time.Time
	SegmentDuration      time.Duration // D, exact for video (keyframe every segment)
	TimeShiftBufferDepth time.Duration // the DVR window; 0 keeps only the newest segment
}

// Availability is when segment n is complete and may be served.
func (t Timeline) Availability(n uint64) time.Time {
	return t.AvailabilityStart.Add(time.Duration(n+1) * t.SegmentDuration)
}

// Latest returns the newest complete segment at now; ok is false before the first.
func (t Timeline) Latest(now time.Time) (n uint64, ok bool) {
	el := now.Sub(t.AvailabilityStart)
	if el < t.SegmentDuration {
		return 0, false
	}
	return uint64(el/t.SegmentDuration) - 1, true
}

// Window returns the first and last segments available at now. The window keeps every
// segment whose end lies within TimeShiftBufferDepth of now.
func (t Timeline) Window(now time.Time) (first, last uint64, ok bool) {
	last, ok = t.Latest(now)
	if !ok {
		return 0, 0, false
	}
	keep := uint64(t.TimeShiftBufferDepth / t.SegmentDuration)
	if keep < 1 {
		keep = 1
	}
	if last+1 > keep {
		first = last + 1 - keep
	}
	return first, last, true
}

// Check says whether segment n may be served at now: nil, ErrNotYet or ErrGone.
func (t Timeline) Check(n uint64, now time.Time) error {
	first, last, ok := t.Window(now)
	switch {
	case !ok || n > last:
		return fmt.Errorf("segment %d is available at %s: %w", n, t.Availability(n).UTC().Format(time.RFC3339Nano), ErrNotYet)
	case n < first:
		return fmt.Errorf("segment %d left the %s DVR window: %w", n, t.TimeShiftBufferDepth, ErrGone)
	}
	return nil
}

// NumberAt returns the segment that contains wall time w (which may be incomplete).
func (t Timeline) NumberAt(w time.Time) uint64 {
	el := w.Sub(t.AvailabilityStart)
	if el < 0 {
		return 0
	}
	return uint64(el / t.SegmentDuration)
}
