// Package looplive turns a packaged on-demand asset into an endless live channel, the
// way DASH-IF livesim2 does: live segment n is asset segment n mod K of loop n div K,
// with its tfdt rewritten so media time never goes backwards across loops and media
// time 0 is the channel's availability start. The same n always yields the same bytes,
// so segments can be built on demand and the clock can be pinned in tests.
package looplive

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// Options tune the loop.
type Options struct {
	// ChunkDuration splits each segment into chunks of about this duration (one frame
	// at least) for push transports and low latency; 0 keeps one chunk per segment.
	ChunkDuration time.Duration
}

// Loop makes any live segment of an asset held in memory: segment n is asset segment
// n mod K of loop n div K, retimed.
type Loop struct {
	segDur time.Duration
	tracks map[string]*loopTrack
}

type loopTrack struct {
	track   *media.Track
	first   uint64      // start of the asset's first segment
	loopDur uint64      // the asset's duration in this track's timescale
	segs    []*template // the asset's segments, split into chunks
}

// template is one asset segment, already chunked, waiting for its tfdt.
type template struct {
	ref    media.SegmentRef
	chunks []media.Chunk
}

// New loads every segment of the asset into memory and checks that it loops cleanly.
func New(a *hub.Asset, opts Options) (*Loop, error) {
	info := a.Info()
	l := &Loop{segDur: info.SegmentDuration, tracks: map[string]*loopTrack{}}
	count := -1
	for _, t := range info.Tracks {
		if count >= 0 && len(t.Segments) != count {
			return nil, fmt.Errorf("asset %q: track %q has %d segments, others %d; re-package it so all tracks align: %w",
				info.Name, t.ID, len(t.Segments), count, media.ErrInvalidMedia)
		}
		count = len(t.Segments)
		lt := &loopTrack{track: t, first: t.Segments[0].Start}
		last := t.Segments[len(t.Segments)-1]
		lt.loopDur = last.End() - lt.first
		per := samplesPerChunk(t, opts.ChunkDuration)
		for _, ref := range t.Segments {
			seg, err := a.ReadSegment(t.ID, ref.Number)
			if err != nil {
				return nil, err
			}
			tm := &template{ref: ref}
			if per > 0 {
				tm.chunks, err = cmaf.Rechunk(seg.Bytes(), per)
				if err != nil {
					return nil, fmt.Errorf("asset %q track %q segment %d: %w", info.Name, t.ID, ref.Number, err)
				}
			} else {
				tm.chunks = []media.Chunk{{Data: seg.Bytes(), Start: ref.Start, Duration: ref.Duration, Keyframe: true}}
			}
			lt.segs = append(lt.segs, tm)
		}
		if t.Kind == media.Video {
			want := uint64(info.SegmentDuration) * uint64(t.Timescale) / uint64(time.Second)
			for _, ref := range t.Segments {
				if ref.Duration != want {
					return nil, fmt.Errorf("asset %q track %q: segment %d lasts %d ticks, want %d (a keyframe every %s); re-package it: %w",
						info.Name, t.ID, ref.Number, ref.Duration, want, info.SegmentDuration, media.ErrInvalidMedia)
				}
			}
		}
		l.tracks[t.ID] = lt
	}
	return l, nil
}

// samplesPerChunk converts a chunk duration to a sample count for Rechunk; 0 means
// one chunk per segment.
func samplesPerChunk(t *media.Track, d time.Duration) int {
	if d <= 0 {
		return 0
	}
	var perSecond float64
	switch t.Kind {
	case media.Video:
		perSecond = parseRate(t.FrameRate)
	case media.Audio:
		perSecond = float64(t.SampleRate) / 1024 // AAC frames
	}
	if perSecond <= 0 {
		return 0
	}
	return max(1, int(math.Round(d.Seconds()*perSecond)))
}

// parseRate reads "25" or "30000/1001".
func parseRate(s string) float64 {
	num, den, ok := strings.Cut(s, "/")
	n, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0
	}
	if !ok {
		return n
	}
	d, err := strconv.ParseFloat(den, 64)
	if err != nil || d == 0 {
		return 0
	}
	return n / d
}

// ChunkDuration is the longest chunk of any track's segments when they are cut into
// chunks, 0 when every segment is one chunk.
func (l *Loop) ChunkDuration() time.Duration {
	var d time.Duration
	chunked := false
	for _, lt := range l.tracks {
		for _, tm := range lt.segs {
			chunked = chunked || len(tm.chunks) > 1
			for _, ch := range tm.chunks {
				d = max(d, lt.track.Duration(ch.Duration))
			}
		}
	}
	if !chunked {
		return 0
	}
	return d
}

// Segment builds live segment n of a track.
func (l *Loop) Segment(trackID string, n uint64) (*media.Segment, error) {
	lt, ok := l.tracks[trackID]
	if !ok {
		return nil, fmt.Errorf("no track %q: %w", trackID, media.ErrNotFound)
	}
	k := uint64(len(lt.segs))
	loop, idx := n/k, n%k
	tm := lt.segs[idx]
	base := loop*lt.loopDur + (tm.ref.Start - lt.first)
	out := &media.Segment{SegmentRef: media.SegmentRef{Number: n, Start: base, Duration: tm.ref.Duration}}
	for i, ch := range tm.chunks {
		// mfhd sequence numbers only need to increase; they wrap after 2^32 chunks.
		seq := uint32(n*uint64(len(tm.chunks)) + uint64(i) + 1)
		start := base + (ch.Start - tm.ref.Start)
		data, err := cmaf.Retime(ch.Data, start, seq)
		if err != nil {
			return nil, fmt.Errorf("track %q segment %d: %w", trackID, n, err)
		}
		out.Chunks = append(out.Chunks, &media.Chunk{Data: data, Start: start, Duration: ch.Duration, Keyframe: ch.Keyframe})
	}
	out.SegmentRef.Size = out.Len()
	return out, nil
}
