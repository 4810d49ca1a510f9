package ingest

import (
	"fmt"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/media"
)

// Segment numbering and boundaries (docs/protocols/ingest.md says the same):
//
//   - A segment's number is a function of its start's media time t alone,
//     round(t / D) with D the channel's nominal segment duration, so every track of a
//     channel, an encoder that reconnects and a second encoder all give the segment
//     at t the same number, and segment n sits where a $Number$ MPD puts it:
//     [n·D, (n+1)·D) after the availability start.
//   - A boundary is where the encoder puts one: a chunk that begins with a styp. An
//     encoder that sends no styp marks them by keyframes (video): a chunk whose first
//     sample is a sync sample. Audio without styp follows the video: a new audio
//     segment begins at its first chunk at or after the start of the channel's video
//     segment of the next number (or, before that video segment has arrived, its
//     predicted start: the last known video boundary plus whole D); with no video in
//     the channel, at the first chunk at or after n·D.
//   - A boundary starts a new segment only if its number is above the current one's,
//     so segments are never much shorter than D; a keyframe that rounds to the
//     current number continues the segment. Segments longer than 1.5·D skip a number.
//   - Media before the end of what a track has stored is a duplicate (an encoder
//     resending after a reconnect) and is dropped: the first arrival wins.

// timeline is what the tracks of one ingest channel share: its nominal segment
// duration and where the video's segments begin, for audio to follow.
type timeline struct {
	d time.Duration

	mu       sync.Mutex
	refVideo string                              // the video track whose boundaries audio follows
	video    map[uint64]time.Duration            // segment number → start of refVideo's segment
	lastV    uint64                              // newest number in video
	starts   map[string]map[uint64]time.Duration // other video tracks' segment starts, for the alignment check
}

// alignTolerance is how far a rung's segment start may be from the reference rung's
// and still count as the same boundary (timescale rounding, not a different GOP).
const alignTolerance = 5 * time.Millisecond

// keepBoundaries bounds the video boundaries remembered.
const keepBoundaries = 64

func newTimeline(d time.Duration) *timeline {
	return &timeline{d: d, video: map[uint64]time.Duration{}, starts: map[string]map[uint64]time.Duration{}}
}

// number is round(t / D).
func (tl *timeline) number(t time.Duration) uint64 {
	if t < 0 {
		return 0
	}
	return uint64((t + tl.d/2) / tl.d)
}

// videoStarted records that video track id began segment n at t; the first video
// track to do so is the one audio follows and the others are checked against. It
// returns the track whose segment n starts elsewhere than the reference's (its
// boundaries disagree: it cannot be switched to), with why, or "".
func (tl *timeline) videoStarted(id string, n uint64, t time.Duration) (misaligned, why string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.refVideo == "" {
		tl.refVideo = id
	}
	if id != tl.refVideo {
		if tl.starts[id] == nil {
			tl.starts[id] = map[uint64]time.Duration{}
		}
		tl.starts[id][n] = t
		delete(tl.starts[id], n-keepBoundaries)
		if ref, ok := tl.video[n]; ok && (t-ref).Abs() > alignTolerance {
			return id, fmt.Sprintf("segment %d starts at %v, %v from %s's", n, t, t-ref, tl.refVideo)
		}
		return "", ""
	}
	tl.video[n] = t
	if n > tl.lastV || len(tl.video) == 1 {
		tl.lastV = n
	}
	if n >= keepBoundaries {
		delete(tl.video, n-keepBoundaries)
	}
	for other, starts := range tl.starts {
		if o, ok := starts[n]; ok && (o-t).Abs() > alignTolerance {
			return other, fmt.Sprintf("segment %d starts at %v, %v from %s's", n, o, o-t, id)
		}
	}
	return "", ""
}

// boundaryLocked is where segment n begins for audio without styp.
func (tl *timeline) boundaryLocked(n uint64) time.Duration {
	if t, ok := tl.video[n]; ok {
		return t
	}
	if tl.refVideo != "" && n > tl.lastV {
		if t, ok := tl.video[tl.lastV]; ok {
			return t + time.Duration(n-tl.lastV)*tl.d
		}
	}
	return time.Duration(n) * tl.d
}

// audioNumber is the number of the audio segment a chunk starting at t would begin:
// the highest n whose boundary is at or before t.
func (tl *timeline) audioNumber(t time.Duration) uint64 {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	guess := uint64(max(t, 0) / tl.d)
	for n := guess + 2; ; n-- {
		if tl.boundaryLocked(n) <= t || n == 0 {
			return n
		}
	}
}

// cutter places one track's chunks into numbered segments. It outlives a request,
// so an encoder that reconnects continues where it left off.
type cutter struct {
	tl    *timeline
	track *media.Track

	started bool
	open    bool   // segment n is open: a chunk can still join it
	n       uint64 // the segment chunks go to
	end     uint64 // media time just after the last stored chunk (track timescale)
	useStyp bool   // the encoder marks segments with styp: keyframes alone do not

	// misaligned names a video track (this one or another) whose segment boundaries
	// the last placement found to disagree with the reference rung's, and why.
	misaligned, why string
}

// placement says where a chunk goes.
type placement int

const (
	appendChunk  placement = iota // add it to segment n
	startSegment                  // segment n begins with it (the previous one ends)
	dropChunk                     // a duplicate, or a chunk before the next boundary of a track that had none or ended its segment
)

// place decides where chunk c goes and returns the segment number.
func (cu *cutter) place(c *Chunk) (uint64, placement) {
	f := &c.Fragment
	if cu.started && f.BaseMediaDecodeTime < cu.end {
		return cu.n, dropChunk
	}
	cu.useStyp = cu.useStyp || c.Styp
	t := cu.track.Duration(f.BaseMediaDecodeTime)
	var n uint64
	boundary := false
	switch {
	case cu.useStyp:
		boundary, n = c.Styp, cu.tl.number(t)
	case cu.track.Kind == media.Video:
		boundary, n = f.Keyframe(), cu.tl.number(t)
	default:
		boundary, n = true, cu.tl.audioNumber(t)
	}
	if boundary && (!cu.started || n > cu.n) {
		cu.started, cu.open, cu.n = true, true, n
		if cu.track.Kind == media.Video {
			cu.misaligned, cu.why = cu.tl.videoStarted(cu.track.ID, n, t)
		}
		return n, startSegment
	}
	if !cu.open {
		return cu.n, dropChunk // before the first boundary, or after a reconnect: wait for the next
	}
	return cu.n, appendChunk
}

// stored records that a chunk was stored (or found stored) up to its end.
func (cu *cutter) stored(c *Chunk) {
	cu.end = max(cu.end, c.Fragment.BaseMediaDecodeTime+c.Fragment.Duration())
}
