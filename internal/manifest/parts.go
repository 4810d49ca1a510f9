package manifest

import (
	"strconv"
	"time"

	"github.com/streambed/streambed/internal/media"
)

// PartTargetGoal is the LL-HLS part duration aimed at: Apple's suggestion for 2 s
// segments. Chunks are grouped into parts up to it; one-frame chunks (40 ms) would
// make a playlist line and a request per frame.
const PartTargetGoal = 200 * time.Millisecond

// PartTarget is the LL-HLS EXT-X-PART-INF:PART-TARGET of a channel made in chunks of
// at most chunk: PartTargetGoal, or the chunk when it is longer (a part is at least
// one chunk).
func PartTarget(chunk time.Duration) time.Duration { return max(PartTargetGoal, chunk) }

// Part is one LL-HLS partial segment: consecutive chunks of a segment. Parts are cut
// by SplitParts, the one rule the playlist and the part URLs share.
type Part struct {
	Number      uint64 // the parent segment
	Index       int    // within the segment, from 0
	First       int    // index of its first chunk in the segment
	Chunks      int    // how many chunks
	Start       uint64 // media time, track timescale
	Duration    uint64 // track timescale
	Independent bool   // its first chunk starts with a keyframe
}

// SplitParts cuts the chunks of segment n stored so far into parts of at most target
// ticks and returns the complete ones, oldest first. complete says whether the
// segment is; its last part then ends with it.
//
// Greedy, so that a part is complete as early as possible and never changes once
// complete: chunks join the open part while it stays within target; the part closes
// after a chunk when one more chunk as long would not fit (so one-frame chunks of
// 40 ms make parts of 5 frames, 200 ms, and AAC chunks of 42.7 ms parts of 4, 171 ms:
// each at least 85% of a 200 ms target, as RFC 8216bis asks of all but a segment's
// last part), or before a chunk that does not fit (chunks of varying length: the
// part is then complete when that chunk arrives). A chunk longer than target is a
// part of its own (PartTarget makes the target at least the channel's chunk).
func SplitParts(n uint64, chunks []*media.Chunk, complete bool, target uint64) []Part {
	var parts []Part
	var open *Part
	closeOpen := func() {
		if open != nil {
			parts = append(parts, *open)
			open = nil
		}
	}
	for i, ch := range chunks {
		if open != nil && open.Duration+ch.Duration > target {
			closeOpen()
		}
		if open == nil {
			open = &Part{Number: n, Index: len(parts), First: i, Start: ch.Start, Independent: ch.Keyframe}
		}
		open.Chunks++
		open.Duration += ch.Duration
		if open.Duration+ch.Duration > target {
			closeOpen()
		}
	}
	if complete {
		closeOpen()
	}
	return parts
}

// PartName is the file name of part index of segment n, beside the segment's own
// ("{n}.m4s"): "{n}.{index}.m4s".
func PartName(n uint64, index int) string {
	return strconv.FormatUint(n, 10) + "." + strconv.Itoa(index) + ".m4s"
}

// NewEdge is a track's LL-HLS edge: the parts of done, its newest complete segments
// (oldest first), and the complete parts of segment next, the one in progress, whose
// chunks so far are chunks (none when it has not begun) and whose live period is
// period; the hint is the part after them. target is the part target in the
// track's timescale.
func NewEdge(done []*media.Segment, next uint64, chunks []*media.Chunk, period uint32, target uint64) *Edge {
	e := &Edge{Period: period}
	for _, s := range done {
		e.Parts = append(e.Parts, SplitParts(s.Number, s.Chunks, true, target)...)
	}
	open := SplitParts(next, chunks, false, target)
	e.Parts = append(e.Parts, open...)
	e.Hint = Part{Number: next, Index: len(open)}
	return e
}

// TicksOf is d in a timescale, rounded down.
func TicksOf(d time.Duration, timescale uint32) uint64 {
	return uint64(d) * uint64(timescale) / uint64(time.Second)
}
