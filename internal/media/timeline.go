package media

import "time"

// Timeline is a live channel's anchor in wall-clock time and its nominal shape. It is
// the one place where wall clock and media time meet: media time 0 of every track is
// AvailabilityStart (MPD@availabilityStartTime; HLS EXT-X-PROGRAM-DATE-TIME), so a
// segment starting at media time t begins at AvailabilityStart + t.
//
// Which segments exist, and their real start times and durations, is what the hub
// stores, not arithmetic over SegmentDuration: an encoder's segments vary in length.
type Timeline struct {
	AvailabilityStart    time.Time
	SegmentDuration      time.Duration // nominal (target) duration: MPD@maxSegmentDuration, HLS target duration
	TimeShiftBufferDepth time.Duration // the DVR window; 0 keeps only the newest segment
}

// WallTime is the wall-clock time of media time ticks of a track.
func (t Timeline) WallTime(tr *Track, ticks uint64) time.Time {
	return t.AvailabilityStart.Add(tr.Duration(ticks))
}
