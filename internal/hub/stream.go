package hub

import (
	"time"

	"github.com/streambed/streambed/internal/media"
)

// Stream is what every transport reads, the same for an on-demand asset and a live
// channel, so no transport branches on live or on-demand to find or read a segment.
// now is the reader's clock (Channel.Now, or a request's pinned `?nowMS=`); an asset
// ignores it.
type Stream interface {
	Info() *media.Stream
	Live() bool
	Init(trackID string) ([]byte, error)
	// Ref finds segment n of a track available at now.
	Ref(trackID string, n uint64, now time.Time) (media.SegmentRef, error)
	// RefAt finds the segment of a track that starts at media time start ($Time$).
	RefAt(trackID string, start uint64, now time.Time) (media.SegmentRef, error)
	// Segment returns the bytes of segment n of a track, as chunks.
	Segment(trackID string, n uint64, now time.Time) (*media.Segment, error)
	// Window lists each track's segments available at now, oldest first: all of an
	// asset's, a channel's DVR window.
	Window(now time.Time) (map[string][]media.SegmentRef, error)
}

var (
	_ Stream = (*Asset)(nil)
	_ Stream = (*Channel)(nil)
)

// Ref finds segment n of a track available at now.
func (c *Channel) Ref(trackID string, n uint64, now time.Time) (media.SegmentRef, error) {
	s, err := c.Segment(trackID, n, now)
	if err != nil {
		return media.SegmentRef{}, err
	}
	return s.SegmentRef, nil
}

// RefAt finds the segment of a track that starts at media time start.
func (c *Channel) RefAt(trackID string, start uint64, now time.Time) (media.SegmentRef, error) {
	s, err := c.SegmentAt(trackID, start, now)
	if err != nil {
		return media.SegmentRef{}, err
	}
	return s.SegmentRef, nil
}

// Live is false: an asset is finite and complete.
func (a *Asset) Live() bool { return false }

// Ref finds segment n of a track.
func (a *Asset) Ref(trackID string, n uint64, _ time.Time) (media.SegmentRef, error) {
	ref, _, err := a.SegmentFile(trackID, n)
	return ref, err
}

// RefAt finds the segment of a track that starts at media time start.
func (a *Asset) RefAt(trackID string, start uint64, _ time.Time) (media.SegmentRef, error) {
	ref, _, err := a.SegmentFileAt(trackID, start)
	return ref, err
}

// Segment reads segment n of a track from its file, as one chunk.
func (a *Asset) Segment(trackID string, n uint64, _ time.Time) (*media.Segment, error) {
	return a.ReadSegment(trackID, n)
}

// Window lists every segment of every track.
func (a *Asset) Window(time.Time) (map[string][]media.SegmentRef, error) {
	out := make(map[string][]media.SegmentRef, len(a.stream.Tracks))
	for _, t := range a.stream.Tracks {
		out[t.ID] = t.Segments
	}
	return out, nil
}
