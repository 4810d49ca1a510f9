// Package media is Streambed's vocabulary: streams, tracks, segments and chunks.
//
// Every other package speaks these types. Media is CMAF (fragmented MP4); times are
// integers in a track's timescale. Wall-clock mapping for live lives in Timeline.
package media

import (
	"fmt"
	"time"
)

// Kind says what a track carries.
type Kind string

const (
	Video Kind = "video"
	Audio Kind = "audio"
)

// Track is one rendition: a video rung or an audio track.
type Track struct {
	ID         string `json:"id"`                    // URL-safe, unique in its stream: "v720", "a128"
	Kind       Kind   `json:"kind"`                  // video or audio
	Codec      string `json:"codec"`                 // RFC 6381 codec string: "avc1.64001f", "mp4a.40.2"
	Bandwidth  int    `json:"bandwidth"`             // declared bit/s (peak over a segment)
	Width      int    `json:"width,omitempty"`       // video only
	Height     int    `json:"height,omitempty"`      // video only
	FrameRate  string `json:"frame_rate,omitempty"`  // video only: "25" or "30000/1001"
	SampleRate int    `json:"sample_rate,omitempty"` // audio only
	Channels   int    `json:"channels,omitempty"`    // audio only
	Language   string `json:"language,omitempty"`    // audio only, BCP 47
	Timescale  uint32 `json:"timescale"`             // ticks per second of tfdt and sample durations
	// InitPath is the init segment's file, relative to the asset folder (assets only).
	InitPath string `json:"init"`
	// Segments lists every media segment of an asset in order (assets only; a live
	// channel's segments live in the hub).
	Segments []SegmentRef `json:"segments,omitempty"`
}

// MimeType is the CMAF MIME type of the track's segments.
func (t *Track) MimeType() string {
	if t.Kind == Audio {
		return "audio/mp4"
	}
	return "video/mp4"
}

// Seconds converts a duration in this track's timescale to seconds.
func (t *Track) Seconds(ticks uint64) float64 { return float64(ticks) / float64(t.Timescale) }

// Duration converts ticks in this track's timescale to a time.Duration (exact to 1 ns).
func (t *Track) Duration(ticks uint64) time.Duration {
	s := ticks / uint64(t.Timescale)
	r := ticks % uint64(t.Timescale)
	return time.Duration(s)*time.Second + time.Duration(r*uint64(time.Second)/uint64(t.Timescale))
}

// SegmentRef addresses one media segment without its bytes.
type SegmentRef struct {
	Number   uint64 `json:"number"`         // $Number$
	Start    uint64 `json:"start"`          // $Time$: tfdt of the first sample, track timescale
	Duration uint64 `json:"duration"`       // track timescale
	Size     int64  `json:"size,omitempty"` // bytes, when known
	Path     string `json:"path,omitempty"` // file relative to the asset folder (assets only)
	// Period is the live period the segment belongs to: 0 for a channel's first, one
	// more each time its encoder restarted its clock on a channel that does not
	// continue the timeline (a DASH Period, an HLS discontinuity).
	Period uint32 `json:"period,omitempty"`
}

// Period is a live period after a channel's first: where it starts on the channel's
// timeline (media time since the availability start, the same for every track).
// Period 0 starts at 0 and is not listed.
type Period struct {
	Index uint32        `json:"index"`
	Start time.Duration `json:"start"`
}

// End is the media time just after the segment.
func (r SegmentRef) End() uint64 { return r.Start + r.Duration }

// Chunk is one CMAF chunk: a moof and its mdat (a segment's first chunk may carry a
// leading styp). Chunks are immutable once published and shared by every reader.
type Chunk struct {
	Data     []byte // the bytes on the wire
	Start    uint64 // baseMediaDecodeTime (tfdt), track timescale
	Duration uint64 // sum of sample durations, track timescale
	Keyframe bool   // the first sample is a sync sample (a SAP, where a decoder can start)
	// Period, on a segment's first chunk, is the live period the segment starts in
	// (SegmentRef.Period); a segment is never in an earlier period than the one before.
	Period uint32
}

// Segment is an addressable unit made of one or more chunks. Video segments start
// with a keyframe.
type Segment struct {
	SegmentRef
	Chunks []*Chunk
}

// Len is the total byte length of the segment's chunks (SegmentRef.Size may be unset).
func (s *Segment) Len() int64 {
	var n int64
	for _, c := range s.Chunks {
		n += int64(len(c.Data))
	}
	return n
}

// Bytes returns the segment as one contiguous byte slice (a copy when it has several chunks).
func (s *Segment) Bytes() []byte {
	if len(s.Chunks) == 1 {
		return s.Chunks[0].Data
	}
	b := make([]byte, 0, s.Len())
	for _, c := range s.Chunks {
		b = append(b, c.Data...)
	}
	return b
}

// Stream describes an on-demand asset (finite) or a live channel (growing, windowed).
type Stream struct {
	Name            string        `json:"name"`
	Live            bool          `json:"live"`
	SegmentDuration time.Duration `json:"-"`      // nominal (target) segment duration
	Duration        time.Duration `json:"-"`      // assets: total presentation duration
	Tracks          []*Track      `json:"tracks"` // video rungs in ascending bandwidth, then audio
}

// Track returns the track with the given ID.
func (s *Stream) Track(id string) (*Track, error) {
	for _, t := range s.Tracks {
		if t.ID == id {
			return t, nil
		}
	}
	return nil, fmt.Errorf("stream %q has no track %q: %w", s.Name, id, ErrNotFound)
}

// TracksOf returns the tracks of one kind, in stream order.
func (s *Stream) TracksOf(k Kind) []*Track {
	var out []*Track
	for _, t := range s.Tracks {
		if t.Kind == k {
			out = append(out, t)
		}
	}
	return out
}
